// libFuzzer harnesses for every parser of the receive path, in one binary: the environment
// variable PLAYOUT_FUZZ names the harness (see Tests/Fuzz/README.md; `make fuzz` runs each).
// Every harness also checks invariants, so a wrong result is a crash, not only a wrong read.
#if canImport(Glibc)
import Glibc
#endif
import PlayoutCore
public import PlayoutRTP

/// The harnesses, by name.
public let fuzzHarnesses: [String: @Sendable (UnsafeRawBufferPointer) -> Void] = [
    "rtp": fuzzRTP,
    "rtcp": fuzzRTCP,
    "rtx": fuzzRetransmission,
    "sdp": fuzzSDP,
    // The WHEP SDP answer reader (WHEPHarness.swift).
    "sdp-answer": fuzzSDPAnswer,
    "h264": { fuzzDepacketizer($0, H264Depacketizer(track: 1, parameterSets: [[0x67, 0x42, 0xC0, 0x1E], [0x68, 0xCE]])) },
    "h265": { fuzzDepacketizer($0, H265Depacketizer(track: 1, parameterSets: [[0x40, 0x01, 0x0C], [0x42, 0x01, 0x01], [0x44, 0x01, 0xC1]])) },
    "vp8": { fuzzDepacketizer($0, VP8Depacketizer(track: 1)) },
    "vp9": { fuzzDepacketizer($0, VP9Depacketizer(track: 1)) },
    "opus": { fuzzDepacketizer($0, OpusDepacketizer(track: 1)) },
    "g711": { fuzzDepacketizer($0, G711Depacketizer(track: 1, law: .muLaw)) },
    "aac": { fuzzDepacketizer($0, AACDepacketizer(track: 1, clockRate: 48_000)) },
    // The telemetry backends' parsers and encoders (TelemetryHarnesses.swift).
    "http-response": fuzzHTTPResponse,
    "http-request": fuzzHTTPRequestHead,
    "influx-line": fuzzInfluxLine,
    "graphite": fuzzGraphite,
    "pipeline": fuzzReceivePath,
    // The publisher's RTCP handling: parse, SenderFeedback, RTX bounds, bit-rate target.
    "publisher-rtcp": fuzzPublisherFeedback,
    "dtls": fuzzDTLS,
    "stun": fuzzSTUN,
    // BUNDLE routing of SRTP and SRTCP to m-lines after a few learned sources (BundleHarness.swift).
    "bundle": fuzzBundle,
]

/// RTP parsing, RFC 8285 elements and the typed extensions.
public func fuzzRTP(_ bytes: UnsafeRawBufferPointer) {
    guard let packet = try? RTPPacket(parsing: bytes) else { return }
    precondition(packet.headerLength + packet.payload.count + packet.paddingLength == bytes.count)
    for element in packet.extensionElements {
        precondition(element.data.count <= packet.extensionData.count)
    }
    _ = packet.absoluteCaptureTime(id: 1)
    _ = packet.playoutDelay(id: 2)
    _ = packet.csrcs
}

/// RTCP compound parsing: what parses serializes and parses back to the same packets.
public func fuzzRTCP(_ bytes: UnsafeRawBufferPointer) {
    guard let packets = try? RTCPPacket.parseCompound(bytes) else { return }
    let again = RTCPPacket.serializeCompound(packets).withUnsafeBytes { try? RTCPPacket.parseCompound($0) }
    precondition(again != nil, "a parsed RTCP packet must serialize to something parseable")
}

/// RFC 4588 RTX restore, in place: what restores is the original packet (the given payload
/// type and SSRC, the OSN as its sequence number, the RTX payload after the OSN), and writing
/// it as RTX again gives the same packet back (without padding).
public func fuzzRetransmission(_ bytes: UnsafeRawBufferPointer) {
    var datagram = Array(bytes)
    let restored = datagram.withUnsafeMutableBytes { RTPRetransmission.restore($0, length: $0.count, payloadType: 96, ssrc: 0x1234_5678) }
    guard let (start, length) = restored else { return }
    precondition(start == 2 && length == bytes.count - 2, "the header moves two bytes on")
    guard let rtx = try? RTPPacket(parsing: bytes) else { preconditionFailure("only RTP restores") }
    let original = datagram[start..<start + length]
    original.withUnsafeBytes { raw in
        guard let packet = try? RTPPacket(parsing: raw) else { preconditionFailure("a restored packet parses") }
        precondition(packet.payloadType == 96 && packet.ssrc == 0x1234_5678 && packet.marker == rtx.marker && packet.timestamp == rtx.timestamp)
        precondition(packet.sequenceNumber.rawValue == UInt16(rtx.payload[0]) << 8 | UInt16(rtx.payload[1]))
        precondition(Array(packet.payload) == Array(rtx.payload.dropFirst(2).prefix(packet.payload.count)))
        var again = [UInt8](repeating: 0, count: raw.count + 2)
        let written = again.withUnsafeMutableBytes {
            RTPRetransmission.packetize(raw, into: $0, payloadType: rtx.payloadType, ssrc: rtx.ssrc, sequenceNumber: rtx.sequenceNumber.rawValue)
        }
        precondition(written != nil, "a restored packet writes back as RTX")
    }
}

/// SDP parsing: what parses serializes and parses back to the same description.
public func fuzzSDP(_ bytes: UnsafeRawBufferPointer) {
    let text = String(decoding: bytes, as: UTF8.self)
    guard let description = try? SessionDescription(parsing: text) else { return }
    for media in description.media {
        for type in media.payloadTypes {
            _ = media.rtpMap(for: type)
            if let parameters = media.formatParameters(for: type) {
                _ = parameters.spropParameterSets
                _ = parameters.profileLevelID
                _ = parameters.config
            }
        }
    }
    let again = try? SessionDescription(parsing: description.serialized())
    precondition(again == description, "parse(serialize(x)) must equal x")
}

/// A depacketizer fed a sequence of RTP packets cut from the input: each packet is a 2-byte
/// big-endian length and that many bytes. Frames must be non-empty and in timestamp order.
public func fuzzDepacketizer<D: Depacketizer>(_ bytes: UnsafeRawBufferPointer, _ depacketizer: D) {
    var depacketizer = depacketizer
    var offset = 0
    var lastTicks: Int64?
    var emitted = 0
    func check(_ frame: EncodedFrame) {
        precondition(!frame.bytes.isEmpty, "an emitted frame has bytes")
        emitted += 1
        lastTicks = frame.mediaTime.ticks
    }
    while offset + 2 <= bytes.count {
        let length = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
        offset += 2
        let end = min(offset + length, bytes.count)
        let slice = UnsafeRawBufferPointer(rebasing: bytes[offset..<end])
        offset = end
        guard let packet = try? RTPPacket(parsing: slice) else { continue }
        var frames: [EncodedFrame] = []
        depacketizer.push(packet, arrival: .zero) { frames.append($0) }
        frames.forEach(check)
        for frame in frames { depacketizer.recycle(frame.bytes) }
    }
    depacketizer.flush(emit: check)
    let statistics = depacketizer.statistics
    precondition(statistics.framesEmitted == emitted, "every emitted frame is counted")
    _ = lastTicks
}

/// The harness named by PLAYOUT_FUZZ (default "rtp"), looked up once.
let selectedHarness: @Sendable (UnsafeRawBufferPointer) -> Void = {
    let name = getenv("PLAYOUT_FUZZ").map { String(cString: $0) } ?? "rtp"
    guard let harness = fuzzHarnesses[name] else {
        fatalError("PLAYOUT_FUZZ=\(name) is not one of \(fuzzHarnesses.keys.sorted().joined(separator: ", "))")
    }
    return harness
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    selectedHarness(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
