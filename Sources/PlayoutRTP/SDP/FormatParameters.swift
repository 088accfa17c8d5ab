import PlayoutCore

/// An `a=fmtp:<payload type> <parameters>` line: the format-specific parameters of one payload
/// type, kept as an ordered list with typed accessors for the codecs Playout receives.
///
/// ```swift
/// // a=fmtp:96 packetization-mode=1; sprop-parameter-sets=Z0LAHtkA…,aM4NiA==; profile-level-id=42C01E
/// let fmtp = media.formatParameters(for: 96)!
/// fmtp.packetizationMode        // 1
/// fmtp.spropParameterSets       // [[0x67, 0x42, …], [0x68, 0xCE, …]]
/// ```
///
/// Parameters are split at `;` with surrounding spaces removed (ffmpeg writes `"; "`). A
/// parameter without `=` (e.g. telephone-event's `0-15`) has a `nil` value. Names compare
/// case-insensitively. The accessors return `nil` when the parameter is absent or malformed;
/// the parser has already refused malformed values for the codec its `a=rtpmap` names, and any
/// malformed base64 in an `sprop-…` parameter.
public struct FormatParameters: Sendable, Equatable {
    /// One `name=value` parameter.
    public struct Parameter: Sendable, Equatable {
        /// The name, as written.
        public var name: String
        /// The value after the first `=`, or `nil` when there was no `=`.
        public var value: String?

        /// Creates a parameter.
        public init(name: String, value: String? = nil) {
            self.name = name
            self.value = value
        }
    }

    /// The payload type these parameters belong to.
    public var payloadType: UInt8
    /// The parameters, in the order written.
    public var parameters: [Parameter]

    /// Creates format parameters.
    public init(payloadType: UInt8, parameters: [Parameter]) {
        self.payloadType = payloadType
        self.parameters = parameters
    }

    /// Splits the text after the payload type into parameters.
    public init(payloadType: UInt8, parsing text: some StringProtocol) {
        self.payloadType = payloadType
        self.parameters = text.split(separator: ";").compactMap { part in
            let trimmed = part.sdpTrimmed
            guard !trimmed.isEmpty else { return nil }
            guard let equals = trimmed.firstIndex(of: "=") else { return Parameter(name: String(trimmed)) }
            return Parameter(
                name: String(trimmed[..<equals].sdpTrimmed),
                value: String(trimmed[trimmed.index(after: equals)...].sdpTrimmed)
            )
        }
    }

    /// The parameters as written after the payload type: `name=value;name=value`.
    public var formatted: String {
        parameters.map { parameter in
            parameter.value.map { "\(parameter.name)=\($0)" } ?? parameter.name
        }.joined(separator: ";")
    }

    /// The value of the first parameter called `name` (compared case-insensitively); `""` for a
    /// parameter without `=`; `nil` when there is none.
    public subscript(name: String) -> String? {
        let lowered = name.lowercased()
        return parameters.first { $0.name.lowercased() == lowered }.map { $0.value ?? "" }
    }

    // MARK: H.264 (RFC 6184)

    /// H.264 `packetization-mode`: 0 single NAL unit, 1 non-interleaved, 2 interleaved.
    public var packetizationMode: Int? {
        self["packetization-mode"].flatMap { SDPNumber.unsigned($0[...], as: UInt8.self) }.flatMap {
            $0 <= 2 ? Int($0) : nil
        }
    }

    /// H.264 `profile-level-id`: profile_idc, the constraint flags and level_idc, 3 bytes from 6
    /// hex digits.
    public var profileLevelID: [UInt8]? {
        guard let text = self["profile-level-id"], text.utf8.count == 6 else { return nil }
        return SDPHex.decode(text)
    }

    /// H.264 `sprop-parameter-sets`: the SPS and PPS NAL units, comma-separated base64.
    public var spropParameterSets: [[UInt8]]? { nalUnits("sprop-parameter-sets") }

    // MARK: H.265 (RFC 7798)

    /// H.265 `sprop-vps`: the video parameter set NAL units.
    public var spropVPS: [[UInt8]]? { nalUnits("sprop-vps") }
    /// H.265 `sprop-sps`: the sequence parameter set NAL units.
    public var spropSPS: [[UInt8]]? { nalUnits("sprop-sps") }
    /// H.265 `sprop-pps`: the picture parameter set NAL units.
    public var spropPPS: [[UInt8]]? { nalUnits("sprop-pps") }

    // MARK: Opus (RFC 7587)

    /// Opus `stereo`: whether the receiver prefers stereo.
    public var stereo: Bool? { flag("stereo") }
    /// Opus `sprop-stereo`: whether the sender is likely to send stereo.
    public var spropStereo: Bool? { flag("sprop-stereo") }
    /// Opus `maxplaybackrate`, in Hz.
    public var maxPlaybackRate: UInt32? {
        self["maxplaybackrate"].flatMap { SDPNumber.unsigned($0[...], as: UInt32.self) }
    }
    /// Opus `useinbandfec`: whether the receiver can use in-band FEC.
    public var useInbandFEC: Bool? { flag("useinbandfec") }
    /// Opus `minptime`: the shortest packet duration the receiver wants.
    public var minimumPacketTime: Duration? {
        self["minptime"].flatMap { SDPNumber.milliseconds($0[...]) }
    }

    // MARK: MPEG4-GENERIC (RFC 3640)

    /// MPEG4-GENERIC `mode`, e.g. `AAC-hbr`.
    public var mode: String? { self["mode"] }
    /// MPEG4-GENERIC `sizelength`: bits of an AU-size field.
    public var sizeLength: Int? { integer("sizelength") }
    /// MPEG4-GENERIC `indexlength`: bits of an AU-Index field.
    public var indexLength: Int? { integer("indexlength") }
    /// MPEG4-GENERIC `indexdeltalength`: bits of an AU-Index-delta field.
    public var indexDeltaLength: Int? { integer("indexdeltalength") }
    /// MPEG4-GENERIC (and MP4A-LATM) `config`: the AudioSpecificConfig, from hex digits.
    public var config: [UInt8]? { self["config"].flatMap(SDPHex.decode) }

    // MARK: Helpers

    private func nalUnits(_ name: String) -> [[UInt8]]? {
        guard let text = self[name] else { return nil }
        return try? Self.decodeNALUnits(text)
    }

    private func flag(_ name: String) -> Bool? {
        switch self[name] {
        case "1": return true
        case "0": return false
        default: return nil
        }
    }

    private func integer(_ name: String) -> Int? {
        self[name].flatMap { SDPNumber.unsigned($0[...], as: UInt16.self) }.map(Int.init)
    }

    static func decodeNALUnits(_ text: String) throws(Base64.DecodingError) -> [[UInt8]] {
        var units: [[UInt8]] = []
        for part in text.split(separator: ",") {
            let unit = try Base64.decode(part.sdpTrimmed)
            if !unit.isEmpty { units.append(unit) }
        }
        return units
    }

    /// The first parameter whose value is unusable for `encoding` (the rtpmap's encoding name),
    /// and what it should look like.
    func invalidParameter(encoding: String?) -> (name: String, expected: String)? {
        for name in ["sprop-parameter-sets", "sprop-vps", "sprop-sps", "sprop-pps"] {
            if let text = self[name], (try? Self.decodeNALUnits(text)) == nil {
                return (name, "comma-separated base64 NAL units")
            }
        }
        switch encoding?.uppercased() {
        case "H264":
            if self["packetization-mode"] != nil, packetizationMode == nil { return ("packetization-mode", "0, 1 or 2") }
            if self["profile-level-id"] != nil, profileLevelID == nil { return ("profile-level-id", "6 hex digits") }
        case "OPUS":
            for name in ["stereo", "sprop-stereo", "useinbandfec"] where self[name] != nil && flag(name) == nil {
                return (name, "0 or 1")
            }
            if self["maxplaybackrate"] != nil, maxPlaybackRate == nil { return ("maxplaybackrate", "a rate in Hz") }
            if self["minptime"] != nil, minimumPacketTime == nil { return ("minptime", "milliseconds") }
        case "MPEG4-GENERIC":
            for name in ["sizelength", "indexlength", "indexdeltalength"] where self[name] != nil && integer(name) == nil {
                return (name, "a number of bits")
            }
            if self["config"] != nil, config == nil { return ("config", "hex digits") }
        case "MP4A-LATM":
            if self["config"] != nil, config == nil { return ("config", "hex digits") }
        default:
            break
        }
        return nil
    }
}

/// Hex digits ↔ bytes, for `profile-level-id` and `config`.
enum SDPHex {
    static func decode(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func value(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return digit - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

/// Strict decimal numbers: ASCII digits only (no sign, no spaces), no overflow.
enum SDPNumber {
    static func unsigned<T: FixedWidthInteger & UnsignedInteger>(_ text: Substring, as type: T.Type) -> T? {
        guard !text.isEmpty else { return nil }
        var value: T = 0
        for byte in text.utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(T(byte - UInt8(ascii: "0")))
            guard !overflow1, !overflow2 else { return nil }
            value = sum
        }
        return value
    }

    /// A non-negative decimal number of milliseconds (`20`, `2.5`), exact to the nanosecond.
    static func milliseconds(_ text: Substring) -> Duration? {
        guard isDecimal(text) else { return nil }
        return try? Duration(parsing: "\(text)ms")
    }

    /// A non-negative decimal number (`30`, `29.97`).
    static func isDecimal(_ text: Substring) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), !parts[0].isEmpty, text.utf8.count <= 24 else { return false }
        return parts.allSatisfy { part in
            !part.isEmpty && part.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        }
    }

    /// Milliseconds as the shortest decimal text: `20`, `2.5`.
    static func formatMilliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let nanos = Int128(seconds) * 1_000_000_000 + Int128(attoseconds / 1_000_000_000)
        let sign = nanos < 0 ? "-" : ""
        let magnitude = nanos.magnitude
        let whole = magnitude / 1_000_000
        var fraction = magnitude % 1_000_000
        guard fraction != 0 else { return "\(sign)\(whole)" }
        var digits = 6
        while fraction % 10 == 0 {
            fraction /= 10
            digits -= 1
        }
        let text = String(fraction)
        return "\(sign)\(whole)." + String(repeating: "0", count: digits - text.count) + text
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs.
    var sdpTrimmed: Substring {
        var text = Substring(self)
        while let first = text.first, first == " " || first == "\t" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        return text
    }
}
