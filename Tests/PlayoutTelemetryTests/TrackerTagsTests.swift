import PlayoutCore
import PlayoutTelemetry
import PlayoutTesting
import Testing

@Suite("Tracker tags: each tracker's records carry its own tags after the instrument's")
struct TrackerTagsTests {
    /// An embedded instrument on a manual clock, tagging its records `run=r1`, into memory.
    static func embeddedInstrument() throws -> (ManualClock, InMemoryTelemetryBackend, TelemetryInstrument) {
        let clock = ManualClock()
        let memory = InMemoryTelemetryBackend()
        let instrument = try TelemetryInstrument(
            backends: [memory], configuration: .init(delivery: .init(linger: .zero), tags: [TelemetryField("run", .string("r1"))]),
            clock: clock, driver: .embedded)
        return (clock, memory, instrument)
    }

    @Test("Two trackers in one instrument (two viewers of a swarm): each record tagged run, then its own viewer")
    func perTracker() throws {
        let (clock, memory, instrument) = try Self.embeddedInstrument()
        let first = instrument.makeTracker(name: "viewer 0", tags: [TelemetryField("viewer", .int(0))])
        let second = instrument.makeTracker(name: "viewer 1", tags: [TelemetryField("viewer", .int(1)), TelemetryField("shard", .int(2))])
        let plain = instrument.makeTracker(name: "untagged")
        for tracker in [first, second, plain] { tracker.ready() }
        clock.advance(by: .milliseconds(10))
        for tracker in [first, second, plain] { tracker.emit(.play) }
        #expect(instrument.flush())
        let records = memory.records
        #expect(records.count == 6)
        let tags = Set(records.map { $0.tags.map { "\($0.name)=\($0.value)" }.joined(separator: ",") })
        #expect(tags == ["run=r1,viewer=0", "run=r1,viewer=1,shard=2", "run=r1"])
        // Each session's records carry one tracker's tags.
        for session in Set(records.map(\.sessionId)) {
            #expect(Set(records.filter { $0.sessionId == session }.map(\.tags)).count == 1)
        }
    }

    /// A swarm makes its last viewers' trackers while the engine steps (on another thread): a
    /// tracker made after the step looked its trackers up, whose first event the same step takes,
    /// once had its session made without its tags — none of its records carried `viewer`.
    @Test("A tracker made during a step (its first event taken by that step) still has its tags on every record")
    func trackerMadeDuringStep() throws {
        let (clock, memory, instrument) = try Self.embeddedInstrument()
        let first = instrument.makeTracker(name: "viewer 0", tags: [TelemetryField("viewer", .int(0))])
        // The first tracker's attribute getter runs inside the step: there the next viewer joins.
        let late = LockedValue<TelemetryTracker?>(nil)
        first.addAttribute("joined") {
            late.withLock { late in
                if late == nil {
                    late = instrument.makeTracker(name: "viewer 1", tags: [TelemetryField("viewer", .int(1))])
                    late!.ready()
                }
            }
            return .bool(true)
        }
        first.ready()
        #expect(instrument.flush())
        clock.advance(by: .milliseconds(10))
        late.withLock { $0?.emit(.play) }
        #expect(instrument.flush())
        let lateRecords = memory.records.filter { $0.sessionId != memory.records.first?.sessionId }
        #expect(lateRecords.count == 2)
        for record in lateRecords {
            #expect(record.tags.map { "\($0.name)=\($0.value)" } == ["run=r1", "viewer=1"], "\(record.name)")
        }
    }
}
