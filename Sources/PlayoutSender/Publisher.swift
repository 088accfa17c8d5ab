#if canImport(Glibc)
import Glibc
#endif
import Logging
import Playout
public import PlayoutCodec
public import PlayoutCore
public import PlayoutRTP
import PlayoutWebRTC

/// The built-in test sender: streams a synthetic moving test pattern (H.264 or VP8, with the
/// frame number and capture time drawn into each picture) and a tone (Opus), or a file's
/// H.264/VP8/Opus streams passed through, as RTP or SRTP in real time to a host and port — video
/// on the port, audio on the port + 2, RTCP on the next odd ports — with sender reports and the
/// `abs-capture-time` extension, through a seeded ``NetworkImpairment`` (one simulated link for
/// all its tracks). It answers its receivers as a real-time sender does (``Options/feedback``):
/// RTX for NACKs, a key frame for PLI/FIR, its video bit rate for REMB/TMMBR, and what they
/// report (loss, RTT) in its ``Statistics``.
///
/// ```swift
/// let publisher = try Publisher(options: .init(destination: SocketAddress(host: "127.0.0.1", port: 5004)))
/// try publisher.sessionDescription.serialized().write(toFile: "stream.sdp", atomically: true, encoding: .utf8)
/// try publisher.start()
/// let statistics = publisher.waitUntilEnded()
/// ```
public final class Publisher: @unchecked Sendable {
    /// What is sent.
    public enum Source: Equatable, Sendable {
        /// The synthetic moving pattern and a 440 Hz tone, encoded live.
        case testPattern
        /// A media file's streams, passed through without re-encoding.
        case file(path: String)
    }

    /// Publisher settings.
    public struct Options: Sendable {
        /// What is sent: the test pattern or a file.
        public var source: Source
        /// Where video goes; audio goes to its port + 2.
        public var destination: SocketAddress
        /// Test-pattern video: codec (H.264 or VP8), size, rate, bitrate, key-frame interval.
        public var video: FFmpegEncoder.VideoSettings
        /// Whether to send the tone as Opus (test pattern).
        public var sendsAudio: Bool
        /// SRTP keying (nil: plain RTP).
        public var keyingMaterial: SRTPKeyingMaterial?
        /// The simulated network between publisher and receiver.
        public var impairment: NetworkImpairment.Configuration
        /// How long to send (nil: until ``Publisher/stop()``, or the file's end).
        public var duration: Duration?
        /// How often each track sends an RTCP sender report.
        public var senderReportInterval: Duration
        /// Whether the publisher takes feedback (default true): its video section announces
        /// `a=rtcp-fb` `nack pli`, `ccm fir`, `goog-remb`, `ccm tmmbr` (and `nack` with RTX) and
        /// `a=rtcp-xr:rcvr-rtt=all`; it forces a key frame for a PLI or a new FIR, follows the
        /// lower of the latest REMB and TMMBR with its video bit rate, answers receiver
        /// reference times with DLRR, and keeps what receivers report (loss, jitter, RTT) in
        /// ``Statistics``. False: it announces and answers nothing (as ffmpeg does).
        public var feedback: Bool
        /// Whether NACKs are answered with RTX (RFC 4588) from a bounded retransmission buffer
        /// (default true; needs ``feedback``). False: no `nack` and no RTX payload type in the SDP,
        /// so a receiver repairs a loss with a key-frame request.
        public var retransmission: Bool
        /// Serve WHEP subscribers (ICE-lite, DTLS-SRTP) on this endpoint instead of sending to
        /// ``destination`` (which is then unused): see ``WHEPEndpoint`` and ``Publisher/whepEndpoint``.
        /// The impairment applies to each session's media on its own (seeds: seed + session number).
        public var whep: WHEPEndpoint.Configuration?
        /// How many viewers' streams one encode is sent as (default 1), the way an SFU serves an
        /// audience (`Docs/Fanout.md`): stream *i* goes to the destination's host at each port +
        /// *i* × ``SessionDescription/fanoutStride`` (4 with audio, 2 for video alone), with its
        /// own SSRC per track (viewer 0's + *i*), sequence-number and timestamp offsets, SRTP
        /// session and keys (``SRTPKeyingMaterial/fannedOut(viewer:)``), simulated network (seed
        /// + *i*), sender reports and feedback: a viewer's NACKs are answered on its stream only,
        /// and only from its addresses. There is one encoder, so a PLI or FIR from any viewer
        /// makes one key frame for all, and the video bit rate follows the lowest REMB/TMMBR.
        /// ``Publisher/sessionDescription`` is viewer 0's; viewer *i*'s is
        /// `sessionDescription.fannedOut(viewer: i)`. Not with ``whep`` (each WHEP session is
        /// already its own stream).
        public var fanout: Int = 1

        /// Options with the documented defaults: the test pattern (720p30 H.264 + Opus), plain RTP, no impairment, until stopped, a sender report every second.
        public init(
            source: Source = .testPattern, destination: SocketAddress, video: FFmpegEncoder.VideoSettings = .init(),
            sendsAudio: Bool = true, keyingMaterial: SRTPKeyingMaterial? = nil,
            impairment: NetworkImpairment.Configuration = .init(), duration: Duration? = nil,
            senderReportInterval: Duration = .seconds(1), feedback: Bool = true, retransmission: Bool = true,
            whep: WHEPEndpoint.Configuration? = nil, fanout: Int = 1
        ) {
            self.whep = whep
            self.fanout = fanout
            self.feedback = feedback
            self.retransmission = retransmission
            self.source = source
            self.destination = destination
            self.video = video
            self.sendsAudio = sendsAudio
            self.keyingMaterial = keyingMaterial
            self.impairment = impairment
            self.duration = duration
            self.senderReportInterval = senderReportInterval
        }

        /// The destination ports a publisher can send to: it uses four from the destination's
        /// port PORT — video RTP on PORT, its RTCP on PORT+1, audio RTP on PORT+2, its RTCP on
        /// PORT+3 — so PORT is 1…65532.
        public static let destinationPorts: ClosedRange<UInt16> = 1...(UInt16.max - 3)

        /// Checks the options a ``Publisher`` is created with (its initializer calls this).
        ///
        /// - Throws: ``PlayoutError`` with code `invalidAddress` when the destination's port is
        ///   outside ``destinationPorts`` (0, or so high that PORT+3 passes 65535).
        public func validate() throws(PlayoutError) {
            guard fanout >= 1 else {
                throw PlayoutError(.invalidOption, "Publisher.Options.fanout \(fanout): the number of viewers' streams must be 1 or more, e.g. 100")
            }
            guard fanout == 1 || whep == nil else {
                throw PlayoutError(.invalidOption, "Publisher.Options.fanout \(fanout) with whep: a WHEP endpoint already serves each session its own stream; leave fanout at 1")
            }
            guard whep != nil || Self.destinationPorts.contains(destination.port) else {
                throw PlayoutError(
                    .invalidAddress,
                    "Publisher.Options.destination \(destination): the publisher sends to PORT (video), PORT+1 (its RTCP), PORT+2 (audio) and PORT+3 (its RTCP), so the port must be from \(Self.destinationPorts.lowerBound) to \(Self.destinationPorts.upperBound); Publisher.freeLoopbackDestination() gives four free ones on 127.0.0.1"
                )
            }
        }
    }

    /// What the publisher did, per track and on the simulated link.
    public struct Statistics: Equatable, Sendable {
        /// What one track sent, and what the simulated network delivered of it.
        public struct Track: Equatable, Sendable {
            /// The codec sent.
            public var codec: Codec
            /// Frames handed to the packetizer.
            public var framesSent = 0
            /// RTP packets produced (before the simulated network).
            public var packetsSent = 0
            /// RTP payload bytes produced.
            public var payloadBytesSent = 0
            /// Distinct RTP packets the simulated network delivered.
            public var packetsDelivered = 0
            /// The packets a receiver can tell were lost (RFC 3550): missing between the first
            /// and the last packet delivered. Losses before the first or after the last delivered
            /// packet leave no gap to see.
            public var packetsLostBetweenDelivered: Int {
                guard let first = firstDelivered else { return 0 }
                return lastDelivered - first + 1 - packetsDelivered
            }
            /// RTX packets sent in answer to NACKs (before the simulated network), and their bytes.
            public var retransmittedPacketsSent = 0
            public var retransmittedBytesSent = 0
            /// What the retransmission bounds let through and refused (bit-rate budget, resends
            /// per packet, one round trip apart): see ``RetransmissionLimiter``.
            public var retransmissionLimits = RetransmissionLimiter.Statistics()
            /// Key frames encoded because a receiver asked (PLI or a new FIR).
            public var keyFramesForced = 0
            /// The video bit rate the encoder aims at now (nil: not encoded here).
            public var targetBitrate: Int?
            /// What receivers sent back about this track: reports (loss, jitter, RTT) and feedback.
            public var feedback = SenderFeedback.Statistics()
            var firstDelivered: Int?
            var lastDelivered = 0
            var delivered = Bitmap()
        }

        /// Per track, by kind.
        public var tracks: [MediaKind: Track] = [:]
        /// What the simulated network did to the RTP packets (RTCP is not impaired).
        public var network = NetworkImpairment.Statistics()
        /// RTCP sender reports sent (all tracks).
        public var senderReportsSent = 0
        /// RTCP datagrams received that failed SRTCP authentication or did not parse.
        public var rtcpUndecodable = 0
        /// RTCP datagrams that parsed and came from where the stream goes (its RTP or RTCP
        /// destination): the only ones acted on.
        public var rtcpAccepted = 0
        /// RTCP datagrams refused unread because they came from another address or port than the
        /// stream's destination (``Publisher/acceptsFeedback(from:destinations:)``). With
        /// ``fanout``: from no viewer's address.
        public var rtcpRefused = 0
        /// The WHEP endpoint's sessions and requests (nil: not serving WHEP). With WHEP,
        /// ``tracks`` count the frames encoded and the packets packetized once; each session's
        /// packets, NACKs and RTX are in ``WHEPEndpoint/Statistics/sessions``.
        public var whep: WHEPEndpoint.Statistics?
        /// The streams of a fan-out (nil: ``Options/fanout`` 1). Then ``tracks`` count the frames
        /// encoded and the canonical packets packetized once, with the feedback of every viewer
        /// added up; ``network``, the RTCP counters and ``senderReportsSent`` add up every
        /// stream's; each stream's own counts are in ``FanoutStatistics/perStream``
        /// (``Statistics/Track/packetsDelivered`` stays 0: each stream's network is in its own).
        public var fanout: FanoutStatistics?
    }

    /// The options it was created with.
    public let options: Options
    /// The SDP a receiver needs (`a=crypto` when SRTP).
    public let sessionDescription: SessionDescription

    private struct OutTrack {
        var kind: MediaKind
        var sender: TrackSender
        /// Where packets go (nil: WHEP, where the router sends them).
        var rtp: UDPSender?
        /// Sends the sender reports and takes the receivers' RTCP (symmetric RTCP, RFC 4961);
        /// nil with WHEP.
        var rtcp: UDPReceiver?
        var rtcpDestination: SocketAddress
        /// Where RTCP is taken from: the track's RTP and RTCP destinations (normalized).
        var feedbackSources: Set<SocketAddress>
        /// SRTCP for what receivers send, when encrypted.
        var rtcpSession: SRTPSession?
        var feedback: SenderFeedback
        /// The demuxer stream index (file source).
        var streamIndex: Int?
        var streamClockRate: Int32
    }

    private let logger = Logger(label: "playout.publisher")
    private let clock = MonotonicClock()
    /// Start once, stop, finish with the error that ended the run early (if any).
    private let lifecycle = RunLifecycle<PublisherOutcome>()
    private let statisticsValue = LockedValue(Statistics())
    private var tracks: [OutTrack] = []
    private let videoEncoder: FFmpegEncoder?
    private let audioEncoder: FFmpegEncoder?
    private let demuxer: FFmpegDemuxer?
    private var impairment: NetworkImpairment
    /// The WHEP endpoint (nil: sending to the destination) and its media side.
    public let whepEndpoint: WHEPEndpoint?
    private let router: WHEPRouter?
    /// The fan-out's streams and send path (nil: ``Options/fanout`` 1).
    private let fanout: FanoutRouter?

    /// How many viewers a fan-out of `description` fits below port 65536 (0: not even one).
    package static func maximumFanout(from description: SessionDescription) -> Int {
        let stride = description.fanoutStride
        guard stride > 0, let highest = description.highestFanoutPort(viewers: 1), highest <= Int(UInt16.max) else { return 0 }
        return (Int(UInt16.max) - highest) / stride + 1
    }

    /// The payload types and extension id the publisher uses.
    static let videoPayloadType: UInt8 = 96
    static let audioPayloadType: UInt8 = 97
    static let absoluteCaptureTimeID: UInt8 = 1
    static let retransmissionPayloadType: UInt8 = 98
    /// The share of a receiver's bandwidth limit the video encoder aims at: the rest is headroom
    /// for RTP headers and the rate control's overshoot.
    static let bitrateLimitShare = 0.8

    /// The video bit rate the encoder aims at under a receiver's `limit` (nil: none): the
    /// ``bitrateLimitShare`` of it, never above `configured` — in integer arithmetic that cannot
    /// overflow or trap whatever the limit (a TMMBR can ask for up to 2^64 bit/s).
    package static func videoTarget(configured: Int, limit: UInt64?) -> Int {
        guard let limit else { return configured }
        let share = limit / 5 * 4 + (limit % 5) * 4 / 5  // 0.8 × limit, rounded down, no overflow
        return min(configured, Int(clamping: share))
    }

    /// Whether RTCP from `source` is taken: only from where the stream goes (`destinations`: a
    /// track's RTP and RTCP destination, normalized), as a real sender accepts feedback only from
    /// its receiver's transport. Anything else is counted in ``Statistics/rtcpRefused``.
    package static func acceptsFeedback(from source: SocketAddress?, destinations: Set<SocketAddress>) -> Bool {
        guard let source else { return false }
        return destinations.contains(source.normalized)
    }

    /// Opens the encoders (or the file) and the sockets, and builds the SDP; nothing is sent
    /// before ``start()``.
    ///
    /// - Throws: ``PlayoutError`` for a file without H.264, VP8 or Opus, an encoder that cannot
    ///   open, an unreachable destination or an invalid impairment.
    public init(options: Options) throws {
        try options.validate()
        self.options = options
        impairment = try NetworkImpairment(configuration: options.impairment)
        var streams: [(kind: MediaKind, codec: Codec, clockRate: Int32, channels: Int, streamIndex: Int?, streamClockRate: Int32, width: Int, height: Int)] = []
        switch options.source {
        case .testPattern:
            guard options.video.codec == .h264 || options.video.codec == .vp8 else {
                throw PlayoutError(.unsupportedMedia, "the test pattern is encoded as H.264 or VP8, not \(options.video.codec.rawValue)")
            }
            let video = try FFmpegEncoder(video: options.video, track: 0)
            videoEncoder = video
            streams.append((.video, video.codec, video.clockRate, 0, nil, video.clockRate, options.video.width, options.video.height))
            if options.sendsAudio {
                let audio = try FFmpegEncoder(audio: .init(), track: 1)
                audioEncoder = audio
                streams.append((.audio, audio.codec, audio.clockRate, 2, nil, audio.clockRate, 0, 0))
            } else {
                audioEncoder = nil
            }
            demuxer = nil
        case .file(let path):
            let demuxer = try FFmpegDemuxer(url: path)
            self.demuxer = demuxer
            videoEncoder = nil
            audioEncoder = nil
            for kind in [MediaKind.video, .audio] {
                guard let stream = demuxer.streams.first(where: { $0.kind == kind && [.h264, .vp8, .vp9, .h265, .opus].contains($0.codec) }),
                      let codec = stream.codec else { continue }
                let rate: Int32 = kind == .video ? 90_000 : 48_000
                streams.append((kind, codec, rate, max(stream.channelCount, 1), stream.index, stream.clockRate, stream.width, stream.height))
            }
            guard !streams.isEmpty else {
                throw PlayoutError(.unsupportedMedia, "\(path) has no H.264, H.265, VP8, VP9 or Opus stream to send (re-encode it, e.g. ffmpeg -i in -c:v libx264 -c:a libopus out.mkv)")
            }
        }
        var media: [MediaDescription] = []
        // A fan-out packetizes once, in plain RTP ("canonical" packets); each viewer's stream
        // rewrites and protects them. Its SSRCs: track t of viewer i sends on base + 2tN + i,
        // its RTX on base + (2t+1)N + i — distinct across viewers and tracks.
        let fansOut = options.fanout > 1
        let ssrcBase = UInt32.random(in: 1...UInt32.max)
        func fanoutSSRC(track: Int, retransmission: Bool, viewer: Int) -> UInt32 {
            ssrcBase &+ UInt32(truncatingIfNeeded: (2 * track + (retransmission ? 1 : 0)) * options.fanout + viewer)
        }
        for stream in streams {
            let payloadType = stream.kind == .video ? Self.videoPayloadType : Self.audioPayloadType
            let port = options.destination.port &+ (stream.kind == .video ? 0 : 2)
            let address = try SocketAddress(host: options.destination.host, port: port)
            var sender = try TrackSender(
                codec: stream.codec, payloadType: payloadType, clockRate: stream.clockRate, keyingMaterial: fansOut ? nil : options.keyingMaterial,
                absoluteCaptureTimeID: Self.absoluteCaptureTimeID
            )
            let answersFeedback = options.feedback && stream.kind == .video
            let serves = options.whep != nil || fansOut
            // With WHEP the track's packets are canonical (plain RTP): the router keeps them for NACKs
            // and rewrites them per session.
            if answersFeedback, options.retransmission, !serves { sender.enableRetransmission(payloadType: Self.retransmissionPayloadType) }
            let rtcp = serves ? nil : try UDPReceiver(bindingTo: SocketAddress(host: options.destination.isIPv6 ? "::" : "0.0.0.0", port: 0))
            tracks.append(OutTrack(
                kind: stream.kind, sender: sender, rtp: serves ? nil : try UDPSender(to: address), rtcp: rtcp,
                rtcpDestination: try SocketAddress(host: options.destination.host, port: port &+ 1),
                feedbackSources: Set([address, try SocketAddress(host: options.destination.host, port: port &+ 1)].map(\.normalized)),
                rtcpSession: fansOut ? nil : try options.keyingMaterial.map { try SRTPSession(keyingMaterial: $0, direction: .inbound) },
                feedback: SenderFeedback(ssrc: sender.ssrc),
                streamIndex: stream.streamIndex, streamClockRate: stream.streamClockRate
            ))
            var section = MediaDescription(
                kind: stream.kind == .video ? .video : .audio, port: port, proto: options.keyingMaterial == nil ? .rtpAVP : .rtpSAVP,
                payloadTypes: [payloadType],
                rtpMaps: [RTPMap(
                    payloadType: payloadType, encodingName: stream.codec.rawValue, clockRate: UInt32(stream.clockRate),
                    channels: stream.kind == .audio ? UInt16(stream.channels) : nil
                )],
                extensionMaps: [ExtensionMap(id: UInt16(Self.absoluteCaptureTimeID), uri: AbsoluteCaptureTime.uri)],
                direction: .sendonly,
                frameRate: stream.kind == .video && options.source == .testPattern ? Double(options.video.frameRate) : nil
            )
            if stream.codec == .h264 {
                section.formatParameters = [FormatParameters(payloadType: payloadType, parameters: [.init(name: "packetization-mode", value: "1")])]
            }
            if answersFeedback {
                Self.announceFeedback(
                    in: &section, payloadType: payloadType, clockRate: UInt32(stream.clockRate), retransmission: options.retransmission,
                    encodes: options.source == .testPattern
                )
            }
            if fansOut {
                // Viewer 0's SSRCs: `fannedOut(viewer: i)` moves them up by i, as the streams do.
                let index = media.count
                let ssrc = fanoutSSRC(track: index, retransmission: false, viewer: 0)
                section.ssrcAttributes.append(SSRCAttribute(ssrc: ssrc, name: "cname", value: "playout"))
                if answersFeedback, options.retransmission {
                    let rtx = fanoutSSRC(track: index, retransmission: true, viewer: 0)
                    section.attributes.append(SDPAttribute(name: "ssrc-group", value: "FID \(ssrc) \(rtx)"))
                    section.ssrcAttributes.append(SSRCAttribute(ssrc: rtx, name: "cname", value: "playout"))
                }
            }
            if let key = options.keyingMaterial {
                section.crypto = [CryptoAttribute(suite: SDPCryptoSuite(rawValue: key.suite.name), keys: [.init(keyAndSalt: key.concatenated)])]
            }
            media.append(section)
        }
        if let configuration = options.whep {
            let liteTracks = tracks.map { track in
                let answers = options.feedback && track.kind == .video
                let encodes = options.source == .testPattern
                var feedback: [RTCPFeedbackCapability] = []
                if answers, options.retransmission { feedback.append(.nack(nil)) }
                if answers, encodes { feedback += [.pictureLoss(nil), .fullIntraRequest(nil), .receiverEstimatedMaximumBitrate(nil), .temporaryMaximumBitrate(nil)] }
                return WHEPLiteTrack(
                    codec: track.sender.codec, clockRate: UInt32(track.sender.clockRate), channels: track.kind == .audio ? 2 : nil,
                    feedback: feedback, retransmission: answers && options.retransmission, ssrc: track.sender.ssrc
                )
            }
            let endpoint = try WHEPEndpoint(configuration: configuration, tracks: liteTracks, h264ProfileLevelID: "640c1f")
            whepEndpoint = endpoint
            router = endpoint.makeRouter(
                kinds: tracks.map(\.kind), codecs: tracks.map(\.sender.codec), impairment: options.impairment,
                retransmission: tracks.map { options.feedback && options.retransmission && $0.kind == .video }
            )
            router?.captureTimeID = Self.absoluteCaptureTimeID
        } else {
            whepEndpoint = nil
            router = nil
        }
        let description = SessionDescription(
            sessionName: "playout publish",
            connection: ConnectionData(addressType: options.destination.isIPv6 ? .ip6 : .ip4, address: options.destination.host),
            media: media
        )
        sessionDescription = description
        if fansOut {
            let stride = description.fanoutStride
            let highest = description.highestFanoutPort(viewers: options.fanout) ?? .max
            guard highest <= Int(UInt16.max) else {
                throw PlayoutError(
                    .invalidAddress,
                    "fanout \(options.fanout) from port \(options.destination.port): viewer \(options.fanout - 1) would need port \(highest) (viewer i at each port + i × \(stride)), above 65535: fan out to at most \(Self.maximumFanout(from: description)) viewers or start from a lower port"
                )
            }
            let encodes = options.source == .testPattern
            var viewers: [FanoutStream] = []
            viewers.reserveCapacity(options.fanout)
            for viewer in 0..<options.fanout {
                let plans = try tracks.enumerated().map { index, track in
                    let port = media[index].port &+ UInt16(viewer * stride)
                    let answers = options.feedback && track.kind == .video
                    return FanoutStream.TrackPlan(
                        kind: track.kind, payloadType: track.sender.payloadType, clockRate: track.sender.clockRate,
                        ssrc: fanoutSSRC(track: index, retransmission: false, viewer: viewer),
                        retransmission: answers && options.retransmission
                            ? (Self.retransmissionPayloadType, fanoutSSRC(track: index, retransmission: true, viewer: viewer)) : nil,
                        captureTimeID: Self.absoluteCaptureTimeID,
                        destination: try SocketAddress(host: options.destination.host, port: port),
                        controlDestination: try SocketAddress(host: options.destination.host, port: port &+ 1),
                        answersRequests: answers && encodes
                    )
                }
                viewers.append(try FanoutStream(viewer: viewer, tracks: plans, keyingMaterial: options.keyingMaterial, impairment: options.impairment))
            }
            fanout = try FanoutRouter(
                streams: viewers, stride: stride, retransmission: tracks.map { options.feedback && options.retransmission && $0.kind == .video },
                captureTimeID: Self.absoluteCaptureTimeID, ipv6: options.destination.isIPv6
            )
        } else {
            fanout = nil
        }
        statisticsValue.withLock { statistics in
            for track in tracks { statistics.tracks[track.kind] = Statistics.Track(codec: track.sender.codec) }
            if let video = videoEncoder { statistics.tracks[.video]?.targetBitrate = video.bitrate }
            if let fanout { statistics.fanout = FanoutStatistics(streams: fanout.streams.count, stride: fanout.stride) }
        }
    }

    /// Announces the feedback the publisher answers in a video section: `a=rtcp-fb` lines,
    /// RFC 3611 receiver RTT, and (with retransmission) `nack` and the RTX payload type. Key
    /// frames on request and bit-rate limits only when it `encodes` (a file is passed through).
    static func announceFeedback(in section: inout MediaDescription, payloadType: UInt8, clockRate: UInt32, retransmission: Bool, encodes: Bool) {
        var kinds: [RTCPFeedbackCapability] = encodes ? [
            .pictureLoss(payloadType), .fullIntraRequest(payloadType), .receiverEstimatedMaximumBitrate(payloadType), .temporaryMaximumBitrate(payloadType),
        ] : []
        if retransmission {
            kinds.insert(.nack(payloadType), at: 0)
            section.payloadTypes.append(retransmissionPayloadType)
            section.rtpMaps.append(RTPMap(payloadType: retransmissionPayloadType, encodingName: "rtx", clockRate: clockRate))
            section.formatParameters.append(FormatParameters(payloadType: retransmissionPayloadType, parameters: [.init(name: "apt", value: String(payloadType))]))
        }
        section.attributes += kinds.map { SDPAttribute(name: "rtcp-fb", value: $0.attributeValue) }
        section.attributes.append(SDPAttribute(name: "rtcp-xr", value: "rcvr-rtt=all"))
    }

    /// What was sent so far.
    public var statistics: Statistics {
        var statistics = statisticsValue.withLock { $0 }
        statistics.whep = whepEndpoint?.statistics
        return statistics
    }

    /// Where each track takes its receivers' RTCP (an ephemeral port on every interface; its
    /// sender reports leave from it, so a receiver that answers where reports come from finds it).
    /// With ``Options/fanout`` above 1 it is one port for every viewer and track.
    public var controlPorts: [MediaKind: UInt16] {
        if let fanout { return Dictionary(tracks.map { ($0.kind, fanout.controlPort) }, uniquingKeysWith: { first, _ in first }) }
        return Dictionary(tracks.compactMap { track in track.rtcp.map { (track.kind, $0.localAddress.port) } }, uniquingKeysWith: { first, _ in first })
    }

    /// Starts sending on a thread of its own.
    public func start() throws {
        try lifecycle.begin("a publisher")
        try startThread(named: "playout-publish") { [self] in
            do {
                try run()
                lifecycle.finish(PublisherOutcome(error: nil))
            } catch {
                logger.error("publishing failed: \(error)")
                lifecycle.finish(PublisherOutcome(error: error))
            }
        }
    }

    /// Stops sending after the current frame.
    public func stop() {
        lifecycle.requestStop()
    }

    /// Blocks until the publisher ends (duration, file end, ``stop()``); returns its statistics.
    ///
    /// - Throws: what stopped it early (an encoder or socket error).
    @discardableResult
    public func waitUntilEnded() throws -> Statistics {
        let outcome = lifecycle.wait()
        if let error = outcome.error { throw error }
        return statistics
    }

    /// The send loop: produce what is due, pass it through the simulated network, sleep until
    /// the next thing is due.
    private func run() throws {
        let start = clock.now
        let wallStart = MonotonicClock().wallClockNanoseconds
        let end = options.duration.map { start.advanced(by: $0) }
        let pattern = TestPattern(width: options.video.width, height: options.video.height)
        let frameInterval = Duration.seconds(1) / max(options.video.frameRate, 1)
        var videoFrames = 0
        var audioBlocks = 0
        let audioBlock = Duration.seconds(Double(audioEncoder?.audioFrameSize ?? 960) / 48_000)
        var nextReport = start
        var nextFileFrame: EncodedFrame? = nil
        var fileStart: [Int: Int64] = [:]
        var pacer = RealTimePacer(clock: clock)  // one origin for every stream, as a live sender
        var fileEnded = false
        var forceKeyFrame = false
        var warnedLate = false

        while !lifecycle.isStopRequested {
            if receiveFeedback(now: clock.now, wallStart: wallStart, start: start) { forceKeyFrame = true }
            let now = clock.now
            if let end, now >= end { break }
            var wake = end ?? now.advanced(by: .seconds(1))
            // Media due now.
            if let encoder = videoEncoder {
                let due = start.advanced(by: frameInterval * videoFrames)
                if now >= due {
                    if !warnedLate, due.duration(to: now) > Self.lateWarning {
                        // Said once: a sender that cannot keep up makes every viewer's stream late.
                        warnedLate = true
                        let audience = options.fanout > 1 ? " to \(options.fanout) viewers" : ""
                        logger.warning(
                            "the publisher cannot keep up in real time\(audience): frame \(videoFrames) is \(due.duration(to: now).compactDescription) late (the machine is busy\(options.fanout > 1 ? ", or fan out to fewer viewers" : ""))"
                        )
                    }
                    let capture = wallStart + start.duration(to: due).nanoseconds
                    let picture = pattern.picture(frameNumber: UInt32(videoFrames), captureTimeMilliseconds: UInt32(truncatingIfNeeded: capture / 1_000_000))
                    let ticks = Int64(videoFrames) * Int64(encoder.clockRate) / Int64(max(options.video.frameRate, 1))
                    var encoded: [EncodedFrame] = []
                    try encoder.encode(picture: picture, timestamp: ticks, forceKeyFrame: forceKeyFrame) { encoded.append($0) }
                    if forceKeyFrame { statisticsValue.withLock { $0.tracks[.video]?.keyFramesForced += 1 } }
                    forceKeyFrame = false
                    for frame in encoded { try send(frame, track: 0, captureTime: capture, now: now) }
                    videoFrames += 1
                }
                wake = min(wake, start.advanced(by: frameInterval * videoFrames))
            }
            if let encoder = audioEncoder, let index = tracks.firstIndex(where: { $0.kind == .audio }) {
                let due = start.advanced(by: audioBlock * audioBlocks)
                if now >= due {
                    let capture = wallStart + start.duration(to: due).nanoseconds
                    let size = encoder.audioFrameSize
                    var samples = [Float](repeating: 0, count: size * 2)
                    for sample in 0..<size {
                        let value = Float(0.2 * sin(2 * Double.pi * 440 * Double(audioBlocks * size + sample) / 48_000))
                        samples[2 * sample] = value
                        samples[2 * sample + 1] = value
                    }
                    var encoded: [EncodedFrame] = []
                    try encoder.encode(samples: samples, timestamp: Int64(audioBlocks * size)) { encoded.append($0) }
                    for frame in encoded { try send(frame, track: index, captureTime: capture, now: now) }
                    audioBlocks += 1
                }
                wake = min(wake, start.advanced(by: audioBlock * audioBlocks))
            }
            if let demuxer, !fileEnded {
                // Pass the file's frames through at their media times (the -re behaviour).
                while true {
                    if nextFileFrame == nil {
                        nextFileFrame = try demuxer.read()
                        if nextFileFrame == nil {
                            fileEnded = true
                            break
                        }
                    }
                    guard var frame = nextFileFrame else { break }
                    guard let index = tracks.firstIndex(where: { $0.streamIndex == Int(frame.track.rawValue) }) else {
                        nextFileFrame = nil
                        continue
                    }
                    let origin = fileStart[index] ?? frame.mediaTime.ticks
                    fileStart[index] = origin
                    let due = pacer.dueInstant(for: frame.mediaTime.duration)
                    guard now >= due else {
                        wake = min(wake, due)
                        break
                    }
                    let rate = tracks[index].sender.clockRate
                    frame.mediaTime = MediaTime(ticks: (frame.mediaTime.ticks - origin) * Int64(rate) / Int64(max(frame.mediaTime.clockRate, 1)), clockRate: rate)
                    try send(frame, track: index, captureTime: wallStart + start.duration(to: due).nanoseconds, now: now)
                    nextFileFrame = nil
                }
            }
            // Sender reports (not impaired: control traffic is kept reliable on purpose).
            if now >= nextReport {
                // Stamped when sent, not when the loop turn began (encoding a picture takes
                // milliseconds): a receiver's RTT is measured against these instants.
                let sent = clock.now
                let wall = wallStart + start.duration(to: sent).nanoseconds
                func canonicalTimestamp(_ index: Int) -> UInt32? {
                    guard tracks.indices.contains(index) else { return nil }
                    return tracks[index].sender.rtpTimestamp(ticks: start.duration(to: sent).nanoseconds * Int64(tracks[index].sender.clockRate) / 1_000_000_000)
                }
                router?.sendReports(wallClock: wall, canonicalTimestamp: canonicalTimestamp, now: sent)
                if let fanout {
                    fanout.sendReports(wallClock: wall, canonicalTimestamp: canonicalTimestamp, now: sent)
                    publishFanoutStatistics(fanout)
                }
                for index in tracks.indices where router == nil && fanout == nil {
                    let ticks = start.duration(to: sent).nanoseconds * Int64(tracks[index].sender.clockRate) / 1_000_000_000
                    let extras = tracks[index].feedback.senderReportExtras(now: sent)
                    if let report = try? tracks[index].sender.senderReport(wallClock: wall, ticks: ticks, extras: extras) {
                        try? report.withUnsafeBytes { try tracks[index].rtcp?.send($0, to: tracks[index].rtcpDestination) }
                    }
                }
                if fanout == nil { statisticsValue.withLock { $0.senderReportsSent += tracks.count } }
                nextReport = nextReport.advanced(by: options.senderReportInterval)
            }
            wake = min(wake, nextReport)
            // The simulated network releases what is due.
            let networkNext = flushNetwork(now: clock.now)
            if fileEnded { break }
            wake = min(wake, networkNext ?? wake)
            waitForFeedback(until: wake)
        }
        drainNetwork()
    }

    /// Sleeps until `wake`, or until a receiver's RTCP arrives (at most ``feedbackWait`` at a
    /// time, so a stop is seen soon).
    private func waitForFeedback(until wake: MonotonicInstant) {
        if let router {
            // STUN, DTLS and RTCP of every WHEP session arrive on the one socket.
            router.wait(until: wake, now: clock.now, limit: Self.feedbackWait)
            return
        }
        if let fanout, options.feedback {
            // Every viewer's RTCP arrives on the one socket.
            fanout.wait(until: wake, now: clock.now, limit: Self.feedbackWait)
            return
        }
        guard options.feedback else {
            lifecycle.sleep(until: wake)
            return
        }
        var descriptors = tracks.compactMap { $0.rtcp.map { pollfd(fd: $0.fileDescriptor, events: Int16(POLLIN), revents: 0) } }
        let wait = min(clock.now.duration(to: wake), Self.feedbackWait)
        guard wait > .zero else { return }
        _ = poll(&descriptors, nfds_t(descriptors.count), Int32(clamping: (wait.nanoseconds + 999_999) / 1_000_000))
    }

    /// How late a frame may be encoded before the publisher warns (once) that it cannot keep up.
    static let lateWarning: Duration = .seconds(1)

    /// The longest the send loop waits without looking at the receivers' RTCP and a stop.
    static let feedbackWait: Duration = .milliseconds(20)

    /// Takes what receivers sent on each track's RTCP port and acts on it: RTX for NACKs (into
    /// the simulated network), the video bit rate for REMB/TMMBR. Returns whether a receiver
    /// asked for a key frame.
    private func receiveFeedback(now: MonotonicInstant, wallStart: Int64, start: MonotonicInstant) -> Bool {
        if let router { return serveWHEP(router, now: now, wallStart: wallStart, start: start) }
        if let fanout { return serveFanout(fanout, now: now, wallStart: wallStart, start: start) }
        var keyFrame = false
        for index in tracks.indices {
            var actions: [SenderFeedback.Action] = []
            var undecodable = 0
            var (accepted, refused) = (0, 0)
            while true {
                let received = (try? tracks[index].rtcp?.receive(timeout: .zero) { datagram in
                    guard Self.acceptsFeedback(from: datagram.source, destinations: tracks[index].feedbackSources) else {
                        refused += 1
                        return
                    }
                    var length = datagram.bytes.count
                    if let session = tracks[index].rtcpSession {
                        guard let plain = try? session.unprotectRTCP(datagram.mutableBytes, length: length) else {
                            undecodable += 1
                            return
                        }
                        length = plain
                    }
                    guard let packets = try? RTCPPacket.parseCompound(UnsafeRawBufferPointer(rebasing: datagram.bytes[0..<length])) else {
                        undecodable += 1
                        return
                    }
                    let wall = wallStart + start.duration(to: datagram.arrival).nanoseconds
                    accepted += 1
                    actions += tracks[index].feedback.receive(packets, now: datagram.arrival, arrivalNTP: NTPTime.ntp(unixNanoseconds: wall))
                }) ?? 0
                if received == 0 { break }
            }
            // No packet is resent twice within the round trip the receiver reports.
            tracks[index].sender.retransmissionRoundTripTime = tracks[index].feedback.statistics.roundTripTime
            for action in actions where options.feedback {
                switch action {
                case .retransmit(let lost):
                    var number = 0
                    _ = try? tracks[index].sender.retransmit(lost, now: now) { datagram in
                        // Labelled apart (bit 7): RTX is not a first delivery of a packet.
                        impairment.submit(datagram, label: number << 8 | 0x80 | index, now: now)
                        number += 1
                    }
                case .keyFrame:
                    if tracks[index].kind == .video { keyFrame = true }
                case .bitrateLimit(let limit):
                    guard tracks[index].kind == .video, let encoder = videoEncoder else { continue }
                    let target = Self.videoTarget(configured: options.video.bitrate, limit: limit)
                    encoder.setBitrate(target)
                    logger.info("video bit rate \(target) bit/s (a receiver's limit: \(limit.map(String.init) ?? "none"))")
                }
            }
            let track = tracks[index]
            statisticsValue.withLock { statistics in
                statistics.rtcpUndecodable += undecodable
                statistics.rtcpAccepted += accepted
                statistics.rtcpRefused += refused
                if let limits = track.sender.retransmissionLimits { statistics.tracks[track.kind]?.retransmissionLimits = limits }
                statistics.tracks[track.kind]?.feedback = track.feedback.statistics
                statistics.tracks[track.kind]?.retransmittedPacketsSent = track.sender.retransmittedPacketsSent
                statistics.tracks[track.kind]?.retransmittedBytesSent = track.sender.retransmittedBytesSent
                if track.kind == .video, let encoder = videoEncoder { statistics.tracks[.video]?.targetBitrate = encoder.bitrate }
            }
        }
        if !tracks.isEmpty { _ = flushNetwork(now: now) }
        return keyFrame
    }

    /// The WHEP side of a loop turn: new sessions and DELETEs, every datagram on the media
    /// socket, then what the subscribers asked for — a key frame, or the video bit rate under the
    /// lowest of their limits (one encode serves them all). Returns whether a key frame is due.
    private func serveWHEP(_ router: WHEPRouter, now: MonotonicInstant, wallStart: Int64, start: MonotonicInstant) -> Bool {
        let requests = router.service(now: now, wallClock: wallStart + start.duration(to: now).nanoseconds)
        if let limit = requests.bitrateLimit, let encoder = videoEncoder {
            let target = Self.videoTarget(configured: options.video.bitrate, limit: limit)
            encoder.setBitrate(target)
            logger.info("video bit rate \(target) bit/s (the lowest WHEP subscriber's limit: \(limit.map(String.init) ?? "none"))")
            statisticsValue.withLock { $0.tracks[.video]?.targetBitrate = target }
        }
        router.poll(now: now)
        return requests.keyFrame
    }

    /// The fan-out side of a loop turn: every viewer's RTCP (each acted on for its own stream:
    /// RTX, reports), then what the viewers asked of the one encoder — a key frame for all, or the
    /// video bit rate under the lowest of their limits. Returns whether a key frame is due.
    private func serveFanout(_ fanout: FanoutRouter, now: MonotonicInstant, wallStart: Int64, start: MonotonicInstant) -> Bool {
        let requests = fanout.service(now: now, wallClock: wallStart + start.duration(to: now).nanoseconds)
        guard options.feedback else { return false }
        if let limit = requests.bitrateLimit, let encoder = videoEncoder {
            let target = Self.videoTarget(configured: options.video.bitrate, limit: limit)
            encoder.setBitrate(target)
            logger.info("video bit rate \(target) bit/s (the lowest fan-out viewer's limit: \(limit.map(String.init) ?? "none"))")
            statisticsValue.withLock { $0.tracks[.video]?.targetBitrate = target }
        }
        _ = fanout.poll(now: now)
        return requests.keyFrame
    }

    /// Publishes the fan-out's counters into ``statistics``: per stream, and added up into the
    /// publisher-wide fields (network, RTCP, sender reports, each track's feedback).
    private func publishFanoutStatistics(_ fanout: FanoutRouter) {
        let snapshot = fanout.statistics
        var network = NetworkImpairment.Statistics()
        var accepted = 0
        var undecodable = 0
        var reports = 0
        var feedback: [MediaKind: SenderFeedback.Statistics] = [:]
        var retransmitted: [MediaKind: Int] = [:]
        var limits: [MediaKind: RetransmissionLimiter.Statistics] = [:]
        for stream in snapshot.perStream {
            network.add(stream.network)
            accepted += stream.rtcpAccepted
            undecodable += stream.feedbackRefused
            reports += stream.senderReportsSent
            for (kind, track) in stream.tracks {
                feedback[kind, default: .init()].add(track.feedback)
                retransmitted[kind, default: 0] += track.retransmittedPacketsSent
                limits[kind, default: .init()].add(track.retransmissionLimits)
            }
        }
        statisticsValue.withLock { statistics in
            statistics.fanout = snapshot
            statistics.network = network
            statistics.rtcpAccepted = accepted
            statistics.rtcpUndecodable = undecodable
            statistics.rtcpRefused = snapshot.rtcpRefused
            statistics.senderReportsSent = reports
            for (kind, values) in feedback {
                statistics.tracks[kind]?.feedback = values
                statistics.tracks[kind]?.retransmittedPacketsSent = retransmitted[kind] ?? 0
                statistics.tracks[kind]?.retransmissionLimits = limits[kind] ?? .init()
            }
        }
    }

    /// The end of a run: delivers what the simulated network still holds for at most its
    /// ``NetworkImpairment/Configuration/drainLimit`` (1–2 s), then drops the rest, counted in
    /// ``NetworkImpairment/Statistics/datagramsDroppedAtEnd`` — so `--duration` bounds the run
    /// whatever the jitter. A stop (Ctrl-C, ``stop()``) ends the drain at once.
    private func drainNetwork() {
        if let router {
            // Every session ends (close_notify); HTTP stops taking offers.
            router.endAll(now: clock.now)
            whepEndpoint?.stop()
        }
        let limit = impairment.configuration.drainLimit
        let deadline = clock.now.advanced(by: limit)
        while let next = flushNetwork(now: clock.now, drainDeadline: deadline), lifecycle.sleep(until: next) {}
        impairment.discardPending()
        if let fanout {
            fanout.discardPending()
            publishFanoutStatistics(fanout)
            let network = statisticsValue.withLock { $0.network }
            if network.datagramsDroppedAtEnd > 0 {
                logger.info("\(network.datagramsDroppedAtEnd) datagrams were still in the viewers' simulated networks at the end: dropped (datagramsDroppedAtEnd)")
            }
            return
        }
        let network = impairment.statistics
        statisticsValue.withLock { $0.network = network }
        let dropped = network.datagramsDroppedAtEnd
        guard dropped > 0 else { return }
        if lifecycle.isStopRequested {
            logger.info("stopped with \(dropped) datagrams still in the simulated network: dropped")
        } else {
            logger.warning("\(dropped) datagrams would have left the simulated network more than \(limit.compactDescription) after the end: dropped (datagramsDroppedAtEnd)")
        }
    }

    /// Sends `frame` on track `index` into the simulated network.
    private func send(_ frame: EncodedFrame, track index: Int, captureTime: Int64, now: MonotonicInstant) throws {
        // Each datagram is labelled with its track and packet number, to count what arrives.
        var number = tracks[index].sender.packetsSent
        try tracks[index].sender.send(frame, captureTime: captureTime, now: now) { datagram in
            if let router {
                router.distribute(datagram, track: index, now: now)
            } else if let fanout {
                fanout.distribute(datagram, track: index, now: now)
            } else {
                impairment.submit(datagram, label: number << 8 | index, now: now)
            }
            number += 1
        }
        let sender = tracks[index].sender
        statisticsValue.withLock { statistics in
            statistics.tracks[tracks[index].kind]?.framesSent = sender.framesSent
            statistics.tracks[tracks[index].kind]?.packetsSent = sender.packetsSent
            statistics.tracks[tracks[index].kind]?.payloadBytesSent = sender.payloadBytesSent
        }
        _ = flushNetwork(now: now)
    }

    /// Sends every datagram the simulated network releases by `now`; returns when it releases
    /// the next (nil: it holds nothing). With a `drainDeadline` (the end of a run), what would
    /// leave after it is dropped instead (see ``NetworkImpairment/drain(now:deadline:)``).
    @discardableResult
    private func flushNetwork(now: MonotonicInstant, drainDeadline: MonotonicInstant? = nil) -> MonotonicInstant? {
        defer {
            if fanout == nil {
                let network = impairment.statistics
                statisticsValue.withLock { $0.network = network }
            }
        }
        if let router { return router.poll(now: now) }
        if let fanout { return fanout.poll(now: now, drainDeadline: drainDeadline) }
        while true {
            let output = drainDeadline.map { impairment.drain(now: now, deadline: $0) } ?? impairment.poll(now: now)
            switch output {
            case .send(let datagram, let label):
                let track = tracks[label & 0x7F]
                if label & 0x80 == 0 {
                    statisticsValue.withLock { statistics in
                        statistics.tracks[track.kind]?.recordDelivery(of: label >> 8)
                    }
                }
                do {
                    try track.rtp?.send(datagram)
                } catch {
                    logger.debug("sending to \(track.rtp?.destination.description ?? "-") failed: \(error)")  // e.g. nobody listens yet
                }
            case .wait(let instant):
                return instant
            case .idle:
                return nil
            }
        }
    }
}

extension Publisher.Statistics.Track {
    /// Counts packet `number` as delivered (once, however many copies).
    mutating func recordDelivery(of number: Int) {
        guard delivered.insert(number) else { return }
        packetsDelivered += 1
        firstDelivered = min(firstDelivered ?? number, number)
        lastDelivered = max(lastDelivered, number)
    }
}

/// A growable set of small non-negative integers, one bit each.
struct Bitmap: Equatable, Sendable {
    private var words: [UInt64] = []

    /// Adds `value`; false when it was already there.
    mutating func insert(_ value: Int) -> Bool {
        let (word, bit) = value.quotientAndRemainder(dividingBy: 64)
        if word >= words.count { words.append(contentsOf: repeatElement(0, count: word + 1 - words.count)) }
        let mask = UInt64(1) << UInt64(bit)
        defer { words[word] |= mask }
        return words[word] & mask == 0
    }
}

/// How a publisher's run ended: cleanly, or with the error that stopped it.
struct PublisherOutcome: Sendable {
    var error: (any Error)?
}
