import Foundation
import RealTimeTesting
import Testing

/// The real-time trait itself: a test carrying it runs on a thread of its own, never on one of
/// Swift Testing's cooperative-pool threads, and its expectations still count for it.
@Suite("The real-time test trait", .realTime)
struct RealTimeTraitTests {
    /// The calling thread's name (`/proc/thread-self/comm`).
    static func threadName() throws -> String {
        try String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("a synchronous test body runs on a real-time thread")
    func synchronousBody() throws {
        #expect(try Self.threadName() == "test-real-time")
    }

    @Test("a test's own weight and time limit run inside its suite's scope, on a real-time thread", .realTime(weight: 2, timeLimit: .seconds(60)))
    func ownTrait() throws {
        #expect(try Self.threadName() == "test-real-time")
        #expect(RealTimeRuns.capacity >= 2)
    }
}
