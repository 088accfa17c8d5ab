import PlayoutCore
public import PlayoutJitter
public import PlayoutRTP

/// Why a track cannot be received.
extension PlayoutError.Code {
    /// The SDP's media section cannot be received (unknown codec, no payload type).
    public static let unsupportedMedia = Self("unsupportedMedia")
}

/// The receive path of one RTP track, sans-IO: datagram → SRTP unprotect → RTP parse → jitter
/// buffer → depacketizer → timeline and playout scheduler. It reads no clock and does no I/O: the
/// subscriber's intake task hands it datagrams with their arrival instants and asks
/// ``poll(now:)`` what to decode and render.
///
/// Each packet is parsed once, on intake, and its bytes copied once, into a recycled buffer of an
/// ``RTPPacketPool``; the parsed header travels with the buffer through the jitter buffer, and the
/// depacketizer gets the packet rebuilt from both. In steady state no packet allocates (SRTP's
/// cipher library aside; the `Receive` benchmark counts it), and frame buffers given back through
/// ``recycle(_:)`` are reused once nothing else holds them.
///
/// The jitter buffer's loss deadline follows the playout delay in effect (minus a decode
/// margin), so a 5 s override lets reordered packets arrive up to ≈ 5 s late.
public struct TrackPipeline {
    /// What one poll asks the caller to do.
    public typealias Action = PlayoutScheduler<EncodedFrame>.Action

    /// The track's identity and codec.
    public let track: TrackID
    public let codec: Codec
    public let payloadType: UInt8
    /// The RTP clock rate.
    public let clockRate: Int32

    private var session: SRTPSession?
    private var pool = RTPPacketPool()
    private var buffer = JitterBuffer<StoredRTPPacket>()
    private var depacketizer: any Depacketizer
    private let factory: DepacketizerFactory
    /// The frames one packet completed, handed from the depacketizer to ``accept(_:)``; kept so
    /// its capacity is reused.
    private var completedFrames: [EncodedFrame] = []
    /// The scheduler's last answer when it was to wait (or idle), and the lead it was asked with:
    /// until a frame is queued or the delay changes, its answer cannot change before that instant,
    /// so polls in between (one per packet while a frame assembles) do not ask again.
    private var schedulerAnswer = SchedulerAnswer.none
    private var schedulerAnswerLead: Duration?
    public private(set) var timeline = PlayoutTimeline()
    private var scheduler: PlayoutScheduler<EncodedFrame>
    /// How long before its render time a frame must be complete (decode margin).
    public static let decodeMargin: Duration = .milliseconds(30)
    /// Datagrams that were not RTP of this track (wrong payload type, RTCP, malformed).
    public private(set) var datagramsIgnored = 0
    /// Video frames dropped after a loss while waiting for a key frame (their references are
    /// gone; decoding them would show corrupt pictures).
    public private(set) var framesDroppedWaitingForKeyframe = 0
    /// Video waits for a key frame at the start and after a loss (nothing before it decodes).
    private var waitingForKeyframe: Bool
    /// The latest RTCP sender report.
    public private(set) var senderReport: RTCPSenderReport?
    /// The `a=extmap` id of `abs-capture-time` in the track's SDP, if it has one.
    public let absoluteCaptureTimeID: UInt8?
    /// Where capture times come from (see ``captureTime(of:)``), once known.
    public private(set) var captureClock: CaptureClock?
    /// RTCP BYE packets received (the sender said it stopped).
    public private(set) var goodbyesReceived = 0
    /// Complete frames received (assembled from packets, or from libavformat).
    public private(set) var framesReceived = 0
    /// Bytes of the frames libavformat delivered (RTP bytes are the jitter buffer's).
    private var assembledBytesReceived = 0
    /// Times the stream restarted (new SSRC, or a sequence or timestamp jump).
    public private(set) var restarts = 0
    /// RTCP datagrams that failed SRTCP authentication or parsing.
    public private(set) var controlPacketsIgnored = 0

    /// Creates the pipeline for `media` (an SDP media section) as track `track`, with the playout
    /// delay `delay`. SRTP is on when the section has an `a=crypto` line.
    ///
    /// - Throws: ``PlayoutError`` for media Playout cannot receive or a bad key.
    public init(track: TrackID, media: MediaDescription, delay: Duration) throws {
        do {
            factory = try DepacketizerFactory(media: media, track: track)
        } catch {
            throw PlayoutError(.unsupportedMedia, error.description)
        }
        self.track = track
        codec = factory.codec
        payloadType = factory.payloadType
        clockRate = factory.clockRate
        absoluteCaptureTimeID = media.extensionID(uri: AbsoluteCaptureTime.uri)
        waitingForKeyframe = codec.kind == .video
        depacketizer = factory.makeDepacketizer()
        if let crypto = media.crypto.first {
            session = try SRTPSession(keyingMaterial: SRTPKeyingMaterial(crypto: crypto), direction: .inbound)
        }
        scheduler = PlayoutScheduler(delay: delay)
        buffer.configuration.clockRate = Int(clockRate)
        completedFrames.reserveCapacity(4)
        setDelay(delay)
    }

    /// Creates the pipeline of a stream whose frames come assembled (from libavformat), as
    /// track `track`; ``receive(frame:)`` takes them.
    ///
    /// - Throws: ``PlayoutError`` for a codec Playout cannot schedule.
    public init(track: TrackID, codec: Codec, clockRate: Int32, delay: Duration) throws {
        var media = MediaDescription(kind: codec.kind == .video ? .video : .audio, port: 0, payloadTypes: [96])
        media.rtpMaps = [RTPMap(payloadType: 96, encodingName: codec.rawValue, clockRate: UInt32(max(1, clockRate)))]
        try self.init(track: track, media: media, delay: delay)
    }

    /// Takes a frame that came assembled (libavformat), with its arrival instants set.
    public mutating func receive(frame: EncodedFrame) {
        assembledBytesReceived += frame.bytes.count
        accept(frame)
    }

    /// The stream starts again (a reopened source): a new timeline, and video waits for a key
    /// frame.
    public mutating func restart() {
        schedulerAnswer = .none
        var depacketizer = self.depacketizer
        scheduler.discardQueued { depacketizer.recycle($0.bytes) }
        depacketizer = factory.makeDepacketizer()
        self.depacketizer = depacketizer
        timeline.reset()
        waitingForKeyframe = codec.kind == .video
        restarts += 1
    }

    /// The delay in effect changed (an override was set or released).
    public mutating func setDelay(_ delay: Duration) {
        schedulerAnswer = .none
        scheduler.setDelay(delay)
        buffer.configuration.maximumReorderDelay = max(.milliseconds(20), delay - Self.decodeMargin)
    }

    /// Takes one received datagram (`length` bytes at the start of `bytes`, which it may decrypt in
    /// place): RTCP multiplexed on the RTP port (RFC 5761) goes to ``receiveControl(_:length:)``;
    /// an RTP packet of the track's payload type is parsed, copied into a pooled buffer and filed
    /// in the jitter buffer; anything else is counted in ``datagramsIgnored``.
    public mutating func receive(_ bytes: UnsafeMutableRawBufferPointer, length: Int, arrival: MonotonicInstant) {
        let length = min(max(length, 0), bytes.count)
        switch MultiplexedPacketKind(classifying: UnsafeRawBufferPointer(rebasing: bytes[0..<length])) {
        case .rtcp:
            receiveControl(bytes, length: length)
            return
        case .unknown:
            datagramsIgnored += 1
            return
        case .rtp:
            break
        }
        var plain = length
        if let session {
            guard let unprotected = try? session.unprotectRTP(bytes, length: length) else {
                datagramsIgnored += 1
                return
            }
            plain = unprotected
        }
        guard let packet = try? RTPPacket(parsing: UnsafeRawBufferPointer(rebasing: bytes[0..<plain])),
              packet.payloadType == payloadType
        else {
            datagramsIgnored += 1
            return
        }
        if let id = absoluteCaptureTimeID, let capture = packet.absoluteCaptureTime(id: id) {
            captureClock = CaptureClock(absoluteCaptureTime: capture, rtpTimestamp: packet.timestamp.rawValue)
        }
        let stored = pool.store(packet)
        _ = buffer.insert(
            sequenceNumber: packet.sequenceNumber, timestamp: packet.timestamp, ssrc: packet.ssrc, isFrameEnd: packet.marker,
            byteCount: packet.payload.count, payload: stored, now: arrival
        )
    }

    /// Takes one RTCP datagram (SRTCP when the track is encrypted): sender reports give the
    /// mapping from RTP time to the sender's wall clock that end-to-end latency is measured with.
    public mutating func receiveControl(_ bytes: UnsafeMutableRawBufferPointer, length: Int) {
        var length = min(max(length, 0), bytes.count)
        if let session {
            guard let plain = try? session.unprotectRTCP(bytes, length: length) else {
                controlPacketsIgnored += 1
                return
            }
            length = plain
        }
        guard let packets = try? RTCPPacket.parseCompound(UnsafeRawBufferPointer(rebasing: bytes[0..<length])) else {
            controlPacketsIgnored += 1
            return
        }
        for packet in packets {
            switch packet {
            case .senderReport(let report):
                senderReport = report
                // A frame's own capture time beats the sender's clock at the report's instant.
                if captureClock?.source != .absoluteCaptureTime {
                    captureClock = CaptureClock(senderReport: report)
                }
            case .goodbye: goodbyesReceived += 1
            default: break
            }
        }
    }

    /// When `mediaTime` was captured, in nanoseconds since 1970 on the sender's wall clock (nil
    /// before the first capture time or sender report): from the latest `abs-capture-time`
    /// extension when the stream carries it (a frame's own capture instant; other frames are
    /// placed from it by their RTP time), else from the latest RTCP sender report (the sender's
    /// clock at the report's RTP time).
    public func captureTime(of mediaTime: MediaTime) -> Int64? {
        captureClock?.unixNanoseconds(rtpTimestamp: UInt32(truncatingIfNeeded: mediaTime.ticks), clockRate: clockRate)
    }

    /// Moves what the jitter buffer can release into frames, then says what to do at `now`: a
    /// frame to render or skip, or the instant to poll again (the earlier of the next render and
    /// the jitter buffer's next loss deadline). A frame is released `lead` before its render
    /// time (the scheduler's decode lead unless given).
    public mutating func poll(now: MonotonicInstant, lead: Duration? = nil) -> Action {
        let bufferDeadline = drainBuffer(now: now)
        let action = schedulerPoll(now: now, lead: lead)
        switch action {
        case .wait(let instant):
            return .wait(until: bufferDeadline.map { min($0, instant) } ?? instant)
        case .idle:
            return bufferDeadline.map { .wait(until: $0) } ?? .idle
        case .render, .skip:
            return action
        }
    }

    /// What ``schedulerPoll(now:lead:)`` remembers of the scheduler's last answer.
    private enum SchedulerAnswer {
        case none
        case wait(until: MonotonicInstant)
        case idle
    }

    /// The scheduler's answer at `now`, or its last one when nothing it depends on changed: the
    /// queued frames, the timeline and the delay change only through ``accept(_:)``,
    /// ``setDelay(_:)`` and ``restart()``, which forget it. Exact for a lead and a late tolerance
    /// that are not negative (a frame released at `due − lead` cannot be late before then).
    private mutating func schedulerPoll(now: MonotonicInstant, lead: Duration?) -> Action {
        switch schedulerAnswer {
        case .wait(let until) where now < until && schedulerAnswerLead == lead: return .wait(until: until)
        case .idle where schedulerAnswerLead == lead: return .idle
        default: break
        }
        let action = scheduler.poll(now: now, timeline: timeline, lead: lead)
        let configuration = scheduler.configuration
        let cacheable = (lead ?? configuration.decodeLead) >= .zero && configuration.lateTolerance >= .zero
        switch action {
        case .wait(let until) where cacheable:
            schedulerAnswer = .wait(until: until)
        case .idle where cacheable:
            schedulerAnswer = .idle
        default:
            schedulerAnswer = .none
        }
        schedulerAnswerLead = lead
        return action
    }

    /// Releases everything the jitter buffer can; returns its next deadline, if it waits for one.
    private mutating func drainBuffer(now: MonotonicInstant) -> MonotonicInstant? {
        while true {
            switch buffer.poll(now: now) {
            case .packet(let released):
                // The packet as parsed on intake: rebuilt from its stored header, not parsed again.
                var frames: [EncodedFrame] = []
                swap(&frames, &completedFrames)
                depacketizer.push(released.payload, arrival: released.arrival) { frames.append($0) }
                for frame in frames { accept(frame) }
                frames.removeAll(keepingCapacity: true)
                swap(&frames, &completedFrames)
            case .lost:
                continue  // the depacketizer sees the gap in sequence numbers and drops the frame
            case .restart:
                restart()
            case .wait(let deadline):
                return deadline
            case .empty:
                return nil
            }
        }
    }

    /// Where "wait for a key frame after loss" is decided (the depacketizer only flags the first
    /// frame after a loss): video frames after a loss are dropped until a key frame.
    private mutating func accept(_ frame: EncodedFrame) {
        schedulerAnswer = .none
        framesReceived += 1
        if codec.kind == .video {
            if frame.followsLoss, !frame.isKeyframe { waitingForKeyframe = true }
            if waitingForKeyframe {
                guard frame.isKeyframe else {
                    framesDroppedWaitingForKeyframe += 1
                    depacketizer.recycle(frame.bytes)
                    return
                }
                waitingForKeyframe = false
            }
        }
        let media = frame.mediaTime.duration
        timeline.observe(mediaTime: media, arrival: frame.firstArrival)
        scheduler.enqueue(frame, mediaTime: media, isKeyframe: frame.isKeyframe, byteCount: frame.bytes.count, arrival: frame.lastArrival)
    }

    /// Gives back the bytes of a rendered or skipped frame for reuse.
    public mutating func recycle(_ bytes: [UInt8]) {
        depacketizer.recycle(bytes)
    }

    /// Counters of every stage, as one snapshot.
    public var statistics: TrackPlayoutStatistics {
        var network = buffer.statistics
        network.bytesReceived += assembledBytesReceived
        return TrackPlayoutStatistics(
            network: network, frames: scheduler.statistics,
            playoutDelay: EffectivePlayoutDelay(delay: scheduler.delay, source: .configured)
        )
    }

    /// The depacketizer's counters (frames discarded for loss, malformed payloads).
    public var depacketizerStatistics: DepacketizerStatistics {
        depacketizer.statistics
    }

    /// SRTP counters, when the track is encrypted.
    public var srtpStatistics: SRTPSession.Statistics? {
        session?.statistics
    }

    /// The packet pool's counters: in steady state its ring stops growing and no buffer is
    /// created or enlarged.
    public var packetPoolStatistics: RTPPacketPool.Statistics {
        pool.statistics
    }
}
