#if canImport(Glibc)
import Glibc
#endif
internal import CSocket
import Logging
import PlayoutCore
import Synchronization

/// Drives any number of subscribers on a fixed set of threads — one viewer or thousands:
/// ``Subscriber/start()`` is the one-viewer case, a loop of its own. Each worker thread owns the
/// subscribers handed to it and waits on all their sockets at once (`epoll`, so a wake-up costs
/// what is ready, not the number of sockets; the last millisecond before a due instant slept
/// exactly), until the earliest instant one of them is due; then it
/// reads what arrived (batched, `recvmmsg`) and takes each due subscriber's turn — its decisions,
/// feedback and playout loops (``SubscriptionTurns``). The decodes run on a bounded pool of decode
/// threads, so a worker presents one track's frame on time while another track's decode is under
/// way; the decoded pictures are presented on the worker. One more thread calls the observers of
/// every subscriber (behind each one's bounded queue) as their updates arrive, and ends the runs
/// that finished, so no observer ever runs on a worker. The thread count is `workers + 1 +
/// decodeThreads`, whatever the number of subscribers.
///
/// ```swift
/// let loop = try SubscriptionEventLoop()                // one worker and one decoder per core
/// var options = Subscriber.Options(duration: .seconds(30))
/// options.decoding = false                             // timing exact, no decoder per viewer
/// let viewers = try sdps.map { try Subscriber(sessionDescription: $0, options: options) }
/// for viewer in viewers { try loop.start(viewer) }
/// let finals = viewers.map { $0.waitUntilEnded() }
/// loop.shutdown()
/// ```
///
/// A socket that fails is bound again when its subscription's decisions say (with backoff,
/// `connecting` meanwhile). A libavformat input (a file or a URL) is read on a thread of its own
/// — its reads block — which hands the frames over and has the worker take the subscription's
/// turn; it is reopened when the decisions say.
public final class SubscriptionEventLoop: @unchecked Sendable {
    /// What the loop's threads are named after (``init(workers:decodeThreads:named:)``).
    public let name: String
    private let workers: [Worker]
    private let observers: ObserverPump
    private let decodePool: DecodePool?
    private let placement = LockedValue(0)
    private let clock = MonotonicClock()

    /// The threads it runs: its workers, its decode threads and the observer thread.
    public var threadCount: Int { workers.count + (decodePool?.threadCount ?? 0) + 1 }

    /// How many of its threads still run (they end after ``shutdown()``, or with the subscriber of
    /// a ``Subscriber/start()``).
    package var threadsRunning: Int {
        workers.count(where: \.isRunning) + (decodePool?.threadsRunning ?? 0) + (observers.isRunning ? 1 : 0)
    }

    /// How late a turn may be taken after the instant it was due before it counts as a late
    /// poll: a worker that cannot keep up (its core busy) is seen here first.
    public static let latePollBound: Duration = .milliseconds(5)

    /// Turns taken more than ``latePollBound`` after they were due, since the start, over every
    /// worker: the loop, not the stream, made those frames late.
    public var latePolls: Int { workers.reduce(0) { $0 + $1.latePolls.load(ordering: .relaxed) } }

    /// Turns taken when due, since the start, over every worker (what ``latePolls`` is out of).
    public var duePolls: Int { workers.reduce(0) { $0 + $1.duePolls.load(ordering: .relaxed) } }

    /// One worker per core.
    public static var defaultWorkerCount: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }

    /// Starts `workers` worker threads (default: one per core), `decodeThreads` decode threads
    /// (default: one per core; 0: each subscriber's frames decode on its worker) and the observer
    /// thread. The threads end after ``shutdown()``. They are named after `name` (what `top -H`
    /// and `/proc/PID/task/*/comm` show, up to 15 bytes): `name-0`… for the workers, `name-d0`…
    /// for the decode threads, `name-obs` for the observer thread and `name-in` for a thread
    /// reading a file or URL source.
    ///
    /// - Throws: ``PlayoutError`` when a thread cannot start (those started are ended).
    public init(workers: Int = SubscriptionEventLoop.defaultWorkerCount, decodeThreads: Int = SubscriptionEventLoop.defaultWorkerCount, named name: String = "playout-loop") throws {
        self.name = name
        let decodePool = decodeThreads > 0 ? try DecodePool(threads: decodeThreads, named: "\(name)-d") : nil
        let observers = ObserverPump(name: "\(name)-obs")
        var started: [Worker] = []
        do {
            try observers.start()
            // The last worker to end ends the observer thread, which ends the decode pool once
            // it finished the runs handed to it.
            let remaining = LockedValue(max(1, workers))
            let ended: @Sendable () -> Void = {
                if remaining.withLock({ count in
                    count -= 1
                    return count == 0
                }) { observers.stop { decodePool?.shutdown() } }
            }
            for index in 0..<max(1, workers) {
                let worker = try Worker(name: "\(name)-\(index)", observers: observers, ended: ended)
                started.append(worker)
                try worker.start()
            }
        } catch {
            for worker in started { worker.close() }
            for worker in started { worker.waitUntilEnded() }
            observers.stop { decodePool?.shutdown() }
            observers.waitUntilEnded()
            throw error
        }
        self.workers = started
        self.observers = observers
        self.decodePool = decodePool
    }

    /// Opens `subscriber` (binding its sockets and opening its decoders, as ``Subscriber/start()``
    /// does) and hands it to the worker with the fewest subscribers; it plays from now until its
    /// duration, ``Subscriber/stop()`` or a failure, and ``Subscriber/waitUntilEnded()`` returns
    /// then, as after ``Subscriber/start()``.
    ///
    /// - Throws: ``PlayoutError`` when the subscriber is not on the real clock, it was started
    ///   before, or a port cannot be bound or a decoder opened.
    public func start(_ subscriber: Subscriber) throws {
        guard subscriber.options.clock is MonotonicClock else {
            throw PlayoutError(.invalidOption, "an event loop plays on the real clock (MonotonicClock); a subscriber on a ManualClock is driven by EmbeddedDriver (PlayoutTesting)")
        }
        let subscription = try subscriber.open(bindingSockets: true)
        let turns = SubscriptionTurns(subscriber: subscriber, subscription: subscription, now: clock.now)
        observers.add(subscription.delivery)
        let worker = placement.withLock { _ in workers.min { $0.load < $1.load }! }
        // Weakly: the subscription holds these closures, and the turns hold the subscription.
        let takeTurn: @Sendable (Bool) -> Void = { [weak worker, weak turns] deciding in
            if let turns { worker?.takeTurnSoon(turns, deciding: deciding) }
        }
        if let decodePool {
            for loop in subscription.loops { loop.decode(on: decodePool) { takeTurn(false) } }
        }
        subscription.onAttention { takeTurn(true) }
        worker.add(turns)
        if let input = subscriber.demuxedInput {
            // Its reads block: a thread of its own, which has the worker take the subscription's
            // turn as each frame arrives.
            do {
                try DemuxReader(input: input, subscription: subscription, clock: clock) { takeTurn(true) }.start(named: "\(name)-in")
            } catch {
                subscription.fail(reason: "\(error)")
                throw error
            }
        }
    }

    /// Stops every subscriber still playing, waits until each ended, then ends the threads.
    public func shutdown() {
        for worker in workers { worker.stopAll() }
        closeWhenIdle()
        observers.waitUntilEnded()
    }

    /// Ends the threads once the subscribers handed over so far ended, without waiting (the loop
    /// of one ``Subscriber/start()``, which ends with its subscriber).
    func closeWhenIdle() {
        for worker in workers { worker.close() }
    }
}

extension SubscriptionEventLoop {
    /// The slots whose wake (in nanoseconds) is at or before `now`, into `order`: the earliest
    /// wake first, ties in slot order. A worker takes its due turns in this order, so when it comes
    /// to them late (the machine held it up, a burst of packets came first), the frame due first is
    /// shown first: in slot order, a frame due later could go before one due earlier, which then
    /// came later still (earliest-deadline-first keeps the largest lateness of a sweep smallest).
    /// A slot that only reads ahead (`readingAhead[slot]`: ``SubscriptionTurns/readsAheadOnly``)
    /// counts as due ``readAheadSlack`` after its wake: the turns due meanwhile go first, so a
    /// frame is not held back by another subscription's next frame being released or decoded,
    /// and a read-ahead that waited that long goes before what fell due after it.
    static func dueOrder(_ wakes: [Int64], readingAhead: [Bool]? = nil, by now: Int64, into order: inout [Int]) {
        order.removeAll(keepingCapacity: true)
        for slot in wakes.indices where wakes[slot] <= now { order.append(slot) }
        guard order.count > 1 else { return }
        let slack = readAheadSlack.nanoseconds
        func due(_ slot: Int) -> Int64 { readingAhead?[slot] == true ? wakes[slot] &+ slack : wakes[slot] }
        order.sort { (due($0), $0) < (due($1), $1) }
    }

    /// How long a turn that only reads ahead gives way to the others due (``dueOrder(_:readingAhead:by:into:)``):
    /// a fraction of a frame interval, well within the 50 ms ahead of its render time at which a
    /// loop releases a frame, so the frame is still released, and decoded, in time.
    static let readAheadSlack: Duration = .milliseconds(10)
}

/// One worker thread of a ``SubscriptionEventLoop``.
private final class Worker: @unchecked Sendable {
    /// A subscriber the worker drives, with its sockets. A class: the receive path reads a
    /// member for every socket, and a copy of a struct would retain each of its references (the
    /// turns' through the slow path, since they are weakly referenced).
    private final class Member {
        let turns: SubscriptionTurns
        let sockets: [Subscription.IntakeSocket]
        /// Whether each of `sockets` is waited on (a socket that failed is not, until bound again).
        var waiting: [Bool]
        /// The subscription's ``Subscription/socketsGeneration`` when `sockets` was read.
        let generation: Int

        /// `turns` with its subscription's sockets as they are now, every one waited on.
        init(turns: SubscriptionTurns) {
            self.turns = turns
            sockets = turns.subscription.sockets
            waiting = sockets.map { _ in true }
            generation = turns.subscription.socketsGeneration
        }
    }
    private let name: String
    private let observers: ObserverPump
    /// Called on the thread as it ends.
    private let onEnd: @Sendable () -> Void
    private let clock = MonotonicClock()
    private let logger = Logger(label: "playout.event-loop")
    /// Wakes the thread from `epoll_wait` (a subscriber added, a shutdown): a pipe's two ends.
    private let wakeDescriptors: (read: Int32, write: Int32)
    /// What the thread waits on: the wake-up pipe and every member's sockets.
    private let epoll: Int32
    /// Turns to take at once, each with whether its decisions are wanted too.
    private let state = LockedValue<(incoming: [SubscriptionTurns], count: Int, stopping: Bool, stopAll: Bool, soon: [ObjectIdentifier: Bool])>(
        ([], 0, false, false, [:])
    )
    private let ended = ConditionLock()
    private var running = true  // ended
    /// Turns taken when due, and those taken over ``SubscriptionEventLoop/latePollBound`` late.
    let duePolls = Atomic(0)
    let latePolls = Atomic(0)

    init(name: String, observers: ObserverPump, ended: @escaping @Sendable () -> Void) throws {
        self.name = name
        self.observers = observers
        onEnd = ended
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else {
            throw PlayoutError(.invalidState, "the event loop's wake-up pipe could not be made: \(String(cString: strerror(errno)))")
        }
        for end in ends { _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK | O_CLOEXEC) }
        let epoll = playout_epoll_create()
        let added = epoll >= 0 ? playout_epoll_add(epoll, ends[0], Self.wakeToken) : epoll
        guard added == 0 else {
            if epoll >= 0 { Glibc.close(epoll) }
            for end in ends { Glibc.close(end) }
            throw PlayoutError(.invalidState, "the event loop's epoll instance could not be made: \(String(cString: strerror(-added)))")
        }
        wakeDescriptors = (ends[0], ends[1])
        self.epoll = epoll
    }

    deinit {
        Glibc.close(epoll)
        Glibc.close(wakeDescriptors.read)
        Glibc.close(wakeDescriptors.write)
    }

    /// The epoll token of the wake-up pipe; a socket's is its member's slot × 256 + its index.
    private static let wakeToken = UInt64.max
    /// The most events one `epoll_wait` returns (the rest come with the next).
    private static let eventCapacity = Int(PLAYOUT_EPOLL_MAX_EVENTS)
    /// How many sockets a worker reads, or turns it takes after reading them, at most, before it
    /// takes the turns due.
    private static let receivesBetweenDueTurns = 16

    /// How many subscribers it drives (to place the next one).
    var load: Int { state.withLock { $0.count } }

    func start() throws {
        try startThread(named: name) { [self] in
            run()
            ended.withLock {
                running = false
                ended.broadcast()
            }
            onEnd()
        }
    }

    func add(_ turns: SubscriptionTurns) {
        state.withLock {
            $0.incoming.append(turns)
            $0.count += 1
        }
        wake()
    }

    /// Has the worker take `turns`' turn at once (a frame arrived from outside its sockets, a
    /// decode completed), with its decisions when `deciding` (a stop, a delay change).
    func takeTurnSoon(_ turns: SubscriptionTurns, deciding: Bool = false) {
        let first = state.withLock { state in
            let first = state.soon.isEmpty
            state.soon[ObjectIdentifier(turns), default: false] = state.soon[ObjectIdentifier(turns)] == true || deciding
            return first
        }
        if first { wake() }
    }

    /// Asks every subscriber it drives to stop.
    func stopAll() {
        state.withLock { $0.stopAll = true }
        wake()
    }

    /// Ends the thread once its subscribers ended, without waiting.
    func close() {
        state.withLock { $0.stopping = true }
        wake()
    }

    /// Whether the thread still runs.
    var isRunning: Bool { ended.withLock { running } }

    /// Returns once the thread ended.
    func waitUntilEnded() {
        ended.withLock {
            while running { ended.wait(until: nil) }
        }
    }

    private func wake() {
        var one: UInt8 = 1
        _ = write(wakeDescriptors.write, &one, 1)  // a full pipe is awake already
    }

    /// Waits on the sockets of `member`, in `slot` (a member has at most 256 sockets).
    private func register(_ member: Member, slot: Int) {
        for (index, socket) in member.sockets.enumerated() {
            let added = playout_epoll_add(epoll, socket.receiver.fileDescriptor, UInt64(slot) << 8 | UInt64(index & 0xFF))
            if added != 0 { logger.error("the event loop cannot wait on \(socket.receiver.localAddress): \(String(cString: strerror(-added)))") }
        }
    }

    /// Waits on `socket` no more. Only for a socket still open (the member holds it): a closed
    /// one left the epoll set by itself, and its number may be another socket's by now.
    private func unregister(_ socket: Subscription.IntakeSocket) {
        _ = playout_epoll_remove(epoll, socket.receiver.fileDescriptor)
    }

    private func run() {
        observers.adoptCurrentThreadAsWorker()
        defer { observers.tellPosted() }
        // Each member keeps its slot until it ends, so the tokens of its sockets stay valid;
        // an ended member's slot is reused.
        var members: [Member?] = []
        /// Each slot's turns, unretained: `members` holds them for as long as the slot is theirs.
        /// They are weakly referenced (by their wake-up closures), so each retain would take the
        /// reference count's slow path, and a turn follows every socket read.
        var turnsAt: [Unmanaged<SubscriptionTurns>?] = []
        /// Each slot's next turn in nanoseconds (`.max`: none, or an empty slot), kept beside
        /// the members so a wake-up costs a scan of plain integers, not a question to every
        /// subscription.
        var wakes: [Int64] = []
        var readingAhead: [Bool] = []
        var freeSlots: [Int] = []
        var slots: [ObjectIdentifier: Int] = [:]
        var tokens = [UInt64](repeating: 0, count: Self.eventCapacity)
        var stopped = false
        var received: [Int] = []
        var due: [Int] = []
        func turn(_ slot: Int, now: MonotonicInstant, othersDue: Bool = false) -> Bool {
            guard let unretained = turnsAt[slot] else { return false }
            let (ended, wake, ahead, generation) = unretained._withUnsafeGuaranteedRef { turns in
                let ended = turns.turn(now: now, othersDue: othersDue)
                let next = turns.nextTurn
                return (ended, next.wake?.nanoseconds ?? .max, !ended && next.readsAheadOnly, turns.subscription.socketsGeneration)
            }
            wakes[slot] = wake
            readingAhead[slot] = ahead
            // A failed socket is bound again by the subscription's decisions, in a turn: then
            // wait on the new one (the old, closed, left the epoll set by itself once the
            // member let go of it). Only here, so a wake-up does not ask every member.
            if !ended, generation != members[slot]!.generation {
                let member = members[slot]!
                let turns = member.turns
                for (index, socket) in member.sockets.enumerated() where member.waiting[index] { unregister(socket) }
                members[slot] = Member(turns: turns)
                register(members[slot]!, slot: slot)
            }
            return ended
        }
        while true {
            let (incoming, stopping, stopAll, soon) = state.withLock { state in
                defer {
                    state.incoming.removeAll()
                    state.soon.removeAll()
                }
                return (state.incoming, state.stopping, state.stopAll, state.soon)
            }
            if stopAll, !stopped {
                stopped = true
                for member in members { member?.turns.subscriber.stop() }
            }
            for turns in incoming {
                if stopped { turns.subscriber.stop() }
                let member = Member(turns: turns)
                let slot: Int
                if let free = freeSlots.popLast() {
                    slot = free
                    members[slot] = member
                    turnsAt[slot] = Unmanaged.passUnretained(turns)
                    wakes[slot] = turns.nextWake?.nanoseconds ?? .max
                    readingAhead[slot] = false
                } else {
                    slot = members.count
                    members.append(member)
                    turnsAt.append(Unmanaged.passUnretained(turns))
                    wakes.append(turns.nextWake?.nanoseconds ?? .max)
                    readingAhead.append(false)
                }
                slots[ObjectIdentifier(turns)] = slot
                register(member, slot: slot)
            }
            for (identifier, deciding) in soon {
                guard let slot = slots[identifier] else { continue }
                if deciding { members[slot]!.turns.decideAtNextTurn() }
                wakes[slot] = 0
                readingAhead[slot] = false
            }
            // Take the turns that are due; hand the runs that ended to the observer thread.
            func takeDueTurns(now: MonotonicInstant) {
                let lateBefore = now.nanoseconds &- SubscriptionEventLoop.latePollBound.nanoseconds
                SubscriptionEventLoop.dueOrder(wakes, readingAhead: readingAhead, by: now.nanoseconds, into: &due)
                // Each presents what is due and, with others due after it, reads ahead in a turn
                // of its own after them: a frame's release and decode (a key frame's packets, for
                // every viewer of a stream at once) does not hold back another's presentation.
                // Those turns come later (by ``readAheadSlack``), and stop when a turn that is not
                // reading ahead fell due meanwhile, earlier than that: the rest stay due, for the
                // next sweep, after it.
                var urgent: Int64?
                for (position, slot) in due.enumerated() {
                    var instant = now
                    if readingAhead[slot] {
                        instant = clock.now
                        let earliest = urgent ?? wakes.indices.reduce(Int64.max) { readingAhead[$1] ? $0 : min($0, wakes[$1]) }
                        urgent = earliest
                        if earliest <= instant.nanoseconds, earliest < wakes[slot] &+ SubscriptionEventLoop.readAheadSlack.nanoseconds { return }
                    }
                    if wakes[slot] > 0 {
                        duePolls.add(1, ordering: .relaxed)
                        // Reading ahead has slack: never a late poll.
                        if wakes[slot] < lateBefore, !readingAhead[slot] { latePolls.add(1, ordering: .relaxed) }
                    }
                    defer { if let earliest = urgent, !readingAhead[slot] { urgent = min(earliest, wakes[slot]) } }
                    if turn(slot, now: instant, othersDue: position < due.count - 1) {
                        let member = members[slot]!
                        for (index, socket) in member.sockets.enumerated() where member.waiting[index] { unregister(socket) }
                        observers.finish(member.turns)
                        slots[ObjectIdentifier(member.turns)] = nil
                        turnsAt[slot] = nil
                        members[slot] = nil
                        wakes[slot] = .max
                        freeSlots.append(slot)
                        state.withLock { $0.count -= 1 }
                    }
                }
            }
            // Between every few sockets read, or turns taken after them: the turns that fell due
            // meanwhile, at the instant it returns.
            func takeTurnsDueMeanwhile() -> MonotonicInstant {
                let now = clock.now
                if wakes.contains(where: { $0 <= now.nanoseconds }) { takeDueTurns(now: now) }
                return now
            }
            let now = clock.now
            takeDueTurns(now: now)
            if slots.isEmpty, stopping { return }
            // Wait for packets until the earliest turn (at most 100 ms: a stop is noticed then).
            // epoll_wait counts whole milliseconds: the last one before a turn is slept exactly.
            let earliest = wakes.withUnsafeBufferPointer { wakes in
                var earliest = Int64.max
                for wake in wakes where wake < earliest { earliest = wake }
                return earliest
            }
            let wait = min(100_000_000, max(0, earliest == .max ? .max : earliest &- clock.now.nanoseconds))
            // The observer thread takes the core while this one waits, not in the middle of turns.
            observers.tellPosted()
            if earliest != .max, wait < 1_000_000 {
                sleepUntil(MonotonicInstant(nanoseconds: earliest))
                continue
            }
            let ready = playout_epoll_wait(epoll, &tokens, Int32(tokens.count), Int32(wait / 1_000_000))
            if ready < 0, ready != -EINTR {
                logger.error("the event loop's epoll_wait failed: \(String(cString: strerror(-ready)))")
                continue
            }
            guard ready > 0 else { continue }
            received.removeAll(keepingCapacity: true)
            for position in 0..<Int(ready) {
                // A batch of many subscriptions' packets (one frame sent to all of them at once)
                // does not hold back a frame due meanwhile: the due turns go between every
                // 16 sockets read, not after the whole batch.
                if position > 0, position % Self.receivesBetweenDueTurns == 0 { _ = takeTurnsDueMeanwhile() }
                let token = tokens[position]
                if token == Self.wakeToken {
                    var drained = [UInt8](repeating: 0, count: 64)
                    while read(wakeDescriptors.read, &drained, drained.count) > 0 {}
                    continue
                }
                let (slot, socketIndex) = (Int(token >> 8), Int(token & 0xFF))
                guard slot < members.count, let member = members[slot], socketIndex < member.sockets.count, member.waiting[socketIndex] else { continue }
                do {
                    try member.sockets[socketIndex].receive()
                    if received.last != slot { received.append(slot) }
                } catch {
                    // The decisions say when to bind it again; not waited on meanwhile.
                    let entry = member.sockets[socketIndex]
                    unregister(entry)
                    member.waiting[socketIndex] = false
                    if let source = entry.source {
                        member.turns.subscription.sourceFailed(source, error: error)
                    } else {
                        member.turns.subscription.fail(reason: "receiving on \(entry.receiver.localAddress) failed: \(error)")
                    }
                    wakes[slot] = now.nanoseconds
                    readingAhead[slot] = false
                }
            }
            // What arrived may be due now (a frame completed, a gap to ask for); an end is
            // handed over at the top of the loop. A key frame reaching every subscription at once
            // makes these turns a sweep of their own: the due turns go between every 16 of them
            // too, each group at an instant read after the due turns before it.
            var arrived = clock.now
            for (position, slot) in received.enumerated() {
                if position > 0, position % Self.receivesBetweenDueTurns == 0 { arrived = takeTurnsDueMeanwhile() }
                if turn(slot, now: arrived) { wakes[slot] = arrived.nanoseconds }
            }
        }
    }
}

/// The observer thread of a ``SubscriptionEventLoop``: delivers each subscriber's queued updates
/// (state, QoS samples, delay changes) as they are posted, and ends the runs whose decisions said
/// the end — draining their playout loops, publishing the final sample — so observers and the
/// end's work never run on a worker.
///
/// A post from one of the loop's workers does not wake the thread at once: the worker tells it
/// when it next waits (``tellPosted()``, before each `epoll_wait` or sleep), so the observer
/// thread takes the core a worker gives up instead of preempting it in the middle of its turns,
/// once per pass instead of once per post. A post from any other thread wakes it at once. Each
/// wake delivers only the subscriptions that posted.
private final class ObserverPump: @unchecked Sendable {
    private let name: String
    private let condition = ConditionLock()
    /// The deliveries with an update queued since the thread last looked, each once.
    private var ready: [ObjectIdentifier: ObserverDelivery] = [:]  // condition
    private var finishing: [SubscriptionTurns] = []  // condition
    private var stopping: (@Sendable () -> Void)?  // condition: what to do last, once stopping
    private var running = false  // condition
    /// A worker posted since the thread was last woken: the worker wakes it when it next waits.
    private let untold = Atomic(false)
    /// Marks the threads of the workers of this pump (their posts are told when they wait).
    private static let workerKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    init(name: String) {
        self.name = name
    }

    func start() throws {
        condition.withLock { running = true }
        do {
            try startThread(named: name) { [self] in run() }
        } catch {
            condition.withLock { running = false }
            throw error
        }
    }

    /// Delivers `delivery`'s updates from now on, as they are posted.
    func add(_ delivery: ObserverDelivery) {
        // Weakly: the delivery holds this closure.
        delivery.notifyPosted { [weak self, weak delivery] in
            if let self, let delivery { self.posted(delivery) }
        }
        posted(delivery)
    }

    /// Marks the calling thread as one of this pump's workers (``tellPosted()`` is then up to it).
    func adoptCurrentThreadAsWorker() {
        pthread_setspecific(Self.workerKey, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Wakes the thread for the posts of the calling worker made since it was last woken (a
    /// worker calls this before it waits, and as it ends).
    func tellPosted() {
        guard untold.load(ordering: .relaxed), untold.exchange(false, ordering: .acquiringAndReleasing) else { return }
        condition.withLock { condition.broadcast() }
    }

    private func posted(_ delivery: ObserverDelivery) {
        let worker: UnsafeMutableRawPointer? = pthread_getspecific(Self.workerKey)
        let deferred = worker == Unmanaged.passUnretained(self).toOpaque()
        condition.withLock {
            ready[ObjectIdentifier(delivery)] = delivery
            if !deferred { condition.broadcast() }
        }
        if deferred { untold.store(true, ordering: .releasing) }
    }

    /// `turns` ended: finish it on this thread.
    func finish(_ turns: SubscriptionTurns) {
        condition.withLock {
            finishing.append(turns)
            condition.broadcast()
        }
    }

    /// Ends the thread once the runs handed to ``finish(_:)`` are finished; `last` runs on it
    /// before it ends. The first call counts.
    func stop(then last: @escaping @Sendable () -> Void) {
        condition.withLock {
            guard running, stopping == nil else { return }
            stopping = last
            condition.broadcast()
        }
    }

    /// Whether the thread still runs.
    var isRunning: Bool { condition.withLock { running } }

    /// Returns once the thread ended.
    func waitUntilEnded() {
        condition.withLock {
            while running { condition.wait(until: nil) }
        }
    }

    private func run() {
        while true {
            let (ready, finishing, last) = condition.withLock {
                while self.ready.isEmpty, self.finishing.isEmpty, stopping == nil { condition.wait(until: nil) }
                defer {
                    self.ready.removeAll()
                    self.finishing.removeAll()
                }
                return (self.ready, self.finishing, stopping)
            }
            for delivery in ready.values { delivery.deliverPending() }
            for turns in finishing { turns.finish() }
            if let last {
                last()
                condition.withLock {
                    running = false
                    condition.broadcast()
                }
                return
            }
        }
    }
}
