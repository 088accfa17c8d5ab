/// ICE short-term credentials (RFC 8445 §5.3, RFC 8839 §5.4): the username fragment and
/// password one side puts in its SDP (`a=ice-ufrag`, `a=ice-pwd`).
public struct ICECredentials: Hashable, Sendable {
    /// The username fragment: 4–256 ice-chars.
    public var ufrag: String
    /// The password: 22–256 ice-chars; its bytes are the MESSAGE-INTEGRITY key of checks sent to this side.
    public var password: String

    /// Creates credentials from SDP values.
    public init(ufrag: String, password: String) {
        self.ufrag = ufrag
        self.password = password
    }

    /// Random credentials of RFC 8445's lengths: an 8-character ufrag (≥ 24 bits of randomness)
    /// and a 24-character password (≥ 128 bits), from the 64 ice-chars.
    public static func generate(using generator: inout some RandomNumberGenerator) -> ICECredentials {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
        func word(_ count: Int) -> String {
            String((0..<count).map { _ in alphabet[Int(generator.next() & 63)] })
        }
        return ICECredentials(ufrag: word(8), password: word(24))
    }

    /// Random credentials from the system's generator.
    public static func generate() -> ICECredentials {
        var system = SystemRandomNumberGenerator()
        return generate(using: &system)
    }

    /// Whether both values have RFC 8839's lengths and characters.
    public var isValid: Bool {
        (4...256).contains(ufrag.count) && (22...256).contains(password.count)
            && ufrag.allSatisfy(\.isICEChar) && password.allSatisfy(\.isICEChar)
    }

    /// The key for MESSAGE-INTEGRITY: the password's bytes (short-term credentials, RFC 8489 §9.1.1).
    var key: [UInt8] { Array(password.utf8) }
}
