public import Logging
import PlayoutCore
#if canImport(Glibc)
import Glibc
import SwiftOverlayShims
#elseif canImport(Darwin)
import Darwin
#endif

/// Keeps log lines for programmatic collection: the first lines since start and the most recent
/// ones, both bounded, as the Phenix SDK's `collectLogMessages` does.
///
/// A `LogCollector` is a source of swift-log handlers (``makeHandler(label:)``). It collects at
/// its own ``Configuration/level`` whatever the console shows, so logs can be collected at any
/// console level. Memory is bounded by ``Configuration/firstCount`` +
/// ``Configuration/recentCount`` entries; lines in between are counted, not kept.
///
/// ```swift
/// let collector = LogCollector()
/// LoggingSystem.bootstrap(collector.makeHandler)        // the application does this, once
/// Logger(label: "playout.demo").warning("late frame")
/// print(collector.collectLogMessages())
/// // 2026-11-22T02:23:51.123Z [warning] playout.demo: late frame
/// ```
public final class LogCollector: Sendable {
    /// How much a collector keeps and from which level.
    public struct Configuration: Equatable, Sendable {
        /// The default number of first lines kept: 1,000.
        public static let defaultFirstCount = 1_000
        /// The default number of most recent lines kept: 1,000.
        public static let defaultRecentCount = 1_000

        /// How many of the first lines since start are kept.
        public var firstCount: Int
        /// How many of the most recent lines are kept.
        public var recentCount: Int
        /// The lowest level collected (default `.debug`), independent of the console level.
        public var level: Logger.Level

        /// Creates a configuration. Negative counts are treated as 0.
        public init(
            firstCount: Int = Configuration.defaultFirstCount,
            recentCount: Int = Configuration.defaultRecentCount,
            level: Logger.Level = .debug
        ) {
            self.firstCount = max(0, firstCount)
            self.recentCount = max(0, recentCount)
            self.level = level
        }
    }

    /// One collected log line.
    public struct Entry: Equatable, Sendable, CustomStringConvertible {
        /// When it was logged: wall-clock time, nanoseconds since 1970 (UTC).
        public var wallTimeNanoseconds: Int64
        public var level: Logger.Level
        /// The logger's label, e.g. `"playout.jitter"`.
        public var label: String
        public var message: String
        /// Metadata, rendered `key=value`, sorted by key.
        public var metadata: String

        /// The line as `collectLogMessages()` prints it:
        /// `2026-11-22T02:23:51.123Z [warning] playout.demo: late frame key=value`.
        public var description: String {
            var line = LogCollector.formatTimestamp(wallTimeNanoseconds)
            line += " [\(level)] \(label): \(message)"
            if !metadata.isEmpty { line += " " + metadata }
            return line
        }
    }

    private struct Storage {
        var first: [Entry] = []
        var recent: [Entry] = []
        /// Index in `recent` of the oldest entry once `recent` is full.
        var recentStart = 0
        var total = 0
    }

    /// What this collector keeps.
    public let configuration: Configuration
    private let storage = LockedValue(Storage())

    /// Creates an empty collector.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        storage.withLock {
            $0.first.reserveCapacity(min(configuration.firstCount, 4_096))
            $0.recent.reserveCapacity(min(configuration.recentCount, 4_096))
        }
    }

    /// A swift-log handler that records into this collector, at ``Configuration/level``.
    /// Pass it to `LoggingSystem.bootstrap` (alone or in a `MultiplexLogHandler`).
    public func makeHandler(label: String) -> Handler {
        Handler(label: label, collector: self)
    }

    /// Records one entry. Thread safe; entries are kept in the order they were recorded.
    public func record(_ entry: Entry) {
        storage.withLock { storage in
            storage.total += 1
            if storage.first.count < configuration.firstCount {
                storage.first.append(entry)
            } else if configuration.recentCount > 0 {
                if storage.recent.count < configuration.recentCount {
                    storage.recent.append(entry)
                } else {
                    storage.recent[storage.recentStart] = entry
                    storage.recentStart = (storage.recentStart + 1) % configuration.recentCount
                }
            }
        }
    }

    /// The kept entries, oldest first, and how many lines between the first and the most recent
    /// ones were dropped.
    public func snapshot() -> (entries: [Entry], omitted: Int) {
        storage.withLock { storage in
            let recent = Array(storage.recent[storage.recentStart...] + storage.recent[..<storage.recentStart])
            return (storage.first + recent, storage.total - storage.first.count - recent.count)
        }
    }

    /// The kept log lines, newline-separated, oldest first: the first lines since start, then
    /// (when lines were dropped) one line saying how many, then the most recent lines. Each line
    /// has a UTC timestamp, the level, the logger label and the message.
    public func collectLogMessages() -> String {
        let (entries, omitted) = snapshot()
        var lines = entries.map(\.description)
        if omitted > 0 {
            let firstKept = min(configuration.firstCount, lines.count)
            lines.insert("… \(omitted) log \(omitted == 1 ? "line" : "lines") omitted …", at: firstKept)
        }
        return lines.joined(separator: "\n")
    }

    /// Forgets everything collected so far.
    public func clear() {
        storage.withLock { $0 = Storage() }
    }

    /// `2026-11-22T02:23:51.123Z` for nanoseconds since 1970.
    static func formatTimestamp(_ nanoseconds: Int64) -> String {
        var seconds = time_t(nanoseconds / 1_000_000_000)
        let millis = Int((nanoseconds % 1_000_000_000) / 1_000_000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(millis), 3))Z"
    }

    /// The current wall-clock time in nanoseconds since 1970.
    static func wallClockNow() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}

extension LogCollector {
    /// The swift-log handler of a ``LogCollector``.
    public struct Handler: LogHandler {
        public let label: String
        let collector: LogCollector
        public var metadata: Logger.Metadata = [:]
        public var metadataProvider: Logger.MetadataProvider?
        public var logLevel: Logger.Level

        init(label: String, collector: LogCollector) {
            self.label = label
            self.collector = collector
            self.logLevel = collector.configuration.level
        }

        public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        public func log(event: LogEvent) {
            var merged = metadata
            if let provided = metadataProvider?.get() {
                merged.merge(provided) { _, new in new }
            }
            if let extra = event.metadata {
                merged.merge(extra) { _, new in new }
            }
            let rendered = merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            collector.record(Entry(
                wallTimeNanoseconds: LogCollector.wallClockNow(),
                level: event.level,
                label: label,
                message: event.message.description,
                metadata: rendered
            ))
        }
    }
}
