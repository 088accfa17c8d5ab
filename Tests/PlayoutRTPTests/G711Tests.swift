import Foundation
import PlayoutCore
import PlayoutRTP
import PropertyBased
import PlayoutTesting
import Testing

@Suite("G.711 PCMU/PCMA depacketizer and packetizer (RFC 3551)")
struct G711Tests {
    @Test("each packet is one key frame of samples at 8 kHz", arguments: [
        (G711Depacketizer.Law.muLaw, Codec.pcmu), (.aLaw, .pcma),
    ])
    func onePacketOneFrame(law: G711Depacketizer.Law, codec: Codec) {
        var harness = DepacketizerHarness(G711Depacketizer(track: 2, law: law))
        // µ-law silence is 0xFF, A-law silence 0xD5 (ITU-T G.711 Tables 1a, 2a).
        let silence = [UInt8](repeating: law == .muLaw ? 0xFF : 0xD5, count: 160)
        harness.push(silence, sequence: 1, timestamp: 0, marker: true)
        harness.push(silence, sequence: 2, timestamp: 160, marker: false)
        #expect(harness.frames.map(\.bytes) == [silence, silence])
        #expect(harness.frames.allSatisfy { $0.isKeyframe && $0.codec == codec })
        #expect(harness.frames[1].mediaTime == MediaTime(ticks: 160, clockRate: 8_000))
        #expect(harness.depacketizer.codec == codec)
    }

    @Test("loss, duplicates and wrap")
    func lossDuplicatesWrap() {
        var harness = DepacketizerHarness(G711Depacketizer(track: 1, law: .muLaw))
        let samples = [UInt8](repeating: 0x7F, count: 160)
        harness.push(samples, sequence: 65_534, timestamp: UInt32.max - 159, marker: false)
        harness.push(samples, sequence: 65_534, timestamp: UInt32.max - 159, marker: false)  // duplicate
        harness.push(samples, sequence: 0, timestamp: 160, marker: false)  // 65,535 lost; both wrap
        harness.push(samples, sequence: 1, timestamp: 320, marker: false)
        #expect(harness.frames.map(\.followsLoss) == [false, true, false])
        #expect(harness.frames[1].mediaTime.ticks - harness.frames[0].mediaTime.ticks == 320)
        let statistics = harness.depacketizer.statistics
        #expect(statistics.packetsLost == 1 && statistics.packetsOutOfOrder == 1)
    }

    @Test("an empty payload is malformed")
    func malformed() {
        var harness = DepacketizerHarness(G711Depacketizer(track: 1, law: .aLaw))
        harness.push([], sequence: 1, timestamp: 0, marker: false)
        harness.push([0xD5], sequence: 2, timestamp: 160, marker: false)
        #expect(harness.frames.count == 1 && harness.frames[0].followsLoss)
        #expect(harness.depacketizer.statistics.packetsMalformed == 1)
    }

    @Test("packetizer: at most samplesPerPacket per payload, offsets per payload, the increment is the sample count")
    func packetizer() {
        let packetizer = G711Packetizer()
        let samples = (0..<400).map { UInt8(truncatingIfNeeded: $0) }
        var payloads: [([UInt8], UInt32)] = []
        let increment = samples.withUnsafeBytes { packetizer.packetize($0) { payloads.append((Array($0), $1)) } }
        #expect(increment == 400)
        #expect(payloads.map(\.1) == [0, 160, 320])
        #expect(payloads.map(\.0.count) == [160, 160, 80])
        #expect(payloads.flatMap(\.0) == samples)
    }

    @Test("packetize then depacketize gives back every sample")
    func roundTrip() async {
        await propertyCheck(count: 100, input: Gen.int(in: 64...1_500), Gen.int(in: 0...1_000)) { mtu, seed in
            var random = SeededRandomNumberGenerator(seed: UInt64(seed))
            let packetizer = G711Packetizer(samplesPerPacket: mtu)
            var harness = DepacketizerHarness(G711Depacketizer(track: 1, law: seed % 2 == 0 ? .muLaw : .aLaw))
            var sequence = UInt16.random(in: 0...UInt16.max, using: &random)
            var timestamp = UInt32.random(in: 0...UInt32.max, using: &random)
            var sent: [UInt8] = []
            for _ in 0..<5 {
                let samples = (0..<Int.random(in: 1...4_000, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
                sent += samples
                let base = timestamp
                timestamp &+= samples.withUnsafeBytes { buffer in
                    packetizer.packetize(buffer) { payload, offset in
                        #expect(payload.count <= mtu)
                        harness.push(Array(payload), sequence: sequence, timestamp: base &+ offset, marker: false)
                        sequence &+= 1
                    }
                }
            }
            #expect(harness.frames.flatMap(\.bytes) == sent)
            #expect(zip(harness.frames, harness.frames.dropFirst()).allSatisfy {
                $1.mediaTime.ticks - $0.mediaTime.ticks == Int64($0.bytes.count)
            })
        }
    }

    @Test("hostile payloads never crash")
    func hostile() {
        var harness = DepacketizerHarness(G711Depacketizer(track: 1, law: .muLaw))
        var random = SeededRandomNumberGenerator(seed: 3551)
        for index in 0..<20_000 {
            let payload = (0..<Int.random(in: 0...64, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            harness.push(payload, sequence: UInt16(truncatingIfNeeded: index * (index % 5 == 0 ? 2 : 1)),
                         timestamp: UInt32(truncatingIfNeeded: index * 160), marker: false)
        }
        harness.flush()
        #expect(harness.depacketizer.statistics.packetsReceived == 20_000)
        #expect(harness.depacketizer.statistics.framesEmitted == harness.frames.count)
    }

    @Test("interop: ffmpeg's PCMU and PCMA RTP streams carry the file's samples", .enabled(if: FFmpeg.isAvailable, "ffmpeg is not on PATH"),
          arguments: [(G711Depacketizer.Law.muLaw, "pcm_mulaw", "mulaw"), (.aLaw, "pcm_alaw", "alaw")])
    func ffmpegInterop(law: G711Depacketizer.Law, encoder: String, format: String) throws {
        let file = FFmpeg.temporaryFile("g711.\(format)")
        defer { try? FileManager.default.removeItem(at: file) }
        try FFmpeg.run(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=8000", "-t", "1", "-c:a", encoder, "-f", format, file.path])
        let expected = try [UInt8](Data(contentsOf: file))
        let datagrams = try FFmpeg.captureRTP(sending: file, inputOptions: ["-f", format, "-ar", "8000", "-ac", "1"])
        var depacketizer = G711Depacketizer(track: 1, law: law)
        let frames = try FFmpeg.depacketize(datagrams, with: &depacketizer)
        #expect(expected.count == 8_000)
        #expect(frames.flatMap(\.bytes) == expected)
        #expect(depacketizer.statistics.packetsLost == 0)
        #expect(zip(frames, frames.dropFirst()).allSatisfy { $1.mediaTime.ticks - $0.mediaTime.ticks == Int64($0.bytes.count) },
                "one tick per sample")
    }
}
