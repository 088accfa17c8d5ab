import Logging
import PlayoutCodec
import PlayoutCore

/// Reads a subscription's libavformat input on a thread of its own (its reads block), for
/// the event loop: paces a file in real time, hands each frame to its track, reports a failed or
/// ended URL to the subscription and opens it again when the subscription's decisions say
/// (``Subscription/waitForInputReopen()``), and tells a file's end. `arrived` runs after each
/// frame is handed over (the event loop takes the subscription's turn then, with its decisions).
/// Ends with the subscription.
final class DemuxReader: @unchecked Sendable {
    private let input: DemuxedInput
    private let subscription: Subscription
    private let clock: MonotonicClock
    private let arrived: @Sendable () -> Void
    private let logger = Logger(label: "playout.subscriber")

    init(input: DemuxedInput, subscription: Subscription, clock: MonotonicClock, arrived: @escaping @Sendable () -> Void = {}) {
        self.input = input
        self.subscription = subscription
        self.clock = clock
        self.arrived = arrived
    }

    /// Starts the reading thread, named `name`.
    ///
    /// - Throws: ``PlayoutError`` when the thread cannot start.
    func start(named name: String) throws {
        try startThread(named: name) { [self] in run() }
    }

    private func run() {
        let (input, subscription, clock) = (input, subscription, clock)
        let tracks = subscription.tracks
        var demuxer = input.takeOpened()  // the subscriber keeps no reference: a reopen can bind again
        demuxer?.usesDecodingTimestamps = true
        var pacer = RealTimePacer(clock: clock)
        var mapping = DemuxedInput.trackMapping(input.streams, tracks: tracks)
        var latest: [Int: MediaTime] = [:]
        while !subscription.isFinished {
            guard let current = demuxer else {
                // Reopen when the decisions say (after their backoff).
                guard subscription.waitForInputReopen() else { return }
                do {
                    let reopened = try FFmpegDemuxer(url: input.url, options: input.options, clock: clock)
                    reopened.usesDecodingTimestamps = true
                    demuxer = reopened
                    mapping = DemuxedInput.trackMapping(reopened.streams.filter { $0.kind != nil }, tracks: tracks)
                    pacer = RealTimePacer(clock: clock)
                    latest = [:]
                    for track in tracks { track.restart() }
                    subscription.inputReopened()
                    logger.info("reopened \(input.url)")
                } catch {
                    subscription.inputReopenFailed(error)
                }
                arrived()
                continue
            }
            do {
                guard var frame = try current.read() else {
                    if input.isFile {
                        subscription.inputDidEnd()
                        arrived()
                        return
                    }
                    subscription.sourceFailed(.input, error: PlayoutError(.invalidSource, "\(input.url) ended"))
                    demuxer = nil
                    arrived()
                    continue
                }
                guard let track = mapping[Int(frame.track.rawValue)] else { continue }
                if input.isFile { subscription.sleep(until: pacer.dueInstant(for: frame.mediaTime.duration)) }
                let now = clock.now
                frame.firstArrival = now
                frame.lastArrival = now
                // A sender that restarted behind the same URL: its timestamps start again.
                let stream = Int(frame.track.rawValue)
                if let last = latest[stream], frame.mediaTime < last || frame.mediaTime.duration > last.duration + .seconds(5) {
                    logger.info("\(input.url): timestamps jumped from \(last) to \(frame.mediaTime); restarting the track")
                    track.restart()
                }
                latest[stream] = frame.mediaTime
                track.receive(frame: frame)
                arrived()
            } catch {
                subscription.sourceFailed(.input, error: error)
                demuxer = nil
                arrived()
            }
        }
    }
}
