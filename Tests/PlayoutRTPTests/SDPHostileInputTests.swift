import PlayoutRTP
import PlayoutTesting
import Testing

/// SplitMix64 (Steele, Lea, Flood 2014) with a fixed seed: the same "random" inputs on every run.
@Suite("SDP parser on hostile input: a value or a clear error, never a crash or a hang")
struct SDPHostileInputTests {
    /// Parses `text`; when it parses, the writer's output must parse back to the same value.
    /// Returns whether it parsed.
    @discardableResult
    private func check(_ text: String) -> Bool {
        do {
            let sdp = try SessionDescription(parsing: text)
            let again = try? SessionDescription(parsing: sdp.serialized())
            #expect(again == sdp, "round trip of \(text.debugDescription)")
            return true
        } catch {
            #expect(!error.description.isEmpty)
            return false
        }
    }

    @Test("every prefix of every real SDP", arguments: SDPFixture.all)
    func truncatedPrefixes(fixture: SDPFixture) {
        let bytes = Array(fixture.crlf.utf8)
        var parsed = 0
        for length in 0...bytes.count where check(String(decoding: bytes.prefix(length), as: UTF8.self)) {
            parsed += 1
        }
        // Every prefix that ends after a complete line is itself a valid SDP, so many parse.
        #expect(parsed > bytes.count / 4)
    }

    @Test("5,000 random ASCII strings, some of them starting with v=0")
    func randomASCII() {
        var random = SeededRandomNumberGenerator(seed: 0x5D9_2026)
        let alphabet = Array("abcmostv=:/;, \r\n0123456789INP4P6AVRTHx.-|^+").map { $0 }
        for index in 0..<5_000 {
            var text = index % 2 == 0 ? "v=0\n" : ""
            let length = Int.random(in: 0...300, using: &random)
            for _ in 0..<length {
                if Bool.random(using: &random) {
                    text.append(alphabet.randomElement(using: &random)!)
                } else {
                    text.unicodeScalars.append(Unicode.Scalar(UInt8.random(in: 0...127, using: &random)))
                }
            }
            check(text)
        }
    }

    @Test("2,000 real SDPs with random bytes changed")
    func mutatedFixtures() {
        var random = SeededRandomNumberGenerator(seed: 42)
        var parsedCount = 0
        let interesting = Array("0123456789 /:;=|\r\n-aAzZ,".utf8)
        for index in 0..<2_000 {
            var bytes = Array(SDPFixture.all[index % SDPFixture.all.count].crlf.utf8)
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                let position = Int.random(in: 0..<bytes.count, using: &random)
                switch Int.random(in: 0..<3, using: &random) {
                case 0: bytes[position] = interesting.randomElement(using: &random)!
                case 1: bytes.remove(at: position)
                default: bytes.insert(UInt8.random(in: 0...255, using: &random), at: position)
                }
            }
            if check(String(decoding: bytes, as: UTF8.self)) { parsedCount += 1 }
        }
        // Most mutations leave a parseable SDP, whose round trip `check` verified.
        #expect(parsedCount > 500)
    }

    @Test("1,000 random byte strings decoded as UTF-8")
    func randomBytes() {
        var random = SeededRandomNumberGenerator(seed: 7)
        for index in 0..<1_000 {
            var bytes = index % 2 == 0 ? Array("v=0\r\n".utf8) : []
            for _ in 0..<Int.random(in: 0...500, using: &random) {
                bytes.append(UInt8.random(in: 0...255, using: &random))
            }
            check(String(decoding: bytes, as: UTF8.self))
        }
    }

    @Test("a 1 MiB input is refused before parsing")
    func oneMebibyte() {
        let text = "v=0\r\n" + String(repeating: "a=x\r\n", count: 1_048_576 / 5 - 1)
        #expect(text.utf8.count == 1_048_575)
        #expect(throws: SDPParseError.tooLarge(bytes: 1_048_575, limit: 65_536)) {
            try SessionDescription(parsing: text)
        }
    }

    @Test("exactly 64 KiB is accepted")
    func exactlyTheLimit() throws {
        let filler = 65_536 - "v=0\n".utf8.count
        let lines = filler / 4  // "a=x\n"
        let text = "v=0\n" + String(repeating: "a=x\n", count: lines)
        #expect(text.utf8.count == 65_536)
        let sdp = try SessionDescription(parsing: text)
        #expect(sdp.attributes.count == lines)
        #expect(throws: SDPParseError.tooLarge(bytes: 65_537, limit: 65_536)) {
            try SessionDescription(parsing: text + "\n")
        }
    }

    @Test("10,000 media sections: refused by size; 33 media sections: refused by count at the 33rd m= line")
    func manyMediaSections() throws {
        let tenThousand = "v=0\n" + String(repeating: "m=audio 1 RTP/AVP 0\n", count: 10_000)
        #expect(throws: SDPParseError.tooLarge(bytes: tenThousand.utf8.count, limit: 65_536)) {
            try SessionDescription(parsing: tenThousand)
        }
        let limit = SessionDescription.maximumMediaCount
        let thirtyTwo = "v=0\n" + String(repeating: "m=audio 1 RTP/AVP 0\na=rtpmap:0 PCMU/8000\n", count: limit)
        #expect(try SessionDescription(parsing: thirtyTwo).media.count == limit)
        #expect(throws: SDPParseError.tooManyMediaSections(line: 2 + 2 * limit, limit: limit)) {
            try SessionDescription(parsing: thirtyTwo + "m=audio 1 RTP/AVP 0\n")
        }
    }

    @Test("a 100,000-character line is refused by size; a 4,097-byte line by length")
    func longLines() throws {
        let huge = "v=0\na=" + String(repeating: "x", count: 100_000)
        #expect(throws: SDPParseError.tooLarge(bytes: huge.utf8.count, limit: 65_536)) {
            try SessionDescription(parsing: huge)
        }
        let justFits = "v=0\r\na=" + String(repeating: "x", count: 4_094) + "\r\n"
        #expect(try SessionDescription(parsing: justFits).attributes.first?.name.count == 4_094)
        let tooLong = "v=0\r\na=" + String(repeating: "x", count: 4_095) + "\r\nm=audio 1 RTP/AVP 0\r\n"
        #expect(throws: SDPParseError.lineTooLong(line: 2, length: 4_097, limit: 4_096)) {
            try SessionDescription(parsing: tooLong)
        }
    }

    @Test("many attributes, payload types and fmtp parameters within the limits")
    func manySmallThings() throws {
        let payloadTypes = (0...127).map(String.init).joined(separator: " ")
        let fmtp = "a=fmtp:96 " + (0..<400).map { "k\($0)=\($0)" }.joined(separator: ";")
        let text = "v=0\nm=video 5004 RTP/AVP \(payloadTypes)\n\(fmtp)\n" + String(repeating: "a=rtcp-mux\n", count: 5_000)
        let sdp = try SessionDescription(parsing: text)
        #expect(sdp.media[0].payloadTypes.count == 128)
        #expect(sdp.media[0].formatParameters[0].parameters.count == 400)
        #expect(sdp.media[0].rtcpMux)
        check(text)
    }
}
