#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Playout
import PlayoutCore
import PlayoutRTP
import PlayoutTesting
import Testing

/// Issue 25 item 3: many subscriptions in one process on a fixed number of threads. 200 viewers,
/// each receiving its own copy of a 320×240 30 fps stream on 127.0.0.1, without decoding, on one
/// event loop: every frame renders, on time, and the threads do not grow with the viewers.
@Suite("Event loop: 200 subscriptions on a fixed number of threads", .serialized)
struct EventLoopTests {
    /// The threads of this process now (/proc/self/task).
    static func threadCount() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? 0
    }

    /// CPU time of this process so far (user + system).
    static func processCPU() -> Duration {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return .seconds(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + .microseconds(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec)
    }

    /// 200, or `PLAYOUT_EVENT_LOOP_VIEWERS` (to measure other counts).
    static let viewers = Int(ProcessInfo.processInfo.environment["PLAYOUT_EVENT_LOOP_VIEWERS"] ?? "") ?? 200
    static let sending = Duration.seconds(3)

    @Test("200 subscriptions, one copy each: every frame rendered, p99 render error under a frame interval, threads independent of the count")
    func twoHundred() throws {
        let clock = MonotonicClock()
        var configuration = SimulatedStream.Configuration()
        configuration.wallClockOrigin = clock.wallClockNanoseconds - clock.now.nanoseconds
        let stream = SimulatedStream(configuration)
        let loop = try SubscriptionEventLoop(workers: 2)
        defer { loop.shutdown() }
        #expect(loop.threadCount == 3)
        let threadsBefore = Self.threadCount()

        var options = Subscriber.Options(duration: Self.sending + .milliseconds(1_500), feedback: false)
        options.decoding = false
        var subscribers: [Subscriber] = []
        var ports: [UInt16] = []
        for _ in 0..<Self.viewers {
            let pair = try SocketAddress.freeLoopbackPorts(count: 2)
            var session = stream.sessionDescription
            session.media[0].port = pair.lowerBound
            let subscriber = try Subscriber(sessionDescription: session, options: options)
            try loop.start(subscriber)  // binds its ports now: the next draw cannot take them
            subscribers.append(subscriber)
            ports.append(pair.lowerBound)
        }
        let threadsWith200 = Self.threadCount()

        // One sender: each datagram to every viewer's port at its instant, in real time.
        // Encoded before the clock starts (the first encode takes a second): the datagrams go
        // out on time from the first.
        _ = try SimulatedStream.videoFrames(configuration)
        let origin = clock.now.advanced(by: .milliseconds(200))
        let datagrams = try stream.datagrams(for: .zero..<Self.sending, origin: origin)
        let socket = try UDPReceiver(bindingTo: SocketAddress(host: "127.0.0.1", port: 0))
        let destinations = try ports.map { try SocketAddress(host: "127.0.0.1", port: $0) }
        let cpuBefore = Self.processCPU()
        let wallBefore = clock.now
        for datagram in datagrams {
            // Sent when it would leave the sender (arrival less the simulated transit).
            sleepUntil(datagram.arrival.advanced(by: .zero - configuration.transit))
            try datagram.bytes.withUnsafeBytes { bytes in
                for destination in destinations { try socket.send(bytes, to: destination) }
            }
        }
        let finals = subscribers.map { $0.waitUntilEnded() }
        let cpu = Self.processCPU() - cpuBefore
        let wall = wallBefore.duration(to: clock.now)

        // The threads: the loop's three, whatever the number of viewers (other suites may start
        // or end a few threads meanwhile; a thread per viewer would be 200 more).
        #expect(threadsWith200 - threadsBefore < 20, "threads before \(threadsBefore), with 200 subscriptions \(threadsWith200)")
        let frames = Int(Self.sending.seconds) * configuration.frameRate
        var renderErrors = DurationHistogram()
        var late = 0
        for final in finals {
            let video = try #require(final.video)
            #expect(final.state == .ended)
            #expect(video.framesRendered == frames, "rendered \(video.framesRendered) of \(frames)")
            #expect(video.framesLate == 0 && video.framesSkipped == 0 && video.packetsLost == 0)
            renderErrors.merge(video.renderError)
            late += video.framesRenderedLate
        }
        let p99 = try #require(renderErrors.percentile(0.99))
        #expect(p99 < .seconds(1) / configuration.frameRate, "p99 render error \(p99)")
        print("""
            event loop: \(Self.viewers) subscriptions on \(loop.threadCount) threads (process threads \(threadsBefore) → \(threadsWith200)); \
            \(frames) frames each rendered; render error p50 \(renderErrors.percentile(0.5)!) p99 \(p99) max \(renderErrors.summary!.max), \
            \(late) of \(frames * Self.viewers) later than 20 ms; CPU \(cpu) over \(wall) = \
            \(String(format: "%.2f", cpu.seconds / wall.seconds * 100 / Double(Self.viewers))) % of a core per subscription (sender included)
            """)
    }
}
