/// Standard base64 (RFC 4648 §4), as used by SDP (`sprop-parameter-sets`, `a=crypto` inline keys)
/// and by ffmpeg's `-srtp_out_params`.
public enum Base64 {
    /// Why a base64 string could not be decoded.
    public enum DecodingError: Error, Equatable, Sendable, CustomStringConvertible {
        /// A character outside the base64 alphabet, at this offset.
        case invalidCharacter(Character, offset: Int)
        /// A length that no base64 encoding has (one character left over).
        case invalidLength(Int)
        /// `=` anywhere but at the end.
        case misplacedPadding(offset: Int)

        public var description: String {
            switch self {
            case .invalidCharacter(let character, let offset):
                return "invalid base64: '\(character)' at offset \(offset) is not in the base64 alphabet"
            case .invalidLength(let length):
                return "invalid base64: \(length) characters cannot encode whole bytes"
            case .misplacedPadding(let offset):
                return "invalid base64: padding '=' at offset \(offset) before the end"
            }
        }
    }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }()

    /// Decodes `text`. Padding is optional (`"Z2Q"` and `"Z2Q="` both decode); whitespace is not
    /// allowed.
    ///
    /// - Complexity: O(n), one allocation.
    public static func decode(_ text: some StringProtocol) throws(DecodingError) -> [UInt8] {
        let utf8 = Array(text.utf8)
        var end = utf8.count
        var padding = 0
        while end > 0, utf8[end - 1] == UInt8(ascii: "="), padding < 2 {
            end -= 1
            padding += 1
        }
        var output: [UInt8] = []
        output.reserveCapacity(end * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for offset in 0..<end {
            let byte = utf8[offset]
            let value = values[Int(byte)]
            if value == 0xFF {
                if byte == UInt8(ascii: "=") { throw .misplacedPadding(offset: offset) }
                throw .invalidCharacter(Self.character(in: utf8, at: offset), offset: offset)
            }
            accumulator = (accumulator << 6) | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        if end % 4 == 1 { throw .invalidLength(end) }
        if padding > 0, (end + padding) % 4 != 0 { throw .invalidLength(utf8.count) }
        return output
    }

    /// The whole character whose UTF-8 encoding starts or continues at `offset` (a non-ASCII
    /// character is named as itself, `ñ`, not as one of its bytes, `Ã`).
    private static func character(in utf8: [UInt8], at offset: Int) -> Character {
        var start = offset
        while start > 0, utf8[start] & 0xC0 == 0x80 { start -= 1 }
        var end = start + 1
        while end < utf8.count, utf8[end] & 0xC0 == 0x80 { end += 1 }
        return String(decoding: utf8[start..<end], as: UTF8.self).first ?? "\u{FFFD}"
    }

    /// Encodes `bytes` with padding.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var output: [UInt8] = []
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in bytes {
            accumulator = (accumulator << 8) | UInt32(byte)
            bits += 8
            while bits >= 6 {
                bits -= 6
                output.append(alphabet[Int((accumulator >> UInt32(bits)) & 0x3F)])
            }
        }
        if bits > 0 {
            output.append(alphabet[Int((accumulator << UInt32(6 - bits)) & 0x3F)])
        }
        while output.count % 4 != 0 { output.append(UInt8(ascii: "=")) }
        return String(decoding: output, as: UTF8.self)
    }
}
