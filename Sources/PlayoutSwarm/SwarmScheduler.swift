#if canImport(Glibc)
import Glibc
#endif
import Playout
public import PlayoutCore

/// Which viewers of a swarm decode their frames.
public enum SwarmDecode: Equatable, Sendable, CustomStringConvertible {
    /// Every viewer decodes (a decoder each: the most a machine pays per viewer).
    case all
    /// One viewer in `k` decodes (viewers 0, k, 2k … of the whole run); the others render on time
    /// without decoding, their decode statistics unknown.
    case sample(Int)
    /// No viewer decodes: every timing statistic stays exact, the decode statistics are unknown.
    case none

    /// `all`, `none` or `sample:K` (K ≥ 1).
    ///
    /// - Throws: ``PlayoutError`` naming the text and the accepted forms.
    public init(parsing text: String) throws(PlayoutError) {
        switch text {
        case "all": self = .all
        case "none": self = .none
        default:
            guard text.hasPrefix("sample:"), let k = Int(text.dropFirst("sample:".count)), k >= 1 else {
                throw PlayoutError(.invalidOption, "--decode \(text): all, none or sample:K (one viewer in K decodes, K ≥ 1), e.g. sample:20")
            }
            self = k == 1 ? .all : .sample(k)
        }
    }

    /// Whether viewer `viewer` (its number in the whole run) decodes.
    public func decodes(viewer: Int) -> Bool {
        switch self {
        case .all: true
        case .none: false
        case .sample(let k): viewer % k == 0
        }
    }

    public var description: String {
        switch self {
        case .all: "all"
        case .none: "none"
        case .sample(let k): "sample:\(k)"
        }
    }
}

/// When a swarm's viewers join and leave: its plan, as a sans-IO state machine. It takes the time
/// and returns what to do — start a viewer's session, end one (churn), end the run — and the
/// next instant it has something to say; ``Swarm`` carries the actions out.
///
/// - Ramp: the shard's viewers join in order, `ramp` a second (nil: all at once).
/// - Churn: with a mean lifetime, each session lasts a lifetime drawn from an exponential
///   distribution with that mean (seeded: the same plan on every run); when it ends the viewer
///   leaves and rejoins at once as a new session, so the audience stays the same size while its
///   members change — as viewers zapping in and out do.
/// - Duration: at its end every session ends.
///
/// ```swift
/// var scheduler = SwarmScheduler(viewers: 0..<100, ramp: 20, churn: .seconds(30), duration: .seconds(60), seed: 1, start: now)
/// for action in scheduler.advance(now: now) { … }
/// let next = scheduler.nextDeadline
/// ```
public struct SwarmScheduler: Sendable {
    /// What to do now.
    public enum Action: Equatable, Sendable {
        /// Start `viewer`'s session number `session` (0 first, then one more per rejoin).
        case start(viewer: Int, session: Int)
        /// End `viewer`'s session `session`: its lifetime is over (churn); a ``start(viewer:session:)``
        /// of the next session follows.
        case leave(viewer: Int, session: Int)
        /// The run's duration is over: end every session.
        case end
    }

    /// The shard's viewers, by their number in the whole run.
    public let viewers: Range<Int>
    /// Viewers joining per second (nil: all at once).
    public let ramp: Double?
    /// The mean lifetime of a session (nil: no churn).
    public let churn: Duration?
    /// How long the run lasts (nil: until stopped).
    public let duration: Duration?
    private let start: MonotonicInstant
    private var random: SeededRandomNumberGenerator
    /// The next viewer of the ramp (its offset in `viewers`).
    private var nextJoin = 0
    /// Each session's end by churn, by viewer: (session, end).
    private var lifetimes: [Int: (session: Int, end: MonotonicInstant)] = [:]
    private var ended = false

    /// A plan starting at `start`.
    public init(viewers: Range<Int>, ramp: Double?, churn: Duration?, duration: Duration?, seed: UInt64, start: MonotonicInstant) {
        self.viewers = viewers
        self.ramp = ramp.flatMap { $0 > 0 && $0.isFinite ? $0 : nil }
        self.churn = churn.flatMap { $0 > .zero ? $0 : nil }
        self.duration = duration
        self.start = start
        random = SeededRandomNumberGenerator(seed: seed)
    }

    /// Whether the run ended (``Action/end`` returned).
    public var isEnded: Bool { ended }

    /// How many viewers joined so far (the ramp's progress).
    public var joined: Int { nextJoin }

    /// The actions due at `now`, in time order.
    public mutating func advance(now: MonotonicInstant) -> [Action] {
        guard !ended else { return [] }
        if let duration, start.duration(to: now) >= duration {
            ended = true
            return [.end]
        }
        var actions: [Action] = []
        // Sessions whose lifetime is over, earliest first; each rejoins at once.
        let over = lifetimes.filter { $0.value.end <= now }.sorted { ($0.value.end, $0.key) < ($1.value.end, $1.key) }
        for (viewer, lifetime) in over {
            actions.append(.leave(viewer: viewer, session: lifetime.session))
            actions.append(.start(viewer: viewer, session: lifetime.session + 1))
            beginLifetime(of: viewer, session: lifetime.session + 1, at: lifetime.end)
        }
        while nextJoin < viewers.count, joinInstant(nextJoin) <= now {
            let viewer = viewers.lowerBound + nextJoin
            actions.append(.start(viewer: viewer, session: 0))
            beginLifetime(of: viewer, session: 0, at: joinInstant(nextJoin))
            nextJoin += 1
        }
        return actions
    }

    /// The next instant ``advance(now:)`` has an action (nil: none until stopped).
    public var nextDeadline: MonotonicInstant? {
        guard !ended else { return nil }
        var next = duration.map { start.advanced(by: $0) }
        func consider(_ instant: MonotonicInstant) { next = min(next ?? instant, instant) }
        if nextJoin < viewers.count { consider(joinInstant(nextJoin)) }
        for lifetime in lifetimes.values { consider(lifetime.end) }
        return next
    }

    private func joinInstant(_ offset: Int) -> MonotonicInstant {
        guard let ramp else { return start }
        return start.advanced(by: .nanoseconds(Int64((Double(offset) / ramp * 1e9).rounded())))
    }

    private mutating func beginLifetime(of viewer: Int, session: Int, at instant: MonotonicInstant) {
        guard let churn else { return }
        // Exponential with mean `churn`: −mean·ln(U), U in (0, 1]; at least 1 ms.
        let bits: UInt64 = random.next() >> 11 + 1
        let uniform = Double(bits) / 9_007_199_254_740_992  // 2^53
        let lifetime = max(1e-3, -churn.seconds * log(uniform))
        lifetimes[viewer] = (session, instant.advanced(by: .nanoseconds(Int64(lifetime * 1e9))))
    }
}
