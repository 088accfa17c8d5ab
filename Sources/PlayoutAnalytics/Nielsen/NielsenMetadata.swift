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
        "crossId1", "crossId2", "section", "segA", "channelName", "mediaURL", "clientid", "vcid", "subbrand",
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

    /// The custom segment keys (`segA`, `segB`, `segC`): at most
    /// ``aggregationLimit`` distinct values across them.
    public static let segmentKeys = ["segA", "segB", "segC"]
    /// 25: the most distinct `section` values, and the most distinct values across the custom
    /// segments (the guide's "Aggregation Limits").
    public static let aggregationLimit = 25
    /// The ad types (`preroll`, `midroll`, `postroll`, `ad`).
    public static let adTypes: Set<String> = ["preroll", "midroll", "postroll", "ad"]

    /// The keys of `updateOTT`'s info ("AirPlay").
    public static let ottKeys = ["ottStatus", "ottType", "ottDevice", "ottDeviceModel", "ottDeviceID"]

    /// The errors of `updateOTT`'s info: `ottStatus` required, `"0"` or `"1"`.
    public static func validateOTT(_ info: [String: NielsenValue]) -> [NielsenMetadataError] {
        var errors = checkKeysAndValues(info)
        guard info.count <= keyCountLimit, !errors.contains(where: { $0.key == "ottStatus" }) else { return errors }
        switch info["ottStatus"]?.string {
        case nil, "": errors.append(.missingKey("ottStatus", type: "OTT info"))
        case "0", "1": break
        case let status?: errors.append(.invalidValue(key: "ottStatus", value: shorten(status), expected: "\"1\" (AirPlay or mirroring) or \"0\""))
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
            guard isAirdate(value) else {
                return invalid("one of the guide's formats: YYYY-MM-DDTHH:MI:SS (optionally +xx:xx or -xx:xx), YYYY-MM-DDHH:MI:SS, YYYYMMDDHH:MI:SS, YYYYMMDD HH:MI:SS, MM-DD-YYYY, MM/DD/YYYY or YYYYMMDD")
            }
        case "isfullepisode":
            guard fullEpisodeValues.contains(value.lowercased()) else { return invalid("\"y\" (or \"Yes\", \"lf\") or \"n\" (or \"No\", \"sf\")") }
        case "title":
            guard hasSeasonAndEpisode(value) else { return invalid("the season and episode, e.g. \"The Pants Alternative S03E18\" (S01E03, S1E3 or S1 E3)") }
        case "crossId1":
            guard isTMSId(value) else { return invalid("a Gracenote TMS id: EP, EV, MV, SH or SP and 12 digits, e.g. \"EP009311820061\"") }
        case "adloadtype":
            guard value == "1" || value == "2" else { return invalid("\"1\" (linear) or \"2\" (dynamic)") }
        case "assetid":
            guard value.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-_.".unicodeScalars.contains($0)) })
            else { return invalid("letters, digits, -, _ and . only") }
        default: break
        }
        return nil
    }

    /// The guide's nine `airdate` formats ("Acceptable Formats", Create Content Metadata), then
    /// Playout's two ISO 8601 extensions (`Z`, an offset without a colon). `Y M D h m s` are
    /// digits; anything else is literal.
    public static let airdateFormats = [
        "YYYY-MM-DDThh:mm:ss", "YYYY-MM-DDhh:mm:ss", "YYYY-MM-DDThh:mm:ss+hh:mm", "YYYY-MM-DDThh:mm:ss-hh:mm", "YYYYMMDDhh:mm:ss",
        "YYYYMMDD hh:mm:ss", "MM-DD-YYYY", "MM/DD/YYYY", "YYYYMMDD", "YYYY-MM-DDThh:mm:ssZ", "YYYY-MM-DDThh:mm:ss+hhmm",
        "YYYY-MM-DDThh:mm:ss-hhmm",
    ]
    /// The `isfullepisode` values accepted: the guide's `y` and `n`, the long-form and
    /// short-form codes it also accepts (`lf`, `sf`), and the guide's own example's `Yes` (any
    /// case of `yes`/`no`/`y`/`n`).
    public static let fullEpisodeValues: Set<String> = ["y", "n", "yes", "no", "lf", "sf"]

    /// Whether `value` matches one of ``airdateFormats`` with a real month (1–12), day (1–31),
    /// hour (0–23), minute and second (0–59).
    static func isAirdate(_ value: String) -> Bool {
        let scalars = Array(value.unicodeScalars)
        return airdateFormats.contains { format in
            let pattern = Array(format.unicodeScalars)
            guard pattern.count == scalars.count else { return false }
            var fields: [Unicode.Scalar: Int] = [:]
            var offset = false  // after the sign, h and m are the offset's
            for (expected, actual) in zip(pattern, scalars) {
                if "YMDhms".unicodeScalars.contains(expected) {
                    guard ("0"..."9").contains(actual) else { return false }
                    if !offset { fields[expected, default: 0] = fields[expected, default: 0] * 10 + Int(actual.value) - 48 }
                } else {
                    guard expected == actual else { return false }
                    if expected == "+" || (expected == "-" && fields["s"] != nil) { offset = true }
                }
            }
            return (1...12).contains(fields["M"] ?? 1) && (1...31).contains(fields["D"] ?? 1) && (fields["h"] ?? 0) < 24
                && (fields["m"] ?? 0) < 60 && (fields["s"] ?? 0) < 60
        }
    }

    /// Whether `title` names its season and episode as the guide accepts (`S01E03`, `S1E3`,
    /// `S1 E3`); `318` or `0318` alone is not valid.
    static func hasSeasonAndEpisode(_ title: String) -> Bool {
        let scalars = Array(title.unicodeScalars)
        func isDigit(_ index: Int) -> Bool { index < scalars.count && ("0"..."9").contains(scalars[index]) }
        for start in scalars.indices where scalars[start] == "S" && isDigit(start + 1) {
            var index = start + 1
            while isDigit(index) { index += 1 }
            if index < scalars.count, scalars[index] == " " { index += 1 }
            if index < scalars.count, scalars[index] == "E", isDigit(index + 1) { return true }
        }
        return false
    }

    /// Whether `crossId1` is a Gracenote TMS id: 14 characters, `EP`, `EV`, `MV`, `SH` or `SP`
    /// followed by 12 digits.
    static func isTMSId(_ value: String) -> Bool {
        let scalars = Array(value.unicodeScalars)
        guard scalars.count == 14, ["EP", "EV", "MV", "SH", "SP"].contains(String(String.UnicodeScalarView(scalars[0..<2]))) else { return false }
        return scalars[2...].allSatisfy { ("0"..."9").contains($0) }
    }

    static func shorten(_ text: String) -> String {
        text.utf8.count <= 64 ? text : String(text.prefix(64)) + "…"
    }
}
