// The whole receive path of one track, fuzzed (issue 13 item 8): the input becomes a sequence of
// (arrival time, datagram) events mixing a real H.264 stream with mutated and foreign packets,
// fed to a TrackPipeline on a manual timeline with a real decoder; then the real stream goes on
// alone and must render again. Invariants: no crash, bounded memory, counters within what was
// sent, and the real frames of the tail's second key-frame interval all render.
@_spi(Pipeline) import Playout
import PlayoutCodec
import PlayoutCore
import PlayoutRTP
import PlayoutSender

/// The real stream: 30 frames of a 256×32 test pattern (the smallest that carries its frame
/// number), H.264 with a key frame every 5 frames, as plain RTP datagrams per frame.
struct FuzzStream: Sendable {
    static let frameCount = 30
    static let keyframeInterval = 5
    /// Frames from here on are the tail, sent after the fuzzed part.
    static let tailStart = 20
    /// The datagrams of each frame, in order.
    let frames: [[[UInt8]]]
    let ssrc: UInt32 = 0x5EED_F00D

    static let shared: FuzzStream = {
        FFmpegLibrary.setLogLevel(.quiet)
        let pattern = TestPattern(width: 256, height: 32)
        // swiftlint:disable:next force_try
        let encoder = try! FFmpegEncoder(video: .init(codec: .h264, width: 256, height: 32, frameRate: 30, bitrate: 100_000, keyframeInterval: keyframeInterval, threadCount: 1))
        var encoded: [EncodedFrame] = []
        for index in 0..<frameCount {
            try! encoder.encode(picture: pattern.picture(frameNumber: UInt32(index), captureTimeMilliseconds: 0), timestamp: Int64(index) * 3_000) { encoded.append($0) }
        }
        try! encoder.flush { encoded.append($0) }
        var sender = try! TrackSender(codec: .h264, payloadType: 96, clockRate: 90_000, keyingMaterial: nil, ssrc: 0x5EED_F00D, firstSequenceNumber: 65_530)
        var frames: [[[UInt8]]] = []
        for frame in encoded {
            var datagrams: [[UInt8]] = []
            try! sender.send(frame, captureTime: nil) { datagrams.append($0) }
            frames.append(datagrams)
        }
        return FuzzStream(frames: frames)
    }()

    /// The SDP media section the pipeline receives.
    static var media: MediaDescription {
        var media = MediaDescription(kind: .video, port: 5_004, proto: .rtpAVP, payloadTypes: [96])
        media.rtpMaps = [RTPMap(payloadType: 96, encodingName: "H264", clockRate: 90_000)]
        return media
    }
}

/// Reads the fuzzer's bytes in order; zero once they run out.
struct FuzzReader {
    let bytes: UnsafeRawBufferPointer
    var offset = 0
    var isAtEnd: Bool { offset >= bytes.count }

    mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func uint16() -> UInt16 { UInt16(byte()) << 8 | UInt16(byte()) }
    mutating func uint32() -> UInt32 { UInt32(uint16()) << 16 | UInt32(uint16()) }

    mutating func take(_ count: Int) -> [UInt8] {
        let end = min(offset + count, bytes.count)
        defer { offset = end }
        return Array(bytes[offset..<end])
    }
}

/// The harness: see the file's comment. Opcodes (one byte each, then their operands):
/// 0 real datagram · 1 real datagram with one byte changed · 2 foreign bytes · 3 real datagram
/// with a new sequence number, timestamp or SSRC · 4 RTCP bytes · 5 an RTP header of the
/// stream's payload type and a foreign SSRC · others: time passes. Each event comes 0–63 ms after
/// the previous one.
public func fuzzReceivePath(_ bytes: UnsafeRawBufferPointer) {
    let stream = FuzzStream.shared
    var reader = FuzzReader(bytes: bytes)
    guard var pipeline = try? TrackPipeline(track: 1, media: FuzzStream.media, delay: .milliseconds(100)),
          let decoder = try? FFmpegDecoder(codec: .h264, configuration: .init(threadCount: 1))
    else { fatalError("the pipeline and decoder open") }
    var now = MonotonicInstant(nanoseconds: 1_000_000_000)
    var delivered = 0
    var seenSSRCs = Set<UInt32>()
    var renderedNumbers: [UInt32] = []
    var rendered = 0

    func deliver(_ datagram: [UInt8], at arrival: MonotonicInstant, control: Bool = false) {
        var datagram = datagram
        for offset in [4, 8] where datagram.count >= offset + 4 {
            seenSSRCs.insert(datagram[offset..<offset + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        }
        datagram.withUnsafeMutableBytes {
            if control {
                pipeline.receiveControl($0, length: $0.count)
            } else {
                pipeline.receive($0, length: $0.count, arrival: arrival)
            }
        }
        delivered += 1
    }
    /// Polls up to `until`, carrying out every action at the instant it asks for.
    func run(until end: MonotonicInstant) {
        var clock = now
        var turns = 0
        while clock <= end, turns < 10_000 {
            turns += 1
            switch pipeline.poll(now: clock) {
            case .render(let frame, _):
                rendered += 1
                try? decoder.decode(frame) { if let code = TestPattern.read($0) { renderedNumbers.append(code.frameNumber) } }
                pipeline.recycle(frame.bytes)
            case .skip(let frame, .decodeWithoutRender):
                try? decoder.decode(frame, output: false)
                pipeline.recycle(frame.bytes)
            case .skip(let frame, .drop):
                pipeline.recycle(frame.bytes)
            case .wait(until: let instant):
                guard instant > clock else { continue }
                if instant > end { clock = end.advanced(by: .nanoseconds(1)) } else { clock = instant }
            case .idle:
                clock = end.advanced(by: .nanoseconds(1))
            }
        }
        precondition(turns < 10_000, "the pipeline keeps answering at one instant")
        now = max(now, end)
    }

    // The fuzzed part: real datagrams of the head in order, mixed with mutations and strangers.
    let head = stream.frames[..<FuzzStream.tailStart].flatMap { $0 }
    var next = 0
    var events = 0
    while !reader.isAtEnd, events < 400 {
        events += 1
        let op = reader.byte()
        let arrival = now.advanced(by: .milliseconds(Int64(reader.byte() & 0x3F)))
        run(until: arrival)
        switch op % 8 {
        case 0 where next < head.count:
            deliver(head[next], at: arrival)
            next += 1
        case 1 where next < head.count:
            var datagram = head[next]
            next += 1
            let position = Int(reader.uint16()) % max(1, datagram.count)
            datagram[position] = reader.byte()
            deliver(datagram, at: arrival)
        case 2:
            deliver(reader.take(Int(reader.byte()) * 8), at: arrival)
        case 3 where next < head.count:
            var datagram = head[next]
            next += 1
            let field = Int(reader.byte() % 3)
            let value = reader.uint32()
            let (offset, width) = [(2, 2), (4, 4), (8, 4)][field]
            for index in 0..<width { datagram[offset + index] = UInt8(truncatingIfNeeded: value >> UInt32(8 * (width - 1 - index))) }
            deliver(datagram, at: arrival)
        case 4:
            deliver(reader.take(Int(reader.byte()) * 4), at: arrival, control: true)
        case 5:
            let ssrc = reader.uint32()
            let sequence = reader.uint16()
            let timestamp = reader.uint32()
            var datagram: [UInt8] = [0x80, 96, UInt8(sequence >> 8), UInt8(sequence & 0xFF)]
            for shift in stride(from: 24, through: 0, by: -8) { datagram.append(UInt8(truncatingIfNeeded: timestamp >> UInt32(shift))) }
            for shift in stride(from: 24, through: 0, by: -8) { datagram.append(UInt8(truncatingIfNeeded: ssrc >> UInt32(shift))) }
            deliver(datagram + reader.take(Int(reader.byte())), at: arrival)
        default:
            break
        }
    }
    let fuzzed = delivered

    // The garbage stops. After 1.5 s of silence (longer than the switch timeout, so whatever
    // was played gives way) the sender comes back as a new source, an SSRC nothing used before
    // (its sequence numbers and timestamps go on): the tail of the real stream, in real time.
    var tailSSRC: UInt32 = 0x7A11_0000
    while seenSSRCs.contains(tailSSRC) { tailSSRC &+= 1 }
    let tailOrigin = now.advanced(by: .milliseconds(1_500))
    for (offset, frame) in stream.frames[FuzzStream.tailStart...].enumerated() {
        let arrival = tailOrigin.advanced(by: .milliseconds(Int64(offset) * 33))
        run(until: arrival)
        for var datagram in frame {
            for index in 0..<4 { datagram[8 + index] = UInt8(truncatingIfNeeded: tailSSRC >> UInt32(24 - 8 * index)) }
            deliver(datagram, at: arrival)
        }
    }
    run(until: now.advanced(by: .seconds(2)))
    // What the decoder still holds (garbage can raise its reorder delay) comes out at the end.
    try? decoder.flush { if let code = TestPattern.read($0) { renderedNumbers.append(code.frameNumber) } }

    // Every real frame of the tail from its second key frame on renders.
    let mustRender = UInt32(FuzzStream.tailStart + FuzzStream.keyframeInterval)..<UInt32(FuzzStream.frameCount)
    let seen = Set(renderedNumbers)
    precondition(
        mustRender.allSatisfy(seen.contains),
        "the real stream renders again once the garbage stops: rendered \(renderedNumbers.suffix(20)); \(pipeline.statistics.frames); \(pipeline.sourceStatistics); \(pipeline.statistics.network); restarts \(pipeline.restarts), received \(pipeline.framesReceived)"
    )
    // Counters stay within what was sent; memory stays bounded.
    let network = pipeline.statistics.network
    let intake = pipeline.intakeStatistics
    let sources = pipeline.sourceStatistics
    precondition(network.packetsReceived <= delivered && network.packetsDuplicated <= delivered)
    precondition(intake.datagramsUndecodable + intake.packetsWrongPayloadType + sources.packetsFromOtherSources <= fuzzed)
    precondition(rendered <= pipeline.framesReceived)
    // The delay never changes here: nothing is skipped (late frames are counted apart).
    let frames = pipeline.statistics.frames
    precondition(frames.framesSkipped == 0 && frames.totalSkippedDuration == .zero, "skipped \(frames.framesSkipped) frames, \(frames.totalSkippedDuration)")
    precondition(pipeline.packetPoolStatistics.ringSize <= 4 * RTPPacketPool.initialRingSize, "pool ring \(pipeline.packetPoolStatistics.ringSize)")
}
