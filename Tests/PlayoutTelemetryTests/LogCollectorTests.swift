import Foundation
import Logging
import PlayoutCore
import PlayoutTelemetry
import PlayoutCore
import Synchronization
import Testing

/// A console stand-in that records what reaches it.
struct CapturingLogHandler: LogHandler {
    let captured: CapturedLines
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        captured.lines.withLock { $0.append("\(event.level) \(event.message)") }
    }
}

final class CapturedLines: Sendable {
    let lines = LockedValue<[String]>([])
}

@Suite("LogCollector")
struct LogCollectorTests {
    func logger(_ collector: LogCollector, label: String = "playout.test") -> Logger {
        Logger(label: label) { collector.makeHandler(label: $0) }
    }

    @Test("lines carry timestamp, level, label, message and metadata, oldest first")
    func lineFormat() throws {
        let collector = LogCollector()
        var log = logger(collector, label: "playout.jitter")
        log[metadataKey: "track"] = "video"
        log.warning("late frame", metadata: ["seq": "42"])
        log.info("second")
        let lines = collector.collectLogMessages().split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        let pattern = #/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z \[warning\] playout\.jitter: late frame seq=42 track=video$/#
        #expect(try pattern.wholeMatch(in: lines[0]) != nil, "\(lines[0])")
        #expect(lines[1].hasSuffix("[info] playout.jitter: second track=video"))
    }

    @Test("keeps exactly the first N and the last M lines, with a line counting the rest")
    func firstAndRecent() {
        let collector = LogCollector(configuration: .init(firstCount: 3, recentCount: 4, level: .trace))
        let log = logger(collector)
        for index in 0..<20 { log.debug("line \(index)") }
        let (entries, omitted) = collector.snapshot()
        #expect(entries.map(\.message) == ["line 0", "line 1", "line 2", "line 16", "line 17", "line 18", "line 19"])
        #expect(omitted == 13)
        let lines = collector.collectLogMessages().split(separator: "\n")
        #expect(lines.count == 8)
        #expect(lines[3] == "… 13 log lines omitted …")
    }

    @Test("no omission line while everything fits")
    func everythingFits() {
        let collector = LogCollector(configuration: .init(firstCount: 3, recentCount: 4))
        let log = logger(collector)
        for index in 0..<7 { log.info("line \(index)") }
        #expect(collector.snapshot().omitted == 0)
        #expect(!collector.collectLogMessages().contains("omitted"))
        collector.clear()
        #expect(collector.collectLogMessages().isEmpty)
    }

    @Test("zero-sized parts and negative counts are handled")
    func degenerateSizes() {
        let none = LogCollector(configuration: .init(firstCount: -5, recentCount: 0))
        logger(none).error("dropped")
        #expect(none.snapshot().entries.isEmpty)
        #expect(none.collectLogMessages() == "… 1 log line omitted …")
        let recentOnly = LogCollector(configuration: .init(firstCount: 0, recentCount: 2))
        for index in 0..<5 { logger(recentOnly).error("e\(index)") }
        #expect(recentOnly.snapshot().entries.map(\.message) == ["e3", "e4"])
    }

    @Test("memory stays bounded however much is logged")
    func bounded() {
        let collector = LogCollector(configuration: .init(firstCount: 10, recentCount: 10))
        let log = logger(collector)
        for index in 0..<50_000 { log.info("line \(index)") }
        let (entries, omitted) = collector.snapshot()
        #expect(entries.count == 20)
        #expect(omitted == 49_980)
    }

    @Test("under concurrent logging: exactly the first N and last M, each thread's lines in order")
    func concurrent() {
        let first = 500
        let recent = 700
        let collector = LogCollector(configuration: .init(firstCount: first, recentCount: recent))
        let threads = 8
        let perThread = 2_000
        let done = DispatchGroup()
        for thread in 0..<threads {
            done.enter()
            Thread {
                let log = Logger(label: "t\(thread)") { collector.makeHandler(label: $0) }
                for sequence in 0..<perThread { log.info("\(sequence)") }
                done.leave()
            }.start()
        }
        done.wait()
        let (entries, omitted) = collector.snapshot()
        #expect(entries.count == first + recent)
        #expect(omitted == threads * perThread - first - recent)
        let head = entries.prefix(first)
        let tail = entries.suffix(recent)
        for thread in 0..<threads {
            let label = "t\(thread)"
            let headSequence = head.filter { $0.label == label }.map { Int($0.message)! }
            let tailSequence = tail.filter { $0.label == label }.map { Int($0.message)! }
            #expect(headSequence == Array(0..<headSequence.count), "thread \(thread): the first lines are a prefix")
            #expect(tailSequence == Array((perThread - tailSequence.count)..<perThread), "thread \(thread): the last lines are a suffix")
        }
    }

    @Test("collection works whatever the console level")
    func collectionIndependentOfConsole() {
        let collector = LogCollector(configuration: .init(level: .debug))
        let console = CapturedLines()
        let factory = LoggingSetup(consoleLevel: .error).makeFactory(collector: collector) { _ in
            CapturingLogHandler(captured: console)
        }
        let log = Logger(label: "playout.test", factory: factory)
        log.trace("not even collected")
        log.debug("collected only")
        log.info("collected too")
        log.error("everywhere")
        #expect(console.lines.withLock { $0 } == ["error everywhere"])
        let collected = collector.snapshot().entries.map(\.message)
        #expect(collected == ["collected only", "collected too", "everywhere"])
    }
}

@Suite("PLAYOUT_LOG_LEVEL")
struct LoggingSetupTests {
    @Test("valid levels, any case", arguments: [
        ("trace", Logger.Level.trace), ("debug", .debug), ("info", .info), ("warning", .warning), ("error", .error), ("INFO", .info),
    ])
    func valid(raw: String, level: Logger.Level) {
        let setup = LoggingSetup(environment: ["PLAYOUT_LOG_LEVEL": raw])
        #expect(setup.consoleLevel == level)
        #expect(setup.problem == nil)
    }

    @Test("unset or empty means warning")
    func unset() {
        #expect(LoggingSetup(environment: [:]) == LoggingSetup(consoleLevel: .warning))
        #expect(LoggingSetup(environment: ["PLAYOUT_LOG_LEVEL": ""]).consoleLevel == .warning)
    }

    @Test("an invalid value is ignored and described once")
    func invalid() {
        let setup = LoggingSetup(environment: ["PLAYOUT_LOG_LEVEL": "loud"])
        #expect(setup.consoleLevel == .warning)
        #expect(setup.problem == "ignoring PLAYOUT_LOG_LEVEL=loud: use one of trace, debug, info, warning, error")
    }
}
