import Logging
import PlayoutCore

/// An SDK's debug trace through swift-log, in the line shape Adobe's heartbeat SDK writes:
/// `[LEVEL] [time][Class] #method > message`, e.g.
/// `[DEBUG] [2026-11-24T10:00:01.250Z][VideoPlayerPlugin] #trackPlay > play, playing`.
/// The time is UTC wall time with milliseconds (the wall clock read once, then the adapter's
/// monotonic clock); the line goes out at the swift-log level of `LEVEL`.
struct AdapterTrace: Sendable {
    enum Level: String, Sendable {
        case debug = "DEBUG"
        case info = "INFO"
        case warn = "WARN"
        case error = "ERROR"

        var logLevel: Logger.Level {
            switch self {
            case .debug: .debug
            case .info: .info
            case .warn: .warning
            case .error: .error
            }
        }
    }

    let logger: Logger
    let enabled: Bool
    let clock: any PlayoutClock
    private let origin: MonotonicInstant
    private let wallOrigin: Int64

    init(logger: Logger, enabled: Bool, clock: any PlayoutClock, wallClockNanoseconds: Int64?) {
        self.logger = logger
        self.enabled = enabled
        self.clock = clock
        origin = clock.now
        wallOrigin = wallClockNanoseconds ?? clock.wallClockNanoseconds
    }

    /// Writes one trace line when enabled.
    func log(_ level: Level, _ component: String, _ method: String, _ message: @autoclosure () -> String) {
        guard enabled else { return }
        let wall = wallOrigin &+ origin.duration(to: clock.now).nanoseconds
        logger.log(level: level.logLevel, "\(Self.line(level, wall: wall, component, method, message()))")
    }

    /// The line for the given parts (`wall`: ns since 1970).
    static func line(_ level: Level, wall: Int64, _ component: String, _ method: String, _ message: String) -> String {
        "[\(level.rawValue)] [\(iso8601(wall))][\(component)] #\(method) > \(message)"
    }

    /// `2026-11-24T10:00:01.250Z` for `nanoseconds` since 1970 (UTC, proleptic Gregorian).
    static func iso8601(_ nanoseconds: Int64) -> String {
        let milliseconds = nanoseconds.floorDivided(by: 1_000_000)
        let seconds = milliseconds.floorDivided(by: 1_000)
        let days = seconds.floorDivided(by: 86_400)
        let secondOfDay = seconds - days * 86_400
        // Days to civil date (H. Hinnant's algorithm).
        let z = days + 719_468
        let era = z.floorDivided(by: 146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func pad(_ value: Int64, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(secondOfDay / 3_600, 2)):\(pad(secondOfDay % 3_600 / 60, 2)):"
            + "\(pad(secondOfDay % 60, 2)).\(pad(milliseconds - seconds * 1_000, 3))Z"
    }
}

extension Int64 {
    /// Division rounding towards negative infinity.
    fileprivate func floorDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
