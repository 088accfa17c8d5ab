extension SessionDescription {
    /// The largest SDP accepted, in bytes (64 KiB). Real ones are a few hundred bytes.
    public static let maximumSize = 65_536
    /// The longest line accepted, in bytes (4 KiB), without its line ending.
    public static let maximumLineLength = 4_096
    /// The most media sections (`m=` lines) accepted.
    public static let maximumMediaCount = 32

    /// Parses an SDP session description (RFC 8866).
    ///
    /// Lenient where real writers differ: CRLF or LF line endings, blank lines, trailing spaces,
    /// session lines in any order after `v=0`, a missing `o=`, `s=` or `t=`, unknown line types
    /// and attributes (kept verbatim). Strict where a value is unusable: a non-numeric port, a
    /// payload type over 127, a malformed `c=`, `a=rtpmap` or `a=crypto`, bad base64 in a key or
    /// an `sprop-…` parameter all throw an error naming the line.
    ///
    /// Where an attribute that can appear once (`a=rtcp`, `a=control`, `a=framerate`, `a=ptime`, a
    /// direction) or a `c=` line is repeated, the first one counts and the others are dropped.
    ///
    /// - Throws: ``SDPParseError``; nothing crashes, and input over ``maximumSize`` bytes, with a
    ///   line over ``maximumLineLength`` bytes or more than ``maximumMediaCount`` media sections is
    ///   refused before it costs more than one pass.
    /// - Complexity: O(n) in the length of `text`.
    public init(parsing text: some StringProtocol) throws(SDPParseError) {
        var parser = SDPParser()
        self = try parser.parse(text.utf8)
    }
}

/// One pass over the lines of an SDP; see ``SessionDescription/init(parsing:)``.
struct SDPParser {
    /// A media section being read, with what inheritance and validation need at the end.
    private struct PendingMedia {
        var media: MediaDescription
        var ownConnection: ConnectionData?
        var ownDirection: SDPDirection?
        var fmtpLines: [(number: Int, text: String, payloadType: UInt8)] = []
        var seenAttributes: Set<String> = []
        var informationFields: [SDPField] = []
    }

    private var session = SessionDescription(origin: nil, timing: [])
    private var sessionName: String?
    private var sessionDirection: SDPDirection?
    private var lateSessionFields: [SDPField] = []
    private var media: [PendingMedia] = []

    mutating func parse(_ utf8: some Collection<UInt8>) throws(SDPParseError) -> SessionDescription {
        let size = utf8.count
        guard size <= SessionDescription.maximumSize else {
            throw .tooLarge(bytes: size, limit: SessionDescription.maximumSize)
        }
        let bytes = Array(utf8)
        var sawVersion = false
        var lineNumber = 0
        // A UTF-8 byte order mark, as some Windows editors write.
        var start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        while start <= bytes.count {
            var end = start
            while end < bytes.count, bytes[end] != UInt8(ascii: "\n") { end += 1 }
            let next = end + 1
            lineNumber += 1
            if end > start, bytes[end - 1] == UInt8(ascii: "\r") { end -= 1 }
            if end - start > SessionDescription.maximumLineLength {
                throw .lineTooLong(line: lineNumber, length: end - start, limit: SessionDescription.maximumLineLength)
            }
            while end > start, bytes[end - 1] == UInt8(ascii: " ") || bytes[end - 1] == UInt8(ascii: "\t") { end -= 1 }
            defer { start = next }
            guard end > start else { continue }
            let line = String(decoding: bytes[start..<end], as: UTF8.self)
            let type = bytes[start]
            guard end - start >= 2, bytes[start + 1] == UInt8(ascii: "="),
                  type >= UInt8(ascii: "a"), type <= UInt8(ascii: "z")
            else {
                if !sawVersion { throw .invalidLine(line: lineNumber, expected: "v=0", found: line) }
                throw .invalidLine(line: lineNumber, expected: "<type>=<value>, e.g. a=rtpmap:96 H264/90000", found: line)
            }
            let value = line.dropFirst(2)
            if !sawVersion {
                guard type == UInt8(ascii: "v"), value.sdpTrimmed == "0" else {
                    throw .invalidLine(line: lineNumber, expected: "v=0", found: line)
                }
                sawVersion = true
                continue
            }
            if type == UInt8(ascii: "m"), media.count >= SessionDescription.maximumMediaCount {
                throw .tooManyMediaSections(line: lineNumber, limit: SessionDescription.maximumMediaCount)
            }
            do {
                try parseLine(type: Character(Unicode.Scalar(type)), value: value, number: lineNumber, line: line)
            } catch {
                throw .invalidLine(line: lineNumber, expected: error.expected, found: line)
            }
        }
        guard sawVersion else { throw .empty }
        return try finish()
    }

    private mutating func parseLine(
        type: Character, value: Substring, number: Int, line: String
    ) throws(SDPValueError) {
        if type == "m" {
            media.append(PendingMedia(media: try parseMediaLine(value)))
            return
        }
        if media.isEmpty {
            try parseSessionLine(type: type, value: value)
        } else {
            try parseMediaLevelLine(type: type, value: value, number: number, line: line)
        }
    }

    // MARK: Session level

    private mutating func parseSessionLine(type: Character, value: Substring) throws(SDPValueError) {
        switch type {
        case "o" where session.origin == nil:
            session.origin = try Self.parseOrigin(value)
        case "s" where sessionName == nil:
            sessionName = String(value)
        case "c":
            if session.connection == nil { session.connection = try Self.parseConnection(value.sdpTokens) }
        case "b":
            session.bandwidths.append(try Self.parseBandwidth(value))
        case "t":
            session.timing.append(try Self.parseTiming(value))
        case "a":
            let (name, attributeValue) = Self.splitAttribute(value)
            if let direction = SDPDirection(rawValue: String(name)), attributeValue == nil {
                if sessionDirection == nil { sessionDirection = direction }
            } else if name == "extmap", let attributeValue {
                session.extensionMaps.append(try Self.parseExtensionMap(attributeValue))
            } else {
                session.attributes.append(SDPAttribute(name: String(name), value: attributeValue.map(String.init)))
            }
        case "v", "o", "s", "i", "u", "e", "p":
            session.otherFields.append(SDPField(type: type, value: String(value)))
        default:
            lateSessionFields.append(SDPField(type: type, value: String(value)))
        }
    }

    // MARK: Media level

    private func parseMediaLine(_ value: Substring) throws(SDPValueError) -> MediaDescription {
        let expected = "m=<media> <port> <proto> <fmt> …"
        let tokens = value.sdpTokens
        guard tokens.count >= 4 else { throw SDPValueError(expected) }
        let portParts = tokens[1].split(separator: "/", omittingEmptySubsequences: false)
        guard portParts.count <= 2, let port = SDPNumber.unsigned(portParts[0], as: UInt16.self) else {
            throw SDPValueError("a port number 0…65535 in \(expected)")
        }
        var portCount: UInt16 = 1
        if portParts.count == 2 {
            guard let count = SDPNumber.unsigned(portParts[1], as: UInt16.self), count >= 1 else {
                throw SDPValueError("<port>/<count> with a count of 1 or more in \(expected)")
            }
            portCount = count
        }
        var media = MediaDescription(
            kind: SDPMediaType(rawValue: String(tokens[0])),
            port: port,
            portCount: portCount,
            proto: TransportProtocol(rawValue: String(tokens[2]))
        )
        if media.proto.isRTP {
            for token in tokens.dropFirst(3) {
                guard let payloadType = SDPNumber.unsigned(token, as: UInt8.self), payloadType <= 127 else {
                    throw SDPValueError("RTP payload types 0…127 in \(expected)")
                }
                media.payloadTypes.append(payloadType)
            }
        } else {
            media.otherFormats = tokens.dropFirst(3).map(String.init)
        }
        return media
    }

    private mutating func parseMediaLevelLine(
        type: Character, value: Substring, number: Int, line: String
    ) throws(SDPValueError) {
        var pending = media.removeLast()
        defer { media.append(pending) }
        switch type {
        case "c":
            if pending.ownConnection == nil { pending.ownConnection = try Self.parseConnection(value.sdpTokens) }
        case "b":
            pending.media.bandwidths.append(try Self.parseBandwidth(value))
        case "i":
            pending.informationFields.append(SDPField(type: type, value: String(value)))
        case "a":
            try parseMediaAttribute(value, into: &pending, number: number, line: line)
        default:
            pending.media.otherFields.append(SDPField(type: type, value: String(value)))
        }
    }

    private func parseMediaAttribute(
        _ text: Substring, into pending: inout PendingMedia, number: Int, line: String
    ) throws(SDPValueError) {
        let (name, value) = Self.splitAttribute(text)
        let isRTP = pending.media.proto.isRTP
        let once = ["rtcp", "control", "framerate", "ptime", "direction"]
        let key = SDPDirection(rawValue: String(name)) != nil && value == nil ? "direction" : String(name)
        if once.contains(key) {
            guard pending.seenAttributes.insert(key).inserted else { return }
        }
        switch (name, value) {
        case ("rtpmap", let value?) where isRTP:
            pending.media.rtpMaps.append(try Self.parseRTPMap(value))
        case ("fmtp", let value?) where isRTP:
            let payloadText = value.prefix { $0 != " " && $0 != "\t" }
            guard let payloadType = SDPNumber.unsigned(payloadText, as: UInt8.self), payloadType <= 127 else {
                throw SDPValueError("a=fmtp:<payload type 0…127> <parameters>")
            }
            pending.media.formatParameters.append(
                FormatParameters(payloadType: payloadType, parsing: value.dropFirst(payloadText.count))
            )
            pending.fmtpLines.append((number, line, payloadType))
        case ("crypto", let value?):
            pending.media.crypto.append(try CryptoAttribute(parsing: value))
        case ("extmap", let value?):
            pending.media.extensionMaps.append(try Self.parseExtensionMap(value))
        case ("rtcp", let value?):
            pending.media.rtcp = try Self.parseRTCP(value)
        case ("rtcp-mux", nil):
            pending.media.rtcpMux = true
        case ("ssrc", let value?):
            pending.media.ssrcAttributes.append(try Self.parseSSRC(value))
        case ("control", let value?):
            pending.media.control = String(value)
        case ("framerate", let value?):
            let trimmed = value.sdpTrimmed
            guard SDPNumber.isDecimal(trimmed), let rate = Double(trimmed), rate == 0 || (0.001...1_000_000).contains(rate)
            else {
                throw SDPValueError("a=framerate:<frames per second>, e.g. 30 or 29.97")
            }
            pending.media.frameRate = rate
        case ("ptime", let value?):
            guard let duration = SDPNumber.milliseconds(value.sdpTrimmed) else {
                throw SDPValueError("a=ptime:<milliseconds>, e.g. 20")
            }
            pending.media.packetTime = duration
        default:
            if let direction = SDPDirection(rawValue: String(name)), value == nil {
                pending.ownDirection = direction
            } else {
                pending.media.attributes.append(SDPAttribute(name: String(name), value: value.map(String.init)))
            }
        }
    }

    // MARK: End

    private mutating func finish() throws(SDPParseError) -> SessionDescription {
        var result = session
        result.sessionName = sessionName ?? "-"
        result.direction = sessionDirection ?? .sendrecv
        result.otherFields += lateSessionFields
        if result.timing.isEmpty { result.timing = [SDPTiming()] }
        for pending in media {
            var section = pending.media
            section.otherFields = pending.informationFields + section.otherFields
            section.connection = pending.ownConnection ?? result.connection
            section.direction = pending.ownDirection ?? result.direction
            for fmtp in pending.fmtpLines {
                guard let parameters = section.formatParameters(for: fmtp.payloadType) else { continue }
                let encoding = section.rtpMap(for: fmtp.payloadType)?.encodingName
                if let (name, expected) = parameters.invalidParameter(encoding: encoding) {
                    throw .invalidLine(
                        line: fmtp.number,
                        expected: "\(name) as \(expected) in a=fmtp:\(fmtp.payloadType)",
                        found: fmtp.text
                    )
                }
            }
            result.media.append(section)
        }
        return result
    }

    // MARK: Values

    static func splitAttribute(_ text: Substring) -> (name: Substring, value: Substring?) {
        guard let colon = text.firstIndex(of: ":") else { return (text, nil) }
        return (text[..<colon], text[text.index(after: colon)...])
    }

    static func parseOrigin(_ value: Substring) throws(SDPValueError) -> SDPOrigin {
        let tokens = value.sdpTokens
        guard tokens.count == 6, let addressType = SDPAddressType(rawValue: String(tokens[4])) else {
            throw SDPValueError("o=<username> <sess-id> <sess-version> IN IP4|IP6 <address>")
        }
        return SDPOrigin(
            username: String(tokens[0]), sessionID: String(tokens[1]), sessionVersion: String(tokens[2]),
            networkType: String(tokens[3]), addressType: addressType, address: String(tokens[5])
        )
    }

    static func parseConnection(_ tokens: [Substring]) throws(SDPValueError) -> ConnectionData {
        let expected = "c=IN IP4|IP6 <address>[/<ttl>][/<count>]"
        guard tokens.count == 3, let addressType = SDPAddressType(rawValue: String(tokens[1])) else {
            throw SDPValueError(expected)
        }
        let parts = tokens[2].split(separator: "/", omittingEmptySubsequences: false)
        guard !parts[0].isEmpty else { throw SDPValueError(expected) }
        var connection = ConnectionData(
            networkType: String(tokens[0]), addressType: addressType, address: String(parts[0])
        )
        switch (addressType, parts.count) {
        case (_, 1):
            break
        case (.ip4, 2), (.ip4, 3):
            guard let ttl = SDPNumber.unsigned(parts[1], as: UInt8.self) else {
                throw SDPValueError("a multicast TTL 0…255 in \(expected)")
            }
            connection.ttl = ttl
            if parts.count == 3 {
                guard let count = SDPNumber.unsigned(parts[2], as: UInt32.self), count >= 1 else {
                    throw SDPValueError("an address count of 1 or more in \(expected)")
                }
                connection.addressCount = count
            }
        case (.ip6, 2):
            guard let count = SDPNumber.unsigned(parts[1], as: UInt32.self), count >= 1 else {
                throw SDPValueError("an address count of 1 or more in c=IN IP6 <address>[/<count>]")
            }
            connection.addressCount = count
        default:
            throw SDPValueError(expected)
        }
        return connection
    }

    static func parseBandwidth(_ value: Substring) throws(SDPValueError) -> SDPBandwidth {
        let (type, number) = splitAttribute(value)
        guard !type.isEmpty, let number, let bandwidth = SDPNumber.unsigned(number.sdpTrimmed, as: UInt64.self) else {
            throw SDPValueError("b=<type>:<bandwidth>, e.g. b=AS:64")
        }
        return SDPBandwidth(type: String(type), value: bandwidth)
    }

    static func parseTiming(_ value: Substring) throws(SDPValueError) -> SDPTiming {
        let tokens = value.sdpTokens
        guard tokens.count == 2, let start = SDPNumber.unsigned(tokens[0], as: UInt64.self),
              let stop = SDPNumber.unsigned(tokens[1], as: UInt64.self)
        else { throw SDPValueError("t=<start> <stop>, e.g. t=0 0") }
        return SDPTiming(start: start, stop: stop)
    }

    static func parseRTPMap(_ value: Substring) throws(SDPValueError) -> RTPMap {
        let expected = "a=rtpmap:<payload type> <encoding>/<clock rate>[/<channels>]"
        let tokens = value.sdpTokens
        guard tokens.count == 2 else { throw SDPValueError(expected) }
        guard let payloadType = SDPNumber.unsigned(tokens[0], as: UInt8.self), payloadType <= 127 else {
            throw SDPValueError("a payload type 0…127 in \(expected)")
        }
        let parts = tokens[1].split(separator: "/", omittingEmptySubsequences: false)
        guard (2...3).contains(parts.count), !parts[0].isEmpty,
              let clockRate = SDPNumber.unsigned(parts[1], as: UInt32.self), clockRate > 0
        else { throw SDPValueError(expected) }
        var map = RTPMap(payloadType: payloadType, encodingName: String(parts[0]), clockRate: clockRate)
        if parts.count == 3 {
            guard let channels = SDPNumber.unsigned(parts[2], as: UInt16.self), channels > 0 else {
                throw SDPValueError("a channel count of 1 or more in \(expected)")
            }
            map.channels = channels
        }
        return map
    }

    static func parseExtensionMap(_ value: Substring) throws(SDPValueError) -> ExtensionMap {
        let expected = "a=extmap:<id 1…255>[/<direction>] <uri> [<attributes>]"
        let tokens = value.sdpTokens
        guard tokens.count >= 2 else { throw SDPValueError(expected) }
        let idParts = tokens[0].split(separator: "/", omittingEmptySubsequences: false)
        guard idParts.count <= 2, let id = SDPNumber.unsigned(idParts[0], as: UInt16.self),
              (1...255).contains(id) || (4096...4351).contains(id)
        else { throw SDPValueError(expected) }
        var map = ExtensionMap(id: id, uri: String(tokens[1]))
        if idParts.count == 2 {
            guard let direction = SDPDirection(rawValue: String(idParts[1])) else { throw SDPValueError(expected) }
            map.direction = direction
        }
        if tokens.count > 2 { map.extensionAttributes = tokens.dropFirst(2).joined(separator: " ") }
        return map
    }

    static func parseRTCP(_ value: Substring) throws(SDPValueError) -> RTCPAttribute {
        let tokens = value.sdpTokens
        guard tokens.count == 1 || tokens.count == 4, let port = SDPNumber.unsigned(tokens[0], as: UInt16.self) else {
            throw SDPValueError("a=rtcp:<port> [IN IP4|IP6 <address>]")
        }
        guard tokens.count == 4 else { return RTCPAttribute(port: port) }
        return RTCPAttribute(port: port, connection: try parseConnection(Array(tokens[1...])))
    }

    static func parseSSRC(_ value: Substring) throws(SDPValueError) -> SSRCAttribute {
        let ssrcText = value.prefix { $0 != " " }
        let rest = value.dropFirst(ssrcText.count).sdpTrimmed
        guard let ssrc = SDPNumber.unsigned(ssrcText, as: UInt32.self), !rest.isEmpty else {
            throw SDPValueError("a=ssrc:<ssrc 0…4294967295> <attribute>[:<value>]")
        }
        let (name, attributeValue) = splitAttribute(rest)
        return SSRCAttribute(ssrc: ssrc, name: String(name), value: attributeValue.map(String.init))
    }
}

extension Substring {
    /// The space- or tab-separated tokens.
    var sdpTokens: [Substring] {
        split { $0 == " " || $0 == "\t" }
    }
}
