// The WHEP receive path against plain SRTP, on the same media (BundleStream): what
// `WebRTCConnection.take` does per datagram minus the socket — RFC 7983 demultiplexing, the
// BUNDLE router, then the m-line's TrackPipeline keyed by `setKeys` as after DTLS — and what a
// subscription to an SDP file does — each socket's datagrams straight into its m-line's
// pipeline, keyed by `a=crypto`. Everything after the router is the same code.
@_spi(Pipeline) import Playout
import PlayoutCore
import PlayoutRTP
import PlayoutWebRTC
import StreamFixtures

/// Two m-lines' pipelines (video, audio) and the stream they are fed, kept from one batch to the
/// next so what is measured is steady state; for `.bundle` also the transport's demultiplexer and
/// router.
@_spi(Pipeline) public final class BundleRun: @unchecked Sendable {
    public var stream: BundleStream
    /// The m-lines' pipelines, in the router's order (video, audio).
    public private(set) var pipelines: [TrackPipeline]
    /// `.bundle`: RFC 7983 demultiplexing, and the transport's router as WHEPSource builds it
    /// from the answer — private stored properties of a class, as in WebRTCConnection, so each
    /// packet's two mutating calls are checked for exclusivity at run time as they are there
    /// (≈ 270 instructions a packet; `@exclusivity(unchecked)` on both removes them).
    private var demultiplexer = DatagramDemultiplexer()
    private var router: BundleRouter
    /// Datagrams of the batch the path did not hand to a pipeline (must stay 0).
    public private(set) var datagramsDropped = 0
    /// Frames out so far, per m-line.
    public private(set) var frames = [0, 0]
    /// The receive loop's datagram buffer: each packet is copied in, as the socket delivers it.
    private var datagram = [UInt8](repeating: 0, count: StreamShape.stride)
    /// When each pipeline asked to be polled again.
    private var wakes: [MonotonicInstant?] = [nil, nil]

    /// The m-lines of `shape` protected with `suite`, `batchSize` packets a batch, each with the
    /// subscriber's 230 ms playout delay.
    public init(shape: BundleShape, suite: SRTPCryptoSuite, batchSize: Int) {
        let stream = BundleStream(shape: shape, suite: suite, batchSize: batchSize)
        var pipelines: [TrackPipeline] = []
        for (index, kind) in [MediaKind.video, .audio].enumerated() {
            let media = Self.media(kind: kind, shape: shape, key: stream.sdesKeys[index], suite: suite)
            var pipeline = try! TrackPipeline(track: TrackID(rawValue: UInt32(index + 1)), media: media, delay: .milliseconds(230), keysFromDTLS: shape == .bundle)
            if shape == .bundle { try! pipeline.setKeys(stream.dtlsKeys.inbound) }
            pipelines.append(pipeline)
        }
        self.stream = stream
        self.pipelines = pipelines
        router = BundleRouter(
            routes: [
                .init(mid: BundleShape.mids[0], payloadTypes: [BundleShape.videoPayloadType]),
                .init(mid: BundleShape.mids[1], payloadTypes: [BundleShape.audioPayloadType]),
            ],
            midExtensionID: BundleShape.midExtensionID
        )
    }

    /// An m-line as the path's signalling describes it: an SDP file's `RTP/SAVP` section with
    /// `a=crypto`, or a WHEP answer's `UDP/TLS/RTP/SAVPF` section with its extmaps (no key: DTLS
    /// gives it).
    static func media(kind: MediaKind, shape: BundleShape, key: SRTPKeyingMaterial, suite: SRTPCryptoSuite) -> MediaDescription {
        let video = kind == .video
        let payloadType = video ? BundleShape.videoPayloadType : BundleShape.audioPayloadType
        var media = MediaDescription(
            kind: video ? .video : .audio, port: video ? 5_004 : 5_006, proto: shape == .plain ? .rtpSAVP : TransportProtocol(rawValue: "UDP/TLS/RTP/SAVPF"),
            payloadTypes: [payloadType]
        )
        media.rtpMaps = [
            video
                ? RTPMap(payloadType: payloadType, encodingName: "H264", clockRate: 90_000)
                : RTPMap(payloadType: payloadType, encodingName: "opus", clockRate: UInt32(BundleShape.audioClockRate), channels: 2)
        ]
        switch shape {
        case .plain:
            media.crypto = [CryptoAttribute(suite: SDPCryptoSuite(rawValue: suite.rawValue), keys: [.init(keyAndSalt: key.concatenated)])]
        case .bundle:
            media.rtcpMux = true
            media.extensionMaps = [
                ExtensionMap(id: UInt16(BundleShape.midExtensionID), uri: WHEPOffer.midExtensionURI),
                ExtensionMap(id: UInt16(BundleShape.captureTimeExtensionID), uri: AbsoluteCaptureTime.uri),
            ]
        }
        return media
    }

    /// Receives the current batch as the subscriber does: each datagram at its arrival — for
    /// `.bundle` classified (RFC 7983) and routed (BUNDLE) first, for `.plain` from the socket of
    /// its m-line — and each pipeline polled whenever the instant it asked for has come, or at an
    /// arrival when it was idle; every frame due is rendered (here: recycled at once).
    public func feed() {
        let lengths = stream.lengths
        let arrivals = stream.arrivals
        let tracks = stream.tracks
        let bundle = stream.shape == .bundle
        stream.bytes.withUnsafeBytes { packets in
            datagram.withUnsafeMutableBytes { buffer in
                for index in 0..<lengths.count {
                    let arrival = arrivals[index]
                    for track in 0..<2 {
                        while let wake = wakes[track], wake <= arrival { poll(track, at: wake) }
                    }
                    let length = Int(lengths[index])
                    buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: packets[index * StreamShape.stride..<index * StreamShape.stride + length]))
                    let track: Int
                    if bundle {
                        let bytes = UnsafeRawBufferPointer(rebasing: buffer[0..<length])
                        switch demultiplexer.classify(bytes) {
                        case .rtp:
                            guard let route = router.route(rtp: bytes) else {
                                datagramsDropped += 1
                                continue
                            }
                            pipelines[route].receive(buffer, length: length, arrival: arrival)
                            track = route
                        case .rtcp:
                            guard let route = router.route(rtcp: bytes) else {
                                datagramsDropped += 1
                                continue
                            }
                            pipelines[route].receiveControl(buffer, length: length, arrival: arrival)
                            track = route
                        case .stun, .dtls, .unknown:
                            datagramsDropped += 1
                            continue
                        }
                    } else {
                        track = tracks[index]
                        pipelines[track].receive(buffer, length: length, arrival: arrival)
                    }
                    if wakes[track] == nil { poll(track, at: arrival) }
                }
            }
        }
    }

    /// Polls m-line `track` at `now` until it waits; renders (recycles) what is due.
    private func poll(_ track: Int, at now: MonotonicInstant) {
        while true {
            switch pipelines[track].poll(now: now) {
            case .render(let frame, _), .skip(let frame, _):
                frames[track] += 1
                pipelines[track].recycle(frame.bytes)
            case .wait(let until):
                wakes[track] = until
                return
            case .idle:
                wakes[track] = nil
                return
            }
        }
    }

    /// `.bundle`: the demultiplexer's and the router's counters.
    public var demultiplexerStatistics: DatagramDemultiplexer.Statistics { demultiplexer.statistics }
    public var routerStatistics: BundleRouter.Statistics { router.statistics }

    /// Whether the batch went through untouched: no datagram dropped or ignored, no packet lost,
    /// no frame discarded; for `.bundle` both SSRCs placed by their mid, once.
    public var isClean: Bool {
        let routed = stream.shape == .plain || (router.statistics.sourcesByMid == 2 && router.statistics.packetsUnrouted == 0)
        return routed && datagramsDropped == 0
            && pipelines.allSatisfy {
                $0.datagramsIgnored == 0 && $0.depacketizerStatistics.framesDiscarded == 0 && $0.statistics.network.packetsLost == 0
            }
    }

    /// Packet buffers the pipelines' pools created so far (constant in steady state).
    public var buffersCreated: Int { pipelines.reduce(0) { $0 + $1.packetPoolStatistics.buffersCreated } }
}
