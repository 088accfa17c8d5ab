// The receive paths the Receive benchmark compares, fed the same kind of stream: each keeps its
// receiver from one batch to the next, so what is measured is steady state.
@_spi(Pipeline) import Playout
import PlayoutCore
import PlayoutRTP
import StreamFixtures

/// A receiver and the stream it is fed, kept from one iteration to the next.
public final class Run<Receiver>: @unchecked Sendable {
    public var stream: ContinuousProtectedStream
    public var receiver: Receiver
    /// The receive loop's datagram buffer: each packet is copied in, as the socket delivers it.
    var datagram = [UInt8](repeating: 0, count: StreamShape.stride)
    /// Frames out so far.
    public private(set) var frames = 0
    /// When the receiver asked to be polled again (the pipeline's playout thread sleeps until then).
    var wake: MonotonicInstant?
    /// When the receiver's feedback is polled next, and the RTCP bytes it decided so far.
    var feedbackDue: MonotonicInstant?
    public private(set) var feedbackBytes = 0

    public init(stream: ContinuousProtectedStream, receiver: Receiver) {
        self.stream = stream
        self.receiver = receiver
    }
}

/// Intake's path: SRTP unprotect, RTP parse, H.264 depacketize, frames recycled; no jitter
/// buffer, no scheduler.
public struct IntakePath {
    public let session: SRTPSession
    public var depacketizer = H264Depacketizer(track: 1)

    public init(keys: SRTPKeyingMaterial) {
        session = try! SRTPSession(keyingMaterial: keys, direction: .inbound)
    }
}

extension Run<IntakePath> {
    public convenience init(batchSize: Int) {
        let stream = ContinuousProtectedStream(suite: .aesCM128HMACSHA1_80, batchSize: batchSize)
        self.init(stream: stream, receiver: IntakePath(keys: stream.keys))
    }

    /// Receives the current batch.
    public func feed() {
        let lengths = stream.lengths
        var finished: [UInt8]?
        var frames = 0
        stream.bytes.withUnsafeBytes { packets in
            datagram.withUnsafeMutableBytes { buffer in
                for index in 0..<lengths.count {
                    let length = Int(lengths[index])
                    buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: packets[index * StreamShape.stride..<index * StreamShape.stride + length]))
                    let plain = try! receiver.session.unprotectRTP(buffer, length: length)
                    let packet = try! RTPPacket(parsing: UnsafeRawBufferPointer(rebasing: buffer[0..<plain]))
                    receiver.depacketizer.push(packet, arrival: .zero) { frame in
                        frames += 1
                        finished = frame.bytes
                    }
                    if let bytes = finished.take() { receiver.depacketizer.recycle(bytes) }
                }
            }
        }
        self.frames += frames
    }
}

@_spi(Pipeline) extension Run<TrackPipeline> {
    /// A pipeline for the stream's SRTP H.264 track, with a playout delay of `delay` (by default
    /// the subscriber's 230 ms). With `feedback`, the track is announced as the built-in
    /// publisher does (NACK, PLI, FIR, REMB, TMMBR, RTX) and its receiver counts for reports and
    /// NACKs — ``feed(pollEveryPacket:feedbackEvery:)`` then polls its feedback too.
    public convenience init(batchSize: Int, delay: Duration = .milliseconds(230), feedback: Bool = false) {
        let stream = ContinuousProtectedStream(suite: .aesCM128HMACSHA1_80, batchSize: batchSize)
        var media = MediaDescription(kind: .video, port: 5_004, proto: .rtpSAVP, payloadTypes: [96])
        media.rtpMaps = [RTPMap(payloadType: 96, encodingName: "H264", clockRate: 90_000)]
        media.crypto = [CryptoAttribute(suite: .aesCM128HMACSHA1_80, keys: [.init(keyAndSalt: stream.keys.concatenated)])]
        if feedback {
            media.payloadTypes.append(98)
            media.rtpMaps.append(RTPMap(payloadType: 98, encodingName: "rtx", clockRate: 90_000))
            media.formatParameters.append(FormatParameters(payloadType: 98, parameters: [.init(name: "apt", value: "96")]))
            media.attributes += ["96 nack", "96 nack pli", "96 ccm fir", "96 goog-remb", "96 ccm tmmbr"].map { SDPAttribute(name: "rtcp-fb", value: $0) }
        }
        let settings = feedback ? TrackReceiver.FeedbackSettings(ssrc: 7, cname: "benchmark") : nil
        self.init(stream: stream, receiver: try! TrackPipeline(track: 1, media: media, delay: delay, feedback: settings))
    }

    /// Receives the current batch as the subscriber does: each datagram into the pipeline at its
    /// arrival (the intake thread), and a poll whenever the instant the last poll asked for has come
    /// (the playout thread wakes then: about once a frame), or at an arrival when the pipeline was
    /// idle (new data wakes it); every frame due is rendered (here: recycled at once). With
    /// `pollEveryPacket`, a poll follows every datagram instead: the most a pipeline is asked.
    ///
    /// With `feedbackEvery`, the receiver's feedback is polled at that stream-time interval (the
    /// subscriber's feedback thread does so every 10 ms at most), and what it decides is
    /// serialized as it would be sent.
    public func feed(pollEveryPacket: Bool = false, feedbackEvery: Duration? = nil) {
        let lengths = stream.lengths
        let arrivals = stream.arrivals
        var frames = 0
        stream.bytes.withUnsafeBytes { packets in
            datagram.withUnsafeMutableBytes { buffer in
                for index in 0..<lengths.count {
                    let arrival = arrivals[index]
                    if !pollEveryPacket {
                        while let wake, wake <= arrival { frames += poll(at: wake) }
                    }
                    if let feedbackEvery {
                        let due = feedbackDue ?? arrival
                        if due <= arrival {
                            for compound in receiver.pollFeedback(now: arrival)?.packets ?? [] { feedbackBytes += RTCPPacket.serializeCompound(compound).count }
                            feedbackDue = due.advanced(by: feedbackEvery)
                        }
                    }
                    let length = Int(lengths[index])
                    buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: packets[index * StreamShape.stride..<index * StreamShape.stride + length]))
                    receiver.receive(buffer, length: length, arrival: arrival)
                    if pollEveryPacket || wake == nil { frames += poll(at: arrival) }
                }
            }
        }
        self.frames += frames
    }
}

extension Run<TrackPipeline> {
    /// Polls at `now` until the pipeline waits; renders (recycles) what is due. Returns the frames.
    func poll(at now: MonotonicInstant) -> Int {
        var frames = 0
        while true {
            switch receiver.poll(now: now) {
            case .render(let frame, _), .skip(let frame, _):
                frames += 1
                receiver.recycle(frame.bytes)
            case .wait(let until):
                wake = until
                return frames
            case .idle:
                wake = nil
                return frames
            }
        }
    }
}
