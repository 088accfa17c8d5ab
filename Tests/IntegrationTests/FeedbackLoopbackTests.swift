import Foundation
import Playout
import PlayoutSender
import PlayoutTesting
import RealTimeTesting
import Testing

/// The built-in publisher and a subscriber on loopback at the default 230 ms playout delay,
/// through the publisher's simulated network, with the subscriber talking back (receiver
/// reports, NACK → RTX, PLI → key frame, REMB/TMMBR → bit rate) and, for comparison, silent.
///
/// The picture is 640×360 at 30 fps with a key frame every 60 frames (the default GOP): the
/// issue's 720p30 (`PLAYOUT_FEEDBACK_720P=1`, README's table) gives the same shares with
/// feedback; a smaller picture keeps four builders on two cores from disturbing the runs.
@Suite("Feedback on loopback: repair inside the playout delay", .realTime(weight: 2), .serialized)
struct FeedbackLoopbackTests {
    struct Run {
        var sent: Publisher.Statistics
        var final: SubscriberQoS
        var samples: [SubscriberQoS]
        var frames: [FrameRecord]
        /// The subscription's start: the samples' `elapsed` is from it.
        var start: MonotonicInstant
        /// The video's frame rate, as the publisher was told.
        var frameRate: Int

        /// Video frames rendered, of those the publisher sent.
        var renderedShare: Double {
            Double(final.video?.framesRendered ?? 0) / Double(max(1, sent.tracks[.video]?.framesSent ?? 0))
        }

        /// The received video bit rate averaged from `from` to `to` (by the samples taken
        /// between them), nil without two samples there.
        func videoRate(from: Duration, to: Duration) -> Double? {
            let inside = samples.filter { $0.elapsed >= from && $0.elapsed <= to }
            guard let first = inside.first, let last = inside.last, last.elapsed > first.elapsed else { return nil }
            return Double((last.video?.bytesReceived ?? 0) - (first.video?.bytesReceived ?? 0)) * 8 / (last.elapsed - first.elapsed).seconds
        }

        /// Received video bit rate over one-second windows of the 250 ms samples, by when
        /// they end (the subscriber's clock: it started just before `during`).
        var videoRates: [(at: Duration, bitrate: Double)] {
            zip(samples, samples.dropFirst(4)).map { earlier, later in
                (at: later.elapsed, bitrate: Double((later.video?.bytesReceived ?? 0) - (earlier.video?.bytesReceived ?? 0)) * 8 / (later.elapsed - earlier.elapsed).seconds)
            }
        }

        /// ``videoRates`` over the media time the frames arriving in each window carry, when that
        /// is more than the window: what the sender's encoder spent on each second of picture.
        /// A sender kept from a CPU sends a stall's frames in a burst after it, more than a
        /// second of picture in a second of arrivals, at the rate its encoder was told.
        var videoMediaRates: [(at: Duration, bitrate: Double, media: Duration)] {
            let video = frames.filter { $0.kind == .video }
            return videoRates.map { rate in
                let inside = video.filter { frame in
                    let arrival = start.duration(to: frame.arrival)
                    return arrival > rate.at - .seconds(1) && arrival <= rate.at
                }
                guard let first = inside.map(\.mediaTime).min(), let last = inside.map(\.mediaTime).max() else { return (rate.at, rate.bitrate, .zero) }
                let media = last - first + .seconds(1) / frameRate
                return (rate.at, rate.bitrate * min(1, 1 / media.seconds), media)
            }
        }
    }

    /// The tests' picture; `PLAYOUT_FEEDBACK_720P=1` measures the issue's default 720p30 H.264
    /// (2.5 Mbit/s, a key frame every 60 frames) for 20 s instead — README's table.
    static let measuresDefault = ProcessInfo.processInfo.environment["PLAYOUT_FEEDBACK_720P"] == "1"
    static let video = measuresDefault
        ? FFmpegEncoder.VideoSettings()
        : FFmpegEncoder.VideoSettings(codec: .h264, width: 640, height: 360, frameRate: 30, bitrate: 1_000_000, keyframeInterval: 60)

    /// Publishes for `seconds` through `impairment`; the subscriber plays a second longer, so
    /// every frame sent had its chance to render. `during` runs once both have started.
    static func run(
        seconds: Int = 10, impairment: NetworkImpairment.Configuration, feedback: Bool, retransmission: Bool = true,
        video: FFmpegEncoder.VideoSettings = video, during: (Subscriber) throws -> Void = { _ in }
    ) throws -> Run {
        let publisher = try Publisher(options: .init(
            destination: try Publisher.freeLoopbackDestination(), video: video, sendsAudio: false,
            keyingMaterial: .random(for: .aesCM128HMACSHA1_80), impairment: impairment, duration: .seconds(seconds),
            retransmission: retransmission
        ))
        let subscriber = try Subscriber(
            sessionDescription: publisher.sessionDescription,
            options: .init(duration: .seconds(seconds + 1), qosInterval: .milliseconds(250), frameLogCapacity: 4_096, feedback: feedback)
        )
        let samples = LockedValue<[SubscriberQoS]>([])
        let watch = subscriber.qos.subscribe { sample in samples.withLock { $0.append(sample) } }
        defer { watch.dispose() }
        try subscriber.start()
        try publisher.start()
        try during(subscriber)
        let sent = try publisher.waitUntilEnded()
        let final = subscriber.waitUntilEnded()
        let log = try #require(subscriber.frameLog?.snapshot())
        return Run(sent: sent, final: final, samples: samples.withLock { $0 }, frames: log.frames, start: log.start, frameRate: video.frameRate)
    }

    static let cases: [(name: String, impairment: NetworkImpairment.Configuration, share: Double)] = [
        ("1 % random loss", .init(loss: 0.01, seed: 11), 0.99),
        ("5 % random loss", .init(loss: 0.05, seed: 12), 0.97),
        ("10 % bursty loss, mean burst 8", .init(burstLoss: .init(rate: 0.10, meanBurstLength: 8), seed: 13), 0.90),
    ]

    @Test("with feedback, losses are repaired inside the playout delay: ≥ 99 %, ≥ 97 %, ≥ 90 % of video frames render", arguments: 0..<3)
    func repaired(index: Int) throws {
        let (name, impairment, share) = Self.cases[index]
        // 5 s (150 frames) show the repair as 10 s did: the seeded losses of the first 5 s
        // are the same, and without feedback at most half the frames render.
        let seconds = Self.measuresDefault ? 20 : 5
        let run = try Self.run(seconds: seconds, impairment: impairment, feedback: true)
        let silent = try Self.run(seconds: seconds, impairment: impairment, feedback: false)
        let video = try #require(run.final.video)
        let sent = try #require(run.sent.tracks[.video])
        print("feedback \(name), \(Self.video.width)x\(Self.video.height): rendered \(run.final.video?.framesRendered ?? 0) of \(sent.framesSent) with feedback (\(run.renderedShare)), \(silent.final.video?.framesRendered ?? 0) of \(silent.sent.tracks[.video]?.framesSent ?? 0) without (\(silent.renderedShare)); \(video.nackCount) NACKs, \(video.retransmittedPacketsReceived) RTX, \(video.pliCount) PLIs")
        #expect(run.renderedShare >= share, "\(name): \(video.framesRendered) of \(sent.framesSent) rendered")
        #expect(run.renderedShare > silent.renderedShare, "\(name): feedback helps (\(run.renderedShare) vs \(silent.renderedShare))")
        // The repair is what the counters say it is, on both sides.
        #expect(video.nackCount > 0 && video.retransmittedPacketsReceived > 0, "\(video.nackCount) NACKs, \(video.retransmittedPacketsReceived) RTX")
        #expect(sent.feedback.nacksReceived > 0 && sent.retransmittedPacketsSent >= video.retransmittedPacketsReceived)
        #expect(video.retransmittedPacketsDropped == 0)
        #expect(video.roundTripTime != nil && sent.feedback.roundTripTime != nil, "RTT measured by both")
        #expect(sent.feedback.receiverReportsReceived > 0 && sent.feedback.fractionLost != nil)
        // Silent means silent: the publisher heard nothing.
        let unheard = try #require(silent.sent.tracks[.video])
        #expect(unheard.feedback.receiverReportsReceived == 0 && unheard.retransmittedPacketsSent == 0 && silent.final.video?.rtcpPacketsSent == 0)
    }

    @Test("RTX off: after an unrepairable loss a PLI brings the next key frame within one RTT plus two frame intervals")
    func keyFrameOnRequest() throws {
        // 1 % loss with no retransmission: every loss leaves decoding waiting for a key frame.
        // (A loss in the key frame itself, or one within 100 ms of the last request — the rate
        // limit — makes a longer hole; they are the rare tenth allowed below.)
        let run = try Self.run(seconds: 10, impairment: .init(loss: 0.01, seed: 21), feedback: true, retransmission: false)
        let video = try #require(run.final.video)
        let sent = try #require(run.sent.tracks[.video])
        #expect(video.nackCount == 0, "no nack announced, none sent")
        #expect(video.pliCount > 0 && sent.feedback.pliReceived > 0 && sent.keyFramesForced > 0)
        // The frame log would time each wait; the counters bound it: a loss costs the frames
        // until the forced key frame arrives (RTT + the frame being encoded + the next one),
        // not the rest of a 60-frame GOP. Two frame intervals on loopback's ≈ 0 RTT, plus the
        // 10 ms feedback poll and the publisher's 20 ms feedback wait: ≤ 3 frames a loss, and
        // one more for the frame the loss itself broke.
        // Each hole in the rendered frames: from the first frame not rendered to the key frame
        // that ended it, in media time. The loss is seen at the next packet (up to a frame
        // later), after the reorder wait (10 ms), by the feedback thread (polling every 10 ms);
        // the PLI takes the RTT's outward half, the key frame is the next picture encoded and
        // comes back in the other half. So: RTT + two frame intervals + 20 ms, in whole frames.
        let interval = Duration.seconds(1) / 30
        let rtt = video.roundTripTime ?? .zero
        let bound = interval * Int(((rtt + interval * 2 + .milliseconds(20)) / interval).rounded(.up))
        let rendered = run.frames.filter { $0.kind == .video && !$0.skipped }.map(\.mediaTime)
        let holes = zip(rendered, rendered.dropFirst()).map { $1 - ($0 + interval) }.filter { $0 > interval / 2 }
        let within = holes.filter { $0 <= bound + .milliseconds(1) }
        print("key frame on request: holes \(holes.map { Int(($0 / interval).rounded()) }) frames, bound \(Int((bound / interval).rounded()))")
        #expect(!holes.isEmpty)
        // Real time on a shared machine: nine holes in ten within the bound, every one well
        // inside the 60-frame GOP.
        #expect(Double(within.count) >= 0.9 * Double(holes.count), "\(holes.map(\.seconds)) vs \(bound.seconds)")
        #expect(holes.allSatisfy { $0 < interval * 15 }, "\(holes.map(\.seconds))")
        #expect(run.renderedShare > 0.5, "not the rest of each GOP: \(run.renderedShare)")
    }

    @Test("limitBandwidth(800_000) during a 2.5 Mbit/s stream: the received bit rate is under it within 2 s, and back after release")
    func bandwidthLimit() throws {
        let video = FFmpegEncoder.VideoSettings(codec: .h264, width: 1280, height: 720, frameRate: 30, bitrate: 2_500_000, keyframeInterval: 60)
        let limitAt = Duration.seconds(4)
        let releaseAt = Duration.seconds(9)
        let run = try Self.run(seconds: 14, impairment: .init(), feedback: true, video: video) { subscriber in
            Thread.sleep(forTimeInterval: limitAt.seconds)
            let limit = try subscriber.limitBandwidth(800_000)
            #expect(subscriber.bandwidthLimit == 800_000)
            Thread.sleep(forTimeInterval: (releaseAt - limitAt).seconds)
            limit.dispose()
            #expect(subscriber.bandwidthLimit == nil)
        }
        let rates = run.videoMediaRates
        // The publisher aims at 80 % of the limit; libx264's rate control lets a second that holds a
        // key frame run over its aim (beside the suite: one second at 816 kbit/s, the mean 680).
        // So: the mean under the limit, every second of picture within a tenth of it (beside a
        // build on both cores, 1.05 Mbit/s arrived in one second of the limit, the mean 785 kbit/s:
        // an encoder kept from a CPU catching up).
        let limited = rates.filter { $0.at >= limitAt + .seconds(2) && $0.at <= releaseAt }
        let described = rates.map { "\(Int($0.at.seconds * 10))/\(Int($0.bitrate / 1000))" + ($0.media > .seconds(1.05) ? "(\(Int($0.media.seconds * 100))cs)" : "") }
        // The mean over the arrivals, as before: a burst after a stall is averaged out over the span.
        let arrived = run.videoRates.filter { $0.at >= limitAt + .seconds(2) && $0.at <= releaseAt }
        let mean = arrived.isEmpty ? .infinity : arrived.reduce(0) { $0 + $1.bitrate } / Double(arrived.count)
        #expect(mean < 800_000 && limited.allSatisfy { $0.bitrate < 880_000 }, "mean \(Int(mean)): \(described)")
        // Back after release: twice the limit, and at least four fifths of what the same encoder
        // sent before the limit, under the same load. A 720p encoder kept from a CPU (two `yes`
        // beside two builds) sent 1.0–1.8 Mbit/s in the seconds after release; one left at the
        // limit sends under 0.8.
        let before = try #require(run.videoRate(from: .seconds(2), to: limitAt), "\(rates)")
        let released = try #require(run.videoRate(from: releaseAt + .seconds(3), to: .seconds(14)), "\(rates)")
        #expect(released > 1_600_000 || (released > 1_000_000 && released >= 0.8 * before), "\(Int(released)) bit/s released, \(Int(before)) before the limit")
        let sent = try #require(run.sent.tracks[.video])
        #expect(sent.feedback.rembReceived > 0 && sent.feedback.tmmbrReceived > 0 && sent.feedback.bitrateLimit == nil)
    }

    @Test("VP8 follows a limit too: the publisher reopens libvpx at the limited rate, and again at its own after release")
    func bandwidthLimitVP8() throws {
        // One encoder thread: libvpx's threads wait for each other by spinning, so on a busy
        // machine two of them burn the CPU they wait for — 150 pictures of 640×360 took 27 s
        // (10.5 s of CPU) with two threads and 1.6 s of CPU with one, beside two `yes`; the
        // publisher sent 56 frames in 11 s, nearly all late.
        let video = FFmpegEncoder.VideoSettings(codec: .vp8, width: 640, height: 360, frameRate: 30, bitrate: 1_500_000, keyframeInterval: 60, threadCount: 1)
        let limitAt = Duration.seconds(3)
        let releaseAt = Duration.seconds(7)
        let run = try Self.run(seconds: 11, impairment: .init(), feedback: true, video: video) { subscriber in
            Thread.sleep(forTimeInterval: limitAt.seconds)
            let limit = try subscriber.limitBandwidth(600_000)
            Thread.sleep(forTimeInterval: (releaseAt - limitAt).seconds)
            limit.dispose()
        }
        let rates = "\(run.videoRates.map { "\(Int($0.at.seconds * 10))/\(Int($0.bitrate / 1000))" })"
        // libvpx's rate control settles more loosely than libx264's VBV: under the limit plus
        // a fifth from 2 s after it, well above it again from 2 s after release. Averaged
        // over those spans rather than per second: an encoder kept from a CPU sends a
        // second's frames in a burst after it (6–7 s at 1.1 Mbit/s after 4–6 s at 0.3 with two
        // builds running), which moves bits between seconds, not the rate libvpx runs at —
        // 1.5 Mbit/s throughout if it were not reopened.
        let limited = try #require(run.videoRate(from: limitAt + .seconds(2), to: releaseAt), "\(rates)")
        let released = try #require(run.videoRate(from: releaseAt + .seconds(2), to: .seconds(11)), "\(rates)")
        #expect(limited < 720_000, "\(Int(limited)) bit/s limited: \(rates)")
        #expect(released > 1_000_000, "\(Int(released)) bit/s released: \(rates)")
        // Each reopening starts with a key frame: nothing waits for one, and nine frames in
        // ten that the publisher delivered in time render (those it sent late under load are
        // its own; one presented 21 ms late beside two builds is the machine's).
        let qos = try #require(run.final.video)
        let sent = try #require(run.sent.tracks[.video]?.framesSent)
        let share = ReceiverShare(run.frames, kind: .video, interval: .seconds(1) / 30)
        let counts = "rendered \(qos.framesRendered) of \(sent), sent late \(share.skippedSentLate), decoded \(qos.framesDecoded), decode errors \(qos.decodeErrors), waiting for a key frame \(qos.framesDroppedWaitingForKeyframe), incomplete \(qos.framesIncomplete), late \(qos.framesLate), lost \(qos.packetsLost), PLIs \(qos.pliCount)"
        #expect(qos.framesDroppedWaitingForKeyframe == 0 && qos.decodeErrors == 0 && qos.framesIncomplete == 0, "\(counts)")
        #expect(Double(qos.framesRendered) > 0.9 * Double(sent - share.skippedSentLate), "\(counts); in time but not rendered: \(share.skippedInTimeDescription)")
        #expect(share.skippedSentLate * 3 <= sent * 2, "the publisher sent more than two thirds of the frames late: the run shows little; \(counts)")
    }
}
