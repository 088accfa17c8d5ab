import PlayoutCore
import PropertyBased
import Testing

@Suite("Base64")
struct Base64Tests {
    @Test("RFC 4648 §10 test vectors", arguments: [
        ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy"),
    ])
    func vectors(plain: String, encoded: String) throws {
        #expect(Base64.encode(Array(plain.utf8)) == encoded)
        #expect(try Base64.decode(encoded) == Array(plain.utf8))
    }

    @Test("padding is optional when decoding")
    func unpadded() throws {
        #expect(try Base64.decode("Zg") == Array("f".utf8))
        #expect(try Base64.decode("Zm8") == Array("fo".utf8))
        // An H.264 SPS as ffmpeg writes it in sprop-parameter-sets.
        #expect(try Base64.decode("Z0LAHtkDxWhAAAADAEAAAAwDxYuS")[0] == 0x67)
    }

    @Test("bad input is a clear error", arguments: [
        ("Z", Base64.DecodingError.invalidLength(1)),
        ("Zm9vY", .invalidLength(5)),
        ("Zm9v!", .invalidCharacter("!", offset: 4)),
        ("Zm=v", .misplacedPadding(offset: 2)),
        ("Zg===", .misplacedPadding(offset: 2)),
        ("Zm 9v", .invalidCharacter(" ", offset: 2)),
    ])
    func rejects(text: String, expected: Base64.DecodingError) {
        #expect(throws: expected) { try Base64.decode(text) }
    }

    @Test("round trip and hostile input")
    func roundTrip() async {
        await propertyCheck(count: 500, input: Gen.uint8().array(of: 0...100)) { bytes in
            #expect((try? Base64.decode(Base64.encode(bytes))) == bytes)
        }
        await propertyCheck(count: 2_000, input: Gen.ascii.string(of: 0...40)) { text in
            _ = try? Base64.decode(text)
        }
    }

    @Test("a non-ASCII character is named as itself, at the offset of its first byte")
    func nonASCII() {
        #expect(throws: Base64.DecodingError.invalidCharacter("ñ", offset: 3)) { try Base64.decode("abcñdef") }
        #expect(throws: Base64.DecodingError.invalidCharacter("🎬", offset: 0)) { try Base64.decode("🎬AAA") }
    }
}
