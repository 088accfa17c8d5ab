#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import PlayoutCore

/// The driver of ``Subscriber/start()``: carries a ``Subscription``'s decisions out with real
/// sockets, threads and the monotonic clock. It decides nothing itself — the subscription's state
/// machine does, reopening and stopping included — and owns only its threads:
///
/// - one intake thread waits on every socket at once (`poll`), hands each batch of datagrams to
///   its track and runs the subscription's decisions when due, until it finishes; a socket that
///   fails is reported, and bound again when the decisions say;
/// - one playout thread per track advances its ``PlayoutLoop`` and sleeps until what it asks for;
/// - a feedback thread (when a track talks back) sends what the receivers decided;
/// - a demux thread reads a libavformat input (reads block), paced in real time for a file, and
///   opens it again when the decisions say.
///
/// The intake thread ends the run: once the subscription finished, it stops the tracks, waits
/// for the playout threads to drain and hands the final sample to `finished`.
final class ThreadedDriver: @unchecked Sendable {
    private let subscription: Subscription
    private let source: SubscriptionSource
    private let clock: MonotonicClock

    init(subscription: Subscription, source: SubscriptionSource, clock: MonotonicClock) {
        self.subscription = subscription
        self.source = source
        self.clock = clock
    }

    /// Starts the threads.
    ///
    /// - Throws: ``PlayoutError`` when a thread cannot start; the threads already running end,
    ///   and the subscription ends as failed.
    func start() throws {
        let subscription = subscription
        let group = DispatchGroup()
        do {
            for loop in subscription.loops {
                group.enter()
                do {
                    try startThread(named: "playout-\(loop.track.kind.rawValue)") {
                        loop.run()
                        group.leave()
                    }
                } catch {
                    group.leave()
                    throw error
                }
            }
            try startThread(named: "playout-intake") { [self] in
                intake(subscription)
                for track in subscription.tracks { track.requestStop() }
                group.wait()
                subscription.finish()
            }
        } catch {
            // A thread could not start: the playout threads already running end at once.
            subscription.fail(reason: "\(error)")
            for track in subscription.tracks { track.requestStop() }
            group.notify(queue: .global()) { subscription.finish() }
            throw error
        }
        if subscription.options.feedback, subscription.tracks.contains(where: \.sendsFeedback) {
            do {
                try startThread(named: "playout-feedback") { [self] in feedback(subscription) }
            } catch {
                subscription.fail(reason: "\(error)")  // the intake thread ends the subscription
                throw error
            }
        }
        if case .demuxer(let input) = source {
            do {
                try DemuxReader(input: input, subscription: subscription, clock: clock).start()
            } catch {
                subscription.fail(reason: "\(error)")  // the intake thread ends the subscription
                throw error
            }
        }
    }

    /// The feedback thread: sends what each track's receiver decided, when it decided it, and
    /// sleeps until the subscription says to look again (``Subscription/feedback(now:)``).
    private func feedback(_ subscription: Subscription) {
        while true {
            let now = clock.now
            guard subscription.sleep(until: subscription.feedback(now: now) ?? now.advanced(by: Subscription.reportOnlyPollInterval)) else { return }
        }
    }

    /// The intake thread: waits on every socket at once, hands datagrams to their track, and runs
    /// the subscription's decisions when due, until it finishes.
    private func intake(_ subscription: Subscription) {
        var sockets = subscription.sockets
        var generation = subscription.socketsGeneration
        var descriptors = sockets.map { pollfd(fd: $0.socket.receiver.fileDescriptor, events: Int16(POLLIN), revents: 0) }
        var wake = clock.now
        while true {
            var now = clock.now
            if now >= wake {
                guard let next = subscription.control(now: now) else { break }
                wake = next
                now = clock.now
            }
            if subscription.socketsGeneration != generation {
                // A failed socket was bound again: wait on the new one.
                generation = subscription.socketsGeneration
                sockets = subscription.sockets
                descriptors = sockets.map { pollfd(fd: $0.socket.receiver.fileDescriptor, events: Int16(POLLIN), revents: 0) }
            }
            // poll(2) takes milliseconds: round up, so a wake-up is never early.
            let timeout = Int32(clamping: min(50, max(0, (now.duration(to: wake).nanoseconds + 999_999) / 1_000_000)))
            let ready = poll(&descriptors, nfds_t(descriptors.count), timeout)
            if ready < 0, errno != EINTR {
                subscription.fail(reason: "waiting for datagrams failed: \(String(cString: strerror(errno)))")
                wake = clock.now
                continue
            }
            guard ready > 0 else { continue }
            for index in descriptors.indices where descriptors[index].revents != 0 {
                descriptors[index].revents = 0
                let (track, socketIndex, socket) = sockets[index]
                do {
                    try track.receive(from: socket)
                } catch {
                    // The socket failed: the decisions say when to bind it again; not waited on
                    // meanwhile (poll(2) skips a negative descriptor).
                    subscription.sourceFailed(.socket(track: track.index, socket: socketIndex), error: error)
                    descriptors[index].fd = -1
                    wake = clock.now
                }
            }
        }
    }
}
