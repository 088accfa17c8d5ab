import Foundation
import Logging
import PlayoutCore
import PlayoutTelemetry
import Testing

/// `LoggingSetup.bootstrap` is process-wide: these tests only rely on what holds whoever
/// called it first (another test, another thread).
@Suite("LoggingSetup.bootstrap")
struct LoggingBootstrapTests {
    @Test("every call returns the collector in effect, and loggers created afterwards feed it")
    func idempotent() {
        let first = LoggingSetup.bootstrap(collector: LogCollector(), setup: LoggingSetup(consoleLevel: .critical))
        let offered = LogCollector()
        let second = LoggingSetup.bootstrap(collector: offered)
        #expect(second === first)
        #expect(LoggingSetup.bootstrap() === first)
        if first !== offered { #expect(offered.snapshot().entries.isEmpty, "a collector offered later is not installed") }
        let marker = "bootstrap-marker-\(UInt64.random(in: .min ... .max))"
        Logger(label: "playout.test.bootstrap").info("\(marker)")
        #expect(first.snapshot().entries.contains { $0.message == marker && $0.label == "playout.test.bootstrap" })
    }

    @Test("calls from many threads at once all get the same collector")
    func concurrent() {
        let results = LockedValue<[ObjectIdentifier]>([])
        DispatchQueue.concurrentPerform(iterations: 16) { _ in
            let collector = LoggingSetup.bootstrap(collector: LogCollector())
            results.withLock { $0.append(ObjectIdentifier(collector)) }
        }
        let identities = results.withLock { $0 }
        #expect(identities.count == 16)
        #expect(Set(identities).count == 1)
        #expect(identities.first == ObjectIdentifier(LoggingSetup.bootstrap()))
    }

    @Test("LoggingSetup() reads this process's PLAYOUT_LOG_LEVEL as init(environment:) does")
    func processEnvironment() {
        var environment: [String: String] = [:]
        if let value = getenv(LoggingSetup.environmentVariable) { environment[LoggingSetup.environmentVariable] = String(cString: value) }
        #expect(LoggingSetup() == LoggingSetup(environment: environment))
    }
}
