import PlayoutCore
@testable import PlayoutTelemetry
import Testing

@Suite("Telemetry delivery state machine: batching, retry with jittered backoff, drop-oldest")
struct TelemetryDeliveryStateMachineTests {
    static func record(_ seq: UInt64) -> TelemetryRecord {
        TelemetryRecord(sessionId: "s", seq: seq, monotonic: .zero, wallTimeNanoseconds: 0, kind: .event, name: "play")
    }

    static func at(_ milliseconds: Int64) -> MonotonicInstant { .zero.advanced(by: .milliseconds(milliseconds)) }

    @Test("a record lingers for a fuller batch, then goes; a full batch goes at once")
    func batching() {
        var machine = TelemetryDeliveryStateMachine(configuration: .init(maximumBatchSize: 3, linger: .milliseconds(200)), seed: 1)
        #expect(machine.nextAction(now: Self.at(0)) == .idle)
        machine.enqueue(Self.record(0), now: Self.at(0))
        #expect(machine.nextAction(now: Self.at(100)) == .wait(until: Self.at(200)))
        #expect(machine.nextAction(now: Self.at(200)) == .deliver([Self.record(0)]))
        #expect(machine.nextAction(now: Self.at(200)) == .idle)  // one batch in flight at a time
        machine.deliverySucceeded(now: Self.at(210))
        for seq in 1...4 { machine.enqueue(Self.record(UInt64(seq)), now: Self.at(300)) }
        #expect(machine.nextAction(now: Self.at(300)) == .deliver(TelemetryBatch([1, 2, 3].map { Self.record($0) })))
        machine.deliverySucceeded(now: Self.at(301))
        #expect(machine.nextAction(now: Self.at(301)) == .wait(until: Self.at(500)))
        #expect(machine.statistics.delivered == 4)
        #expect(machine.statistics.batchesDelivered == 2)
        #expect(machine.statistics.lastSuccessfulFlush == Self.at(301))
        #expect(machine.depth == 1)
    }

    @Test("draining: a backend that never delivered anything is given up at its first failure (an unreachable server does not hold the exit)")
    func unreachableWhileDraining() {
        var dead = TelemetryDeliveryStateMachine(configuration: .init(maximumBatchSize: 2, linger: .zero), seed: 1)
        for seq in 0..<5 { dead.enqueue(Self.record(UInt64(seq)), now: Self.at(0)) }
        dead.drain()
        guard case .deliver = dead.nextAction(now: Self.at(0)) else { Issue.record("no batch"); return }
        dead.deliveryFailed(TelemetryDeliveryError("connection refused", retryable: true), now: Self.at(1))
        #expect(dead.isEmpty && dead.nextAction(now: Self.at(1)) == .idle)
        #expect(dead.statistics.drops == [.shutdown: 5] && dead.statistics.lastError == "connection refused")
    }

    /// A machine that delivered `delivered` records during the run, then holds `held` more and
    /// is draining.
    static func drainingAfterDelivering(_ delivered: Int, held: Int) -> TelemetryDeliveryStateMachine {
        var machine = TelemetryDeliveryStateMachine(configuration: .init(maximumBatchSize: 2, linger: .zero, maximumAttempts: 1_000), seed: 1)
        for seq in 0..<delivered {
            machine.enqueue(Self.record(UInt64(seq)), now: Self.at(0))
            _ = machine.nextAction(now: Self.at(0))
            machine.deliverySucceeded(now: Self.at(0))
        }
        for seq in delivered..<(delivered + held) { machine.enqueue(Self.record(UInt64(seq)), now: Self.at(1)) }
        machine.drain()
        return machine
    }

    @Test("draining (issue 26): a backend that delivered before and then went away gets one retry at once, and a second failure gives it up — not retries until the deadline")
    func wentAwayWhileDraining() {
        var machine = Self.drainingAfterDelivering(3, held: 5)
        let failure = TelemetryDeliveryError("connection refused", retryable: true)
        guard case .deliver = machine.nextAction(now: Self.at(2)) else { Issue.record("no batch"); return }
        machine.deliveryFailed(failure, now: Self.at(2))
        // The retry is due now (no backoff while draining), on the same instant of the clock.
        guard case .deliver(let retry) = machine.nextAction(now: Self.at(2)) else { Issue.record("not retried at once"); return }
        #expect(retry.map(\.seq) == [3, 4])
        machine.deliveryFailed(failure, now: Self.at(2))
        #expect(machine.isEmpty && machine.nextAction(now: Self.at(2)) == .idle)
        #expect(machine.statistics.delivered == 3 && machine.statistics.drops == [.shutdown: 5])
        #expect(machine.statistics.failedAttempts == 2)
    }

    @Test("draining: a failure between two deliveries is retried and the drain goes on — a backend making progress keeps what it holds")
    func slowButAliveWhileDraining() {
        var machine = Self.drainingAfterDelivering(1, held: 4)
        guard case .deliver = machine.nextAction(now: Self.at(2)) else { Issue.record("no batch"); return }
        machine.deliveryFailed(TelemetryDeliveryError("HTTP 503 from test", retryable: true), now: Self.at(2))
        guard case .deliver = machine.nextAction(now: Self.at(2)) else { Issue.record("not retried"); return }
        machine.deliverySucceeded(now: Self.at(3))
        guard case .deliver = machine.nextAction(now: Self.at(3)) else { Issue.record("no second batch"); return }
        machine.deliveryFailed(TelemetryDeliveryError("HTTP 503 from test", retryable: true), now: Self.at(3))
        guard case .deliver = machine.nextAction(now: Self.at(3)) else { Issue.record("a failure after progress is not retried"); return }
        machine.deliverySucceeded(now: Self.at(4))
        #expect(machine.isEmpty && machine.statistics.delivered == 5 && machine.statistics.drops.isEmpty)
    }

    @Test("draining cuts a retry's backoff short: the batch that failed during the run goes at once, not when its backoff ends")
    func drainCutsBackoff() {
        var machine = TelemetryDeliveryStateMachine(configuration: .init(linger: .zero, initialBackoff: .seconds(8), maximumBackoff: .seconds(8), jitter: 0), seed: 1)
        machine.enqueue(Self.record(0), now: Self.at(0))
        _ = machine.nextAction(now: Self.at(0))
        machine.deliverySucceeded(now: Self.at(0))
        machine.enqueue(Self.record(1), now: Self.at(1))
        _ = machine.nextAction(now: Self.at(1))
        machine.deliveryFailed(TelemetryDeliveryError("timed out", retryable: true), now: Self.at(2))
        #expect(machine.nextAction(now: Self.at(3)) == .wait(until: Self.at(8_002)))
        machine.drain()
        #expect(machine.nextAction(now: Self.at(3)) == .deliver([Self.record(1)]))
    }

    @Test("at shutdown a backend with nothing outstanding is done at once")
    func nothingOutstanding() {
        var machine = Self.drainingAfterDelivering(4, held: 0)
        #expect(machine.isEmpty && machine.nextAction(now: Self.at(2)) == .idle)
    }

    @Test("a full queue drops its oldest record and counts it")
    func dropOldest() {
        var machine = TelemetryDeliveryStateMachine(configuration: .init(capacity: 3, maximumBatchSize: 10, linger: .zero), seed: 1)
        for seq in 0..<5 { machine.enqueue(Self.record(UInt64(seq)), now: Self.at(0)) }
        #expect(machine.statistics.drops == [.queueFull: 2])
        #expect(machine.depth == 3)
        #expect(machine.nextAction(now: Self.at(0)) == .deliver(TelemetryBatch([2, 3, 4].map { Self.record($0) })))
    }

    @Test("the engine's arrays pass through uncopied: a batch of one whole array is that array; batches cut across arrays in order")
    func arraysKept() {
        var machine = TelemetryDeliveryStateMachine(configuration: .init(capacity: 100, maximumBatchSize: 4, linger: .zero), seed: 1)
        let whole = (0..<4).map { Self.record(UInt64($0)) }
        machine.enqueue(whole, now: Self.at(0))
        guard case .deliver(let batch) = machine.nextAction(now: Self.at(0)) else { Issue.record("no batch"); return }
        let storage = { (records: [TelemetryRecord]) in records.withUnsafeBufferPointer { $0.baseAddress } }
        #expect(storage(batch.records) == storage(whole), "the engine's array itself, not a copy")
        machine.deliverySucceeded(now: Self.at(1))
        // 3 + 3 records in two arrays, batches of 4: [4 5 6 7] across both, then [8 9].
        machine.enqueue((4..<7).map { Self.record(UInt64($0)) }, now: Self.at(2))
        machine.enqueue((7..<10).map { Self.record(UInt64($0)) }, now: Self.at(2))
        #expect(machine.depth == 6)
        #expect(machine.nextAction(now: Self.at(2)) == .deliver(TelemetryBatch((4..<8).map { Self.record(UInt64($0)) })))
        machine.deliverySucceeded(now: Self.at(3))
        guard case .deliver(let rest) = machine.nextAction(now: Self.at(3)) else { Issue.record("no second batch"); return }
        #expect(rest.map(\.seq) == [8, 9] && rest.count == 2)
        machine.deliverySucceeded(now: Self.at(4))
        #expect(machine.statistics.delivered == 10 && machine.isEmpty)
    }

    @Test("drop-oldest across arrays: a full queue drops the oldest records of the oldest arrays; an array larger than the queue keeps its newest")
    func dropOldestArrays() {
        var machine = TelemetryDeliveryStateMachine(configuration: .init(capacity: 5, maximumBatchSize: 10, linger: .zero), seed: 1)
        #expect(machine.enqueue((0..<3).map { Self.record(UInt64($0)) }, now: Self.at(0)) == 0)
        #expect(machine.enqueue((3..<7).map { Self.record(UInt64($0)) }, now: Self.at(0)) == 2)
        #expect(machine.depth == 5 && machine.statistics.drops == [.queueFull: 2])
        #expect(machine.nextAction(now: Self.at(0)) == .deliver(TelemetryBatch((2..<7).map { Self.record(UInt64($0)) })))
        machine.deliverySucceeded(now: Self.at(1))
        #expect(machine.enqueue((0..<12).map { Self.record(UInt64($0)) }, now: Self.at(2)) == 7)
        #expect(machine.nextAction(now: Self.at(2)) == .deliver(TelemetryBatch((7..<12).map { Self.record(UInt64($0)) })))
        #expect(machine.statistics.drops == [.queueFull: 9])
        // Every record handed in is delivered or counted dropped.
        machine.deliverySucceeded(now: Self.at(3))
        #expect(machine.statistics.delivered + machine.statistics.dropped == 19)
    }

    @Test("a retryable failure is retried after a jittered, doubling backoff, the same for the same seed")
    func backoff() {
        func delays(seed: UInt64) -> [Duration] {
            var machine = TelemetryDeliveryStateMachine(
                configuration: .init(linger: .zero, initialBackoff: .milliseconds(100), maximumBackoff: .seconds(1), jitter: 0.5, maximumAttempts: 6),
                seed: seed)
            machine.enqueue(Self.record(0), now: Self.at(0))
            var now = Self.at(0)
            var result: [Duration] = []
            for _ in 0..<5 {
                guard case .deliver = machine.nextAction(now: now) else { break }
                machine.deliveryFailed(TelemetryDeliveryError("HTTP 500", retryable: true), now: now)
                guard case .wait(let until) = machine.nextAction(now: now) else { break }
                result.append(now.duration(to: until))
                now = until
            }
            return result
        }
        let first = delays(seed: 7)
        #expect(first == delays(seed: 7))
        #expect(first != delays(seed: 8))
        #expect(first.count == 5)
        for (attempt, delay) in first.enumerated() {
            let base = min(Duration.milliseconds(100 << attempt), .seconds(1))
            #expect(delay >= base / 2 && delay <= base, "retry \(attempt + 1) waited \(delay), outside [\(base / 2), \(base)]")
        }
    }

    @Test("the batch is dropped and counted when attempts run out, or at once when the backend refuses it for good")
    func giveUp() {
        var machine = TelemetryDeliveryStateMachine(configuration: .init(linger: .zero, initialBackoff: .zero, maximumAttempts: 2), seed: 1)
        machine.enqueue(Self.record(0), now: Self.at(0))
        _ = machine.nextAction(now: Self.at(0))
        machine.deliveryFailed(TelemetryDeliveryError("timeout", retryable: true), now: Self.at(0))
        #expect(machine.nextAction(now: Self.at(0)) == .deliver([Self.record(0)]))
        machine.deliveryFailed(TelemetryDeliveryError("timeout", retryable: true), now: Self.at(0))
        #expect(machine.statistics.drops == [.retriesExhausted: 1])
        machine.enqueue(Self.record(1), now: Self.at(0))
        machine.enqueue(Self.record(2), now: Self.at(0))
        _ = machine.nextAction(now: Self.at(0))
        machine.deliveryFailed(TelemetryDeliveryError("HTTP 400", retryable: false), now: Self.at(0))
        #expect(machine.statistics.drops == [.retriesExhausted: 1, .rejected: 2])
        #expect(machine.statistics.failedAttempts == 3)
        #expect(machine.statistics.lastError == "HTTP 400")
        #expect(machine.isEmpty)
    }

    @Test("draining sends without lingering; abandoning counts what is left as undelivered at shutdown")
    func drainAndAbandon() {
        var machine = TelemetryDeliveryStateMachine(configuration: .init(maximumBatchSize: 2, linger: .seconds(1)), seed: 1)
        for seq in 0..<3 { machine.enqueue(Self.record(UInt64(seq)), now: Self.at(0)) }
        #expect(machine.nextAction(now: Self.at(0)) == .deliver([Self.record(0), Self.record(1)]))
        machine.deliveryFailed(TelemetryDeliveryError("refused", retryable: true), now: Self.at(0))
        machine.drain()
        #expect(machine.abandon() == 3)
        #expect(machine.statistics.drops == [.shutdown: 3])
        machine.enqueue(Self.record(3), now: Self.at(0))
        #expect(machine.nextAction(now: Self.at(0)) == .deliver([Self.record(3)]))
    }

    @Test("a flush sends what is queued without waiting for the linger")
    func flush() {
        var machine = TelemetryDeliveryStateMachine(configuration: .init(linger: .seconds(1)), seed: 1)
        machine.enqueue(Self.record(0), now: Self.at(0))
        machine.flushQueued()
        #expect(machine.nextAction(now: Self.at(0)) == .deliver([Self.record(0)]))
        machine.deliverySucceeded(now: Self.at(0))
        machine.enqueue(Self.record(1), now: Self.at(0))
        #expect(machine.nextAction(now: Self.at(0)) == .wait(until: Self.at(1000)))
    }

    @Test("hostile settings are clamped, not trusted", arguments: [(-5, -1, Double.nan), (0, 0, -3), (1, 1, 7)])
    func clamped(capacity: Int, batch: Int, jitter: Double) {
        let configuration = TelemetryDeliveryConfiguration(capacity: capacity, maximumBatchSize: batch, jitter: jitter)
        #expect(configuration.capacity >= 1)
        #expect(configuration.maximumBatchSize >= 1)
        #expect((0...1).contains(configuration.jitter))
    }
}
