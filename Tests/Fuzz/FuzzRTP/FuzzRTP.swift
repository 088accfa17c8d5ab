// libFuzzer harness: RTP parsing, header extensions, RTCP compound parsing and the H.264
// depacketizer, fed the same bytes. Build and run with `make fuzz` (see Tests/Fuzz/README.md).
import PlayoutCore
import PlayoutRTP

nonisolated(unsafe) var depacketizer = H264Depacketizer(track: 1, parameterSets: [[0x67, 0x42]])

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRTP(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    if let packet = try? RTPPacket(parsing: bytes) {
        for element in packet.extensionElements { _ = element.data.count }
        _ = packet.absoluteCaptureTime(id: 1)
        _ = packet.playoutDelay(id: 2)
        _ = packet.csrcs
        depacketizer.push(packet, arrival: .zero) { frame in precondition(!frame.bytes.isEmpty) }
    }
    if let packets = try? RTCPPacket.parseCompound(bytes) {
        // What parses must serialize and parse back to the same packets.
        let again = RTCPPacket.serializeCompound(packets).withUnsafeBytes { try? RTCPPacket.parseCompound($0) }
        precondition(again != nil)
    }
    return 0
}
