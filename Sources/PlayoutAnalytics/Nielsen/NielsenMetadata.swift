/// A value in Nielsen metadata or channel info. The guide wants strings only; the other cases
/// exist so that what an app really passes (a number, a flag, null) can be checked and refused
/// with a clear error instead of being coerced.
public enum NielsenValue: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral,
    ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral
{
    /// A string: the only kind the guide accepts.
    case string(String)
    /// A whole number.
    case int(Int64)
    /// A real number.
    case double(Double)
    /// A flag.
    case bool(Bool)
    /// No value (JSON null).
    case null

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }

    /// The kind's name in error messages (`string`, `integer`, `number`, `boolean`, `null`).
    public var kind: String {
        switch self {
        case .string: "string"
        case .int: "integer"
        case .double: "number"
        case .bool: "boolean"
        case .null: "null"
        }
    }

    /// The string, when it is one.
    public var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var description: String {
        switch self {
        case .string(let value): value
        case .int(let value): String(value)
        case .double(let value): String(value)
        case .bool(let value): String(value)
        case .null: "null"
        }
    }
}

/// Why Nielsen metadata (or channel info) was refused; each case names the key and maps to the
/// ``NielsenRule`` it breaks. Keys and values in messages are shortened to 64 characters.
public enum NielsenMetadataError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A key the content type requires is absent (or empty).
    case missingKey(String, type: String)
    /// A reserved key spelled in another case (`assetId` for `assetid`).
    case wrongCaseKey(String, expected: String)
    /// A value that is not a string; `found` is its kind.
    case notAString(key: String, found: String)
    /// A value (or, with `key` nil, a key) longer than the limit, in characters.
    case tooLong(key: String, length: Int, limit: Int)
    /// More keys than Playout accepts.
    case tooManyKeys(count: Int, limit: Int)
    /// A value not in the guide's format; `expected` says what is.
    case invalidValue(key: String, value: String, expected: String)

    /// The rule broken.
    public var rule: NielsenRule {
        switch self {
        case .missingKey: .requiredKeys
        case .wrongCaseKey: .caseSensitiveKeys
        case .notAString: .stringValues
        case .tooLong, .tooManyKeys: .lengthLimits
        case .invalidValue: .valueFormat
        }
    }

    /// The key the error is about (nil for too many keys).
    public var key: String? {
        switch self {
        case .missingKey(let key, _), .wrongCaseKey(let key, _), .notAString(let key, _), .tooLong(let key, _, _),
            .invalidValue(let key, _, _):
            key
        case .tooManyKeys: nil
        }
    }

    public var description: String {
        switch self {
        case .missingKey(let key, let type): "missing key \"\(key)\" (required for type \(type))"
        case .wrongCaseKey(let key, let expected): "key \"\(key)\" must be spelled \"\(expected)\" (keys are case-sensitive)"
        case .notAString(let key, let found): "value of \"\(key)\" is a \(found): metadata values are strings, e.g. \"3600\""
        case .tooLong(let key, let length, let limit): "\"\(key)\" is \(length) characters long: at most \(limit)"
        case .tooManyKeys(let count, let limit): "\(count) keys: at most \(limit)"
        case .invalidValue(let key, let value, let expected): "value \"\(value)\" of \"\(key)\" is invalid: expected \(expected)"
        }
    }
}

/// Nielsen DCR metadata as the guide states it, and its validation (see ``NielsenRule``).
///
/// ```swift
/// let errors = NielsenMetadata.validate(["type": "content", "assetid": "EP1", "length": 3600])
/// // [.notAString(key: "length", found: "integer"), .missingKey("program", type: "content"), …]
/// ```
///
/// - Complexity: O(n log n) in the number of keys; each key and value is looked at once, and
///   oversized ones are refused after reading at most a few times the limit.
public enum NielsenMetadata {
    /// Keys reserved by the guide, as they must be spelled.
    public static let reservedKeys: [String] = [
        "type", "assetid", "program", "title", "length", "airdate", "isfullepisode", "adloadtype", "segB", "segC",
        "crossId1", "crossId2", "section", "channelName", "mediaURL", "clientid", "vcid", "subbrand",
    ]
    /// The content types and the keys each requires.
    public static let requiredKeys: [String: [String]] = [
        "content": ["type", "assetid", "program", "title", "length", "airdate", "isfullepisode", "adloadtype"],
        "preroll": ["type", "assetid"], "midroll": ["type", "assetid"], "postroll": ["type", "assetid"], "ad": ["type", "assetid"],
        "static": ["type", "section"],
    ]
    /// Character limits of particular keys (`program` 25, `title` 40).
    public static let valueLimits: [String: Int] = ["program": 25, "title": 40]
    /// The limit of any other value: 511 characters.
    public static let defaultValueLimit = 511
    /// The longest key accepted: 64 characters.
    public static let keyLimit = 64
    /// The most keys accepted: 100.
    public static let keyCountLimit = 100

    private static let reservedByLowercase = Dictionary(uniqueKeysWithValues: reservedKeys.map { ($0.lowercased(), $0) })

    /// The errors of content or ad metadata (empty: valid), in key order.
    public static func validate(_ metadata: [String: NielsenValue]) -> [NielsenMetadataError] {
        var errors = checkKeysAndValues(metadata)
        guard metadata.count <= keyCountLimit else { return errors }
        // A key present in another case is reported once, as a wrong-case key, not also missing.
        let lowercasedKeys = Set(metadata.keys.map { $0.lowercased() })
        func missing(_ key: String) -> Bool {
            metadata[key] == nil ? !lowercasedKeys.contains(key.lowercased()) : metadata[key]?.string?.isEmpty == true
        }
        guard let type = metadata["type"]?.string, !type.isEmpty, !errors.contains(where: { $0.key == "type" }) else {
            if missing("type") { errors.append(.missingKey("type", type: "any")) }
            return errors  // without a usable type, which keys are required is unknown
        }
        guard let required = requiredKeys[type] else {
            errors.append(.invalidValue(key: "type", value: shorten(type), expected: "content, preroll, midroll, postroll, ad or static"))
            return errors
        }
        for key in required where missing(key) {
            errors.append(.missingKey(key, type: type))
        }
        return errors
    }

    /// The errors of `play`'s channel info (`channelName` required).
    public static func validateChannelInfo(_ channelInfo: [String: NielsenValue]) -> [NielsenMetadataError] {
        var errors = checkKeysAndValues(channelInfo)
        if channelInfo.count <= keyCountLimit, channelInfo["channelName"]?.string?.isEmpty ?? true,
            !errors.contains(where: { $0.key == "channelName" })
        {
            errors.append(.missingKey("channelName", type: "channel info"))
        }
        return errors
    }

    /// Whether `length` says the content is live (a continuous stream, 86400, or unknown, 0):
    /// its playhead is then the Unix time.
    static func isLive(length: String?) -> Bool {
        guard let length, let seconds = Double(length) else { return false }
        return seconds == 0 || seconds == 86_400
    }

    private static func checkKeysAndValues(_ metadata: [String: NielsenValue]) -> [NielsenMetadataError] {
        guard metadata.count <= keyCountLimit else { return [.tooManyKeys(count: metadata.count, limit: keyCountLimit)] }
        var errors: [NielsenMetadataError] = []
        for key in metadata.keys.sorted() {
            let value = metadata[key]!
            if let length = length(of: key, limit: keyLimit) {
                errors.append(.tooLong(key: shorten(key), length: length, limit: keyLimit))
                continue
            }
            if let expected = reservedByLowercase[key.lowercased()], expected != key {
                errors.append(.wrongCaseKey(key, expected: expected))
                continue
            }
            guard let string = value.string else {
                errors.append(.notAString(key: key, found: value.kind))
                continue
            }
            let limit = valueLimits[key] ?? defaultValueLimit
            if let length = length(of: string, limit: limit) {
                errors.append(.tooLong(key: key, length: length, limit: limit))
                continue
            }
            if let error = formatError(key: key, value: string) { errors.append(error) }
        }
        return errors
    }

    /// The length of `text` in characters when it exceeds `limit` (counting at most a bounded
    /// prefix: a huge value costs no more than a few times the limit), nil when within it.
    private static func length(of text: String, limit: Int) -> Int? {
        let bytes = text.utf8.count
        guard bytes > limit else { return nil }  // a character is at least one byte
        if bytes > limit * 8 { return bytes }  // no need to count characters: far too long
        let count = text.count
        return count > limit ? count : nil
    }

    private static func formatError(key: String, value: String) -> NielsenMetadataError? {
        func invalid(_ expected: String) -> NielsenMetadataError {
            .invalidValue(key: key, value: shorten(value), expected: expected)
        }
        switch key {
        case "length":
            guard let seconds = Double(value), seconds.isFinite, seconds >= 0, value.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }) else {
                return invalid("seconds, e.g. \"3600\" (86400 for a continuous stream, 0 when unknown)")
            }
        case "airdate":
            guard isAirdate(value) else { return invalid("YYYY-MM-DDThh:mm:ssZ (or an offset, -0500) or YYYYMMDD HH:MI:SS") }
        case "isfullepisode":
            guard value == "y" || value == "n" else { return invalid("\"y\" or \"n\"") }
        case "adloadtype":
            guard value == "1" || value == "2" else { return invalid("\"1\" (linear) or \"2\" (dynamic)") }
        case "assetid":
            guard value.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-_.".unicodeScalars.contains($0)) })
            else { return invalid("letters, digits, -, _ and . only") }
        default: break
        }
        return nil
    }

    /// `YYYY-MM-DDThh:mm:ss` followed by `Z` or `±hh:mm`/`±hhmm`, or `YYYYMMDD HH:MI:SS`.
    private static func isAirdate(_ value: String) -> Bool {
        let scalars = Array(value.unicodeScalars)
        func digits(_ range: Range<Int>) -> Bool {
            range.upperBound <= scalars.count && range.allSatisfy { ("0"..."9").contains(scalars[$0]) }
        }
        func at(_ index: Int, _ character: Unicode.Scalar) -> Bool { index < scalars.count && scalars[index] == character }
        if scalars.count == 17 {  // YYYYMMDD HH:MI:SS
            return digits(0..<8) && at(8, " ") && digits(9..<11) && at(11, ":") && digits(12..<14) && at(14, ":") && digits(15..<17)
        }
        guard digits(0..<4), at(4, "-"), digits(5..<7), at(7, "-"), digits(8..<10), at(10, "T"), digits(11..<13), at(13, ":"),
            digits(14..<16), at(16, ":"), digits(17..<19)
        else { return false }
        let zone = Array(scalars[19...])
        if zone == ["Z"] { return true }
        guard let sign = zone.first, sign == "+" || sign == "-" else { return false }
        let offset = zone.dropFirst().filter { $0 != ":" }
        return offset.count == 4 && offset.allSatisfy { ("0"..."9").contains($0) } && zone.count <= 6
    }

    static func shorten(_ text: String) -> String {
        text.utf8.count <= 64 ? text : String(text.prefix(64)) + "…"
    }
}
