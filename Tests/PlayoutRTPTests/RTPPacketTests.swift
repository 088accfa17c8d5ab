import PlayoutCore
import PlayoutRTP
import PropertyBased
import PlayoutTesting
import Testing

/// Parses `bytes` and hands the packet to `body` while the bytes are alive.
func withRTPPacket<R>(_ bytes: [UInt8], _ body: (RTPPacket) throws -> R) throws -> R {
    try bytes.withUnsafeBytes { try body(try RTPPacket(parsing: $0)) }
}

@Suite("RTP packets (RFC 3550, RFC 8285)")
struct RTPPacketTests {
    @Test("parses the fixed header and the payload in place")
    func fixedHeader() throws {
        // V=2, M=1, PT=96, seq 0xABCD, ts 0x00015F90 (90000), SSRC 0x12345678, payload DE AD BE EF.
        let bytes = [UInt8](hex: "80 E0 AB CD 00 01 5F 90 12 34 56 78 DE AD BE EF")
        try bytes.withUnsafeBytes { buffer in
            let packet = try RTPPacket(parsing: buffer)
            #expect(packet.marker)
            #expect(packet.payloadType == 96)
            #expect(packet.sequenceNumber == 0xABCD)
            #expect(packet.timestamp == 90_000)
            #expect(packet.ssrc == 0x1234_5678)
            #expect(packet.csrcCount == 0)
            #expect(packet.extensionProfile == nil)
            #expect(Array(packet.payload) == [0xDE, 0xAD, 0xBE, 0xEF])
            #expect(packet.payload.baseAddress == buffer.baseAddress! + 12, "a view, not a copy")
            #expect(packet.headerLength == 12)
        }
    }

    @Test("CSRCs and padding")
    func csrcsAndPadding() throws {
        // CC=2, P=1: two CSRCs, payload 01 02, then 3 bytes of padding (00 00 03).
        let bytes = [UInt8](hex: "A2 08 00 01 00 00 00 00 00 00 00 01 11 11 11 11 22 22 22 22 01 02 00 00 03")
        try withRTPPacket(bytes) { packet in
            #expect(packet.payloadType == 8)
            #expect(packet.csrcs == [0x1111_1111, 0x2222_2222])
            #expect(Array(packet.payload) == [1, 2])
            #expect(packet.paddingLength == 3)
        }
    }

    @Test("one-byte header extensions with padding between elements (RFC 8285 §4.2)")
    func oneByteExtensions() throws {
        // Extension 0xBEDE, 3 words: id 1 len 1 (AA), two padding bytes, id 6 (playout-delay) len 3,
        // then id 2 len 2 (BB CC), then padding to the word boundary.
        let bytes = [UInt8](hex: "90 60 00 01 00 00 00 00 00 00 00 01  BE DE 00 03  10 AA 00 00 62 01 90 C8 21 BB CC 00  FF")
        try withRTPPacket(bytes) { packet in
            #expect(packet.extensionProfile == 0xBEDE)
            let elements = packet.extensionElements.map { ($0.id, Array($0.data)) }
            #expect(elements.map(\.0) == [1, 6, 2])
            #expect(elements[0].1 == [0xAA])
            #expect(elements[2].1 == [0xBB, 0xCC])
            // 0x0190C8: min 0x019 = 25 → 250 ms, max 0x0C8 = 200 → 2 s.
            #expect(packet.playoutDelay(id: 6) == PlayoutDelayLimits(minimum: .milliseconds(250), maximum: .seconds(2)))
            #expect(packet.headerExtension(id: 9) == nil)
            #expect(Array(packet.payload) == [0xFF])
        }
    }

    @Test("two-byte header extensions carry long elements and ids above 14")
    func twoByteExtensions() throws {
        let capture = AbsoluteCaptureTime(captureTimestamp: 0xE7A1_0000_8000_0000, estimatedCaptureClockOffset: -42)
        let header = RTPPacketBuilder(payloadType: 111, ssrc: 7, extensions: [
            .init(id: 3, bytes: capture.bytes),  // 16 bytes: still one-byte form would allow, but…
            .init(id: 20, bytes: [1, 2, 3]),  // …id 20 forces the two-byte form
        ])
        let bytes = try header.serialized(payload: [9, 9])
        try withRTPPacket(bytes) { packet in
            #expect(packet.extensionProfile == 0x1000)
            #expect(packet.absoluteCaptureTime(id: 3) == capture)
            #expect(packet.headerExtension(id: 20).map(Array.init) == [1, 2, 3])
            #expect(Array(packet.payload) == [9, 9])
        }
    }

    @Test("the builder picks the one-byte form when every element fits it")
    func builderPicksOneByte() throws {
        let header = RTPPacketBuilder(payloadType: 96, ssrc: 1, extensions: [.init(id: 6, bytes: PlayoutDelayLimits(minimum: .zero, maximum: .seconds(1)).bytes)])
        let bytes = try header.serialized(payload: [])
        #expect(Array(bytes[12..<16]) == [0xBE, 0xDE, 0x00, 0x01])
        #expect(Array(bytes[16..<20]) == [0x62, 0x00, 0x00, 0x64])
    }

    @Test("an unknown extension profile is skipped; its elements are not interpreted")
    func opaqueExtension() throws {
        let bytes = [UInt8](hex: "90 60 00 01 00 00 00 00 00 00 00 01  AB CD 00 01  10 AA 00 00  77")
        try withRTPPacket(bytes) { packet in
            #expect(packet.extensionProfile == 0xABCD)
            #expect(Array(packet.extensionElements).isEmpty)
            #expect(Array(packet.payload) == [0x77])
        }
    }

    @Test("a malformed element ends the element list without failing the packet")
    func malformedElement() throws {
        // One-byte element id 1 claims 16 bytes in a 4-byte block.
        let bytes = [UInt8](hex: "90 60 00 01 00 00 00 00 00 00 00 01  BE DE 00 01  1F AA BB CC")
        try withRTPPacket(bytes) { packet in
            #expect(Array(packet.extensionElements).isEmpty)
            #expect(packet.payload.isEmpty)
        }
    }

    @Test("bad packets are clear errors", arguments: [
        ("80 60 00 01 00 00 00 00 00 00 00", RTPParseError.truncated(needed: 12, available: 11)),
        ("40 60 00 01 00 00 00 00 00 00 00 01", .unsupportedVersion(1)),
        ("83 60 00 01 00 00 00 00 00 00 00 01 00 00 00 00", .truncated(needed: 24, available: 16)),
        ("90 60 00 01 00 00 00 00 00 00 00 01 BE DE 00 02 00 00 00 00", .truncated(needed: 24, available: 20)),
        ("A0 60 00 01 00 00 00 00 00 00 00 01 00", .invalidPadding(count: 0, available: 1)),
        ("A0 60 00 01 00 00 00 00 00 00 00 01 AA 05", .invalidPadding(count: 5, available: 2)),
        ("90 60 00 01 00 00 00 00 00 00 00 01 BE DE", .truncated(needed: 16, available: 14)),
    ])
    func rejects(text: String, expected: RTPParseError) {
        let bytes = [UInt8](hex: text)
        #expect(throws: expected) { try bytes.withUnsafeBytes { _ = try RTPPacket(parsing: $0) } }
    }

    @Test("builder errors")
    func builderErrors() {
        #expect(throws: RTPWriteError.tooManyCSRCs(16)) {
            try RTPPacketBuilder(payloadType: 0, ssrc: 0, csrcs: Array(repeating: 1, count: 16)).serialized(payload: [])
        }
        #expect(throws: RTPWriteError.invalidExtension(id: 0, length: 1)) {
            try RTPPacketBuilder(payloadType: 0, ssrc: 0, extensions: [.init(id: 0, bytes: [1])]).serialized(payload: [])
        }
        #expect(throws: RTPWriteError.invalidPayloadType(128)) {
            try RTPPacketBuilder(payloadType: 128, ssrc: 0).serialized(payload: [])
        }
        #expect(throws: RTPWriteError.invalidPadding(256)) {
            try RTPPacketBuilder(payloadType: 0, ssrc: 0, padding: 256).serialized(payload: [])
        }
        let small = UnsafeMutableRawBufferPointer.allocate(byteCount: 10, alignment: 1)
        defer { small.deallocate() }
        #expect(throws: RTPWriteError.bufferTooSmall(needed: 12, available: 10)) {
            _ = try RTPPacketBuilder(payloadType: 0, ssrc: 0).write(payload: UnsafeRawBufferPointer(start: nil, count: 0), into: small)
        }
    }

    @Test("write then parse gives back every field")
    func roundTrip() async {
        await propertyCheck(
            count: 500,
            input: Gen.uint16(), Gen.uint32(), Gen.uint32().array(of: 0...15), Gen.uint8().array(of: 0...1_400), Gen.int(in: 0...40)
        ) { sequence, timestamp, csrcs, payload, seed in
            var random = SeededRandomNumberGenerator(seed: UInt64(seed))
            let extensionCount = Int.random(in: 0...4, using: &random)
            let extensions = (0..<extensionCount).map { index in
                RTPPacketBuilder.Extension(
                    id: UInt8(seed % 2 == 0 ? index + 1 : index + 20),
                    bytes: (0..<Int.random(in: 1...16, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
                )
            }
            let header = RTPPacketBuilder(
                marker: seed % 3 == 0, payloadType: UInt8(seed + 80), sequenceNumber: SequenceNumber(rawValue: sequence),
                timestamp: RTPTimestamp(rawValue: timestamp), ssrc: timestamp ^ 0xFFFF, csrcs: csrcs, extensions: extensions,
                padding: seed % 5 == 0 ? seed % 7 + 1 : 0
            )
            let bytes = try header.serialized(payload: payload)
            try withRTPPacket(bytes) { packet in
                #expect(packet.marker == header.marker)
                #expect(packet.payloadType == header.payloadType)
                #expect(packet.sequenceNumber == header.sequenceNumber)
                #expect(packet.timestamp == header.timestamp)
                #expect(packet.ssrc == header.ssrc)
                #expect(packet.csrcs == csrcs)
                #expect(packet.paddingLength == header.padding)
                #expect(Array(packet.payload) == payload)
                #expect(packet.extensionElements.map { RTPPacketBuilder.Extension(id: $0.id, bytes: Array($0.data)) } == extensions)
            }
        }
    }

    @Test("hostile input: every truncation and random bytes never crash")
    func hostile() throws {
        let header = RTPPacketBuilder(payloadType: 96, ssrc: 1, csrcs: [1, 2], extensions: [.init(id: 1, bytes: [1, 2, 3])], padding: 4)
        let valid = try header.serialized(payload: Array(repeating: 7, count: 100))
        for length in 0...valid.count {
            _ = try? withRTPPacket(Array(valid[0..<length])) { $0.extensionElements.map(\.id) }
        }
        var random = SeededRandomNumberGenerator(seed: 42)
        for _ in 0..<20_000 {
            var bytes = (0..<Int.random(in: 0...300, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            if !bytes.isEmpty { bytes[0] = 0x80 | (bytes[0] & 0x3F) }  // mostly version 2, to get past the first check
            _ = try? withRTPPacket(bytes) { packet in
                _ = packet.extensionElements.map { $0.data.count }
                _ = packet.csrcs
                _ = packet.absoluteCaptureTime(id: 1)
                _ = packet.playoutDelay(id: 2)
            }
        }
    }
}
