import PlayoutCore
import PlayoutRTP
import PlayoutTesting
import PropertyBased
import Testing

@Suite("Stored RTP packets: parsed once, bytes copied once into recycled buffers")
struct RTPPacketPoolTests {
    /// A packet of `size` payload bytes, numbered `sequence`, its payload filled with `fill`.
    static func packet(sequence: UInt16, size: Int = 1_200, fill: UInt8 = 7, extensions: [RTPPacketBuilder.Extension] = []) throws -> [UInt8] {
        let header = RTPPacketBuilder(
            marker: sequence % 13 == 12, payloadType: 96, sequenceNumber: SequenceNumber(rawValue: sequence),
            timestamp: RTPTimestamp(rawValue: UInt32(sequence / 13) * 3_000), ssrc: 0x5EED, extensions: extensions
        )
        return try header.serialized(payload: Array(repeating: fill, count: size))
    }

    @Test("a packet rebuilt from its header over a copy of its bytes is the packet parsed again")
    func rebuiltEqualsParsed() async {
        await propertyCheck(
            count: 300, input: Gen.uint16(), Gen.uint8().array(of: 0...1_400), Gen.uint32().array(of: 0...15), Gen.int(in: 0...40)
        ) { sequence, payload, csrcs, seed in
            let header = RTPPacketBuilder(
                marker: seed % 2 == 0, payloadType: UInt8(seed + 60), sequenceNumber: SequenceNumber(rawValue: sequence),
                timestamp: RTPTimestamp(rawValue: UInt32(seed) * 3_000), ssrc: 9, csrcs: csrcs,
                extensions: seed % 3 == 0 ? [] : [.init(id: UInt8(seed % 14 + 1), bytes: Array(repeating: UInt8(seed), count: seed % 16 + 1))],
                padding: seed % 4 == 0 ? seed % 9 + 1 : 0
            )
            let bytes = try header.serialized(payload: payload)
            var pool = RTPPacketPool()
            let stored = try bytes.withUnsafeBytes { pool.store(try RTPPacket(parsing: $0)) }
            let reparsed = try bytes.withUnsafeBytes { try RTPPacket(parsing: $0).header }
            #expect(stored.header == reparsed)
            stored.withPacket { packet in
                #expect(Array(packet.bytes) == bytes)
                #expect(Array(packet.payload) == payload)
                #expect(packet.marker == header.marker && packet.sequenceNumber == header.sequenceNumber)
                #expect(packet.timestamp == header.timestamp && packet.payloadType == header.payloadType)
                #expect(packet.csrcs == csrcs)
                #expect(packet.paddingLength == header.padding)
                #expect(packet.extensionElements.map { RTPPacketBuilder.Extension(id: $0.id, bytes: Array($0.data)) } == header.extensions)
            }
        }
    }

    @Test("the stored copy is independent of the datagram buffer it came from")
    func copyIsIndependent() throws {
        var pool = RTPPacketPool()
        let capture = AbsoluteCaptureTime(captureTimestamp: 0xE7A1_0000_8000_0000)
        var bytes = try Self.packet(sequence: 1, size: 100, fill: 0xAB, extensions: [.init(id: 3, bytes: capture.bytes)])
        let stored = try bytes.withUnsafeBytes { pool.store(try RTPPacket(parsing: $0)) }
        // The receive loop reuses its buffer for the next datagram.
        for index in bytes.indices { bytes[index] = 0 }
        stored.withPacket { packet in
            #expect(packet.payload.allSatisfy { $0 == 0xAB })
            #expect(packet.absoluteCaptureTime(id: 3) == capture, "extensions are read from the copy too")
            #expect(packet.sequenceNumber == 1)
        }
    }

    @Test("a stored packet's bytes never change while it is held, however many packets follow")
    func heldPacketsKeepTheirBytes() throws {
        var pool = RTPPacketPool()
        var held: [StoredRTPPacket] = []
        for sequence in 0..<UInt16(300) {
            let bytes = try Self.packet(sequence: sequence, size: 50 + Int(sequence), fill: UInt8(truncatingIfNeeded: sequence))
            let stored = try bytes.withUnsafeBytes { pool.store(try RTPPacket(parsing: $0)) }
            if sequence % 3 == 0 { held.append(stored) }  // every third is kept; the rest are dropped at once
        }
        for (index, stored) in held.enumerated() {
            let sequence = UInt16(index * 3)
            stored.withPacket { packet in
                #expect(packet.sequenceNumber.rawValue == sequence)
                #expect(packet.payload.count == 50 + Int(sequence))
                #expect(packet.payload.allSatisfy { $0 == UInt8(truncatingIfNeeded: sequence) })
            }
        }
    }

    @Test("steady state: packets released in order recycle the same buffers; the ring stops growing")
    func steadyStateNoGrowth() throws {
        var pool = RTPPacketPool()
        var window: [StoredRTPPacket] = []  // the jitter buffer: holds 200 packets, releases the oldest
        let bytes = try (0..<UInt16(256)).map { try Self.packet(sequence: $0) }
        func feed(_ count: Int, from start: Int) throws {
            for index in start..<start + count {
                let stored = try bytes[index % bytes.count].withUnsafeBytes { pool.store(try RTPPacket(parsing: $0)) }
                window.append(stored)
                if window.count > 200 { window.removeFirst() }
            }
        }
        try feed(2_000, from: 0)
        let warm = pool.statistics
        #expect(warm.ringSize >= 201 && warm.ringSize <= 2 * 201 + RTPPacketPool.initialRingSize, "at most twice what is held")
        try feed(20_000, from: 2_000)
        let after = pool.statistics
        #expect(after.buffersCreated == warm.buffersCreated, "no buffer created in steady state")
        #expect(after.ringGrowths == warm.ringGrowths)
        #expect(after.buffersEnlarged == 0, "1,200-byte packets fit the default capacity")
        #expect(after.ringSize == warm.ringSize)
        #expect(after.packetsStored == 22_000)
    }

    @Test("a packet larger than a buffer enlarges that buffer once; later ones reuse it")
    func largePacketsEnlargeOnce() throws {
        // One buffer, so that every packet lands in it.
        var pool = RTPPacketPool(bufferCapacity: 256, maximumBuffers: 1)
        let large = try Self.packet(sequence: 1, size: 8_000)
        let small = try Self.packet(sequence: 2, size: 100)
        for _ in 0..<10 {
            _ = try large.withUnsafeBytes { pool.store(try RTPPacket(parsing: $0)) }
            let stored = try small.withUnsafeBytes { pool.store(try RTPPacket(parsing: $0)) }
            stored.withPacket { #expect($0.payload.count == 100) }
        }
        // Nothing held: the first buffer is free again each time.
        #expect(pool.statistics.buffersEnlarged == 1)
        #expect(pool.statistics.buffersCreated == 1)
        let stored = try large.withUnsafeBytes { pool.store(try RTPPacket(parsing: $0)) }
        stored.withPacket { #expect(Array($0.bytes) == large) }
    }

    @Test("at its maximum the ring stops growing; further packets get buffers of their own")
    func maximum() throws {
        var pool = RTPPacketPool(maximumBuffers: 8)
        let bytes = try Self.packet(sequence: 1, size: 10)
        let held = try (0..<20).map { _ in try bytes.withUnsafeBytes { pool.store(try RTPPacket(parsing: $0)) } }
        #expect(pool.statistics.ringSize == 8)
        #expect(pool.statistics.buffersCreated == 20)
        for stored in held { stored.withPacket { #expect(Array($0.bytes) == bytes) } }
    }
}
