import ArgumentParser
import Playout
import PlayoutSender

/// A duration as typed: a number and a unit, e.g. `230ms`, `1.5s`, `2m` (0 or more).
struct DurationArgument: ArgumentValue, Equatable {
    static let valueName = "duration"
    var duration: Duration
    /// As typed (for messages), or the shortest form of a default.
    var text: String

    init(_ duration: Duration) {
        self.duration = duration
        text = duration.typedDescription
    }

    init(parsing text: String) throws(ValidationError) {
        do {
            duration = try Duration(parsing: text)
        } catch {
            throw ValidationError(error.description)
        }
        self.text = text
    }

    /// `230ms`, `20s`: what a user types.
    var defaultValueDescription: String { duration.typedDescription }

    /// Equal durations, however typed.
    static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.duration == rhs.duration
    }
}

extension Duration {
    /// The shortest form a user would type: `230ms`, `20s`, `2m`, `1h`.
    var typedDescription: String {
        let nanoseconds = nanoseconds
        for (unit, length) in [("h", Int64(3_600_000_000_000)), ("m", 60_000_000_000)] where nanoseconds >= length && nanoseconds % length == 0 {
            return "\(nanoseconds / length)\(unit)"
        }
        return compactDescription
    }
}

/// How long a run lasts: a duration typed as ``DurationArgument``, or, by default for some
/// commands, until it is stopped (Ctrl-C, or the end of a file).
struct RunLength: ArgumentValue, Equatable {
    static let valueName = DurationArgument.valueName
    /// The limit as typed, nil until stopped.
    var limit: DurationArgument?

    /// Until Ctrl-C (or the end of a file).
    static let untilStopped = RunLength(limit: nil)

    /// At most `duration`.
    static func limited(_ duration: Duration) -> RunLength {
        RunLength(limit: DurationArgument(duration))
    }

    private init(limit: DurationArgument?) {
        self.limit = limit
    }

    init(parsing text: String) throws(ValidationError) {
        limit = try DurationArgument(parsing: text)
    }

    /// The limit, nil until stopped.
    var duration: Duration? { limit?.duration }

    var defaultValueDescription: String { limit?.defaultValueDescription ?? "until Ctrl-C" }
}

/// A share of packets: `2%`, or a fraction such as `0.02`; 0% to 100%.
struct PercentageArgument: ArgumentValue, Equatable {
    static let valueName = "percent"
    /// The fraction, 0...1.
    var fraction: Double

    init(fraction: Double) {
        self.fraction = fraction
    }

    init(parsing text: String) throws(ValidationError) {
        do {
            fraction = try NetworkImpairment.parsePercentage(text)
        } catch {
            throw ValidationError(error.message)
        }
    }

    /// `0%`, `2%`, `1.5%`.
    var defaultValueDescription: String { Self.describe(fraction) }

    static func describe(_ fraction: Double) -> String {
        let percent = (fraction * 100 * 1e6).rounded() / 1e6
        return percent == percent.rounded() && abs(percent) < 1e15 ? "\(Int64(percent))%" : "\(percent)%"
    }
}

/// Bits per second with an optional `k`, `M` or `G` suffix: `2M`, `800k`, `2500000`; from 1 bit/s
/// to 1 Tbit/s.
struct BitRateArgument: ArgumentValue, Equatable {
    static let valueName = "bits/s"
    var bitsPerSecond: Int

    init(bitsPerSecond: Int) {
        self.bitsPerSecond = bitsPerSecond
    }

    init(parsing text: String) throws(ValidationError) {
        guard !text.hasPrefix("-") else {
            throw ValidationError("a bit rate cannot be negative: write bits per second from 1 to 1T, with an optional k, M, G or T, e.g. 2M or 800k")
        }
        guard let rate = ScheduledBandwidthLimit.bitsPerSecond(parsing: Substring(text)) else {
            throw ValidationError("write bits per second from 1 to 1T, with an optional k, M, G or T, e.g. 2M or 800k")
        }
        bitsPerSecond = rate
    }

    /// `2.5M`, `800k`, `1234567`: the shortest form with at most three decimals.
    var defaultValueDescription: String { ScheduledBandwidthLimit.text(bitsPerSecond: bitsPerSecond) }
}

/// Bursty loss, `RATE/MEAN-BURST-LENGTH`: `10%/8` loses 10 % of packets in bursts of 8 on average.
struct BurstLossArgument: ArgumentValue, Equatable {
    static let valueName = "rate/length"
    var burstLoss: NetworkImpairment.BurstLoss

    init(parsing text: String) throws(ValidationError) {
        let form = "write RATE/MEAN-BURST-LENGTH, e.g. 10%/8 (10% of packets, in bursts of 8 on average)"
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2 else { throw ValidationError(form) }
        let rate = try PercentageArgument(parsing: String(parts[0])).fraction
        guard rate < 1 else { throw ValidationError("the rate must be below 100%; \(form)") }
        guard parts[1].allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }), let length = Double(parts[1]), length.isFinite, length >= 1 else {
            throw ValidationError("the mean burst length '\(parts[1])' must be a number of packets, 1 or more; \(form)")
        }
        burstLoss = .init(rate: rate, meanBurstLength: length)
    }

    var defaultValueDescription: String {
        "\(PercentageArgument.describe(burstLoss.rate))/\(burstLoss.meanBurstLength == burstLoss.meanBurstLength.rounded() ? "\(Int(burstLoss.meanBurstLength))" : "\(burstLoss.meanBurstLength)")"
    }
}

/// The codec the test pattern is encoded in.
enum VideoCodecArgument: String, ArgumentValue, CaseIterable {
    static let valueName = "codec"
    case h264
    case vp8

    init(parsing text: String) throws(ValidationError) {
        guard let codec = Self(rawValue: text.lowercased()) else {
            throw ValidationError("the test pattern is encoded as \(Self.allCases.map(\.rawValue).joined(separator: " or "))")
        }
        self = codec
    }

    // Both ArgumentValue and RawRepresentable offer one; this type parses as ArgumentValue does.
    init?(argument: String) {
        guard let codec = try? Self(parsing: argument) else { return nil }
        self = codec
    }

    init(_ codec: Codec) {
        self = codec == .vp8 ? .vp8 : .h264
    }

    var codec: Codec {
        switch self {
        case .h264: .h264
        case .vp8: .vp8
        }
    }
}

/// A picture size, `WIDTHxHEIGHT`, e.g. `1280x720`.
struct PictureSizeArgument: ArgumentValue, Equatable {
    static let valueName = "size"
    var width: Int
    var height: Int

    init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    init(parsing text: String) throws(ValidationError) {
        let parts = text.split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0.isASCII && $0.isNumber } }),
              let width = Int(parts[0]), let height = Int(parts[1]), (1...16_384).contains(width), (1...16_384).contains(height)
        else { throw ValidationError("write WIDTHxHEIGHT, e.g. 1280x720") }
        self.width = width
        self.height = height
    }

    var defaultValueDescription: String { "\(width)x\(height)" }
}

/// Where rendered frames go: `null`, `file:PATH.y4m`, `file:PATH.wav`, `file:PATH.mkv`/`.mp4`.
struct SinkArgument: ArgumentValue, Equatable {
    static let valueName = "sink"
    var spec: SinkSpec

    init(_ spec: SinkSpec) {
        self.spec = spec
    }

    init(parsing text: String) throws(ValidationError) {
        do {
            spec = try SinkSpec(parsing: text)
        } catch {
            throw ValidationError(error.message)
        }
    }

    var defaultValueDescription: String { spec.description }
}

/// A playout-delay override planned ahead, `DELAY@AT[/FOR]`, e.g. `2s@5s/10s`.
struct OverrideArgument: ArgumentValue, Equatable {
    static let valueName = "delay@at[/for]"
    var override: ScheduledOverride

    init(parsing text: String) throws(ValidationError) {
        do {
            override = try ScheduledOverride(parsing: text)
        } catch {
            throw ValidationError(error.message)
        }
    }

    var defaultValueDescription: String { override.description }
}

/// A scheduled bandwidth limit, `RATE@AT[/FOR]` (the `--override` timetable).
struct BandwidthLimitArgument: ArgumentValue, Equatable {
    static let valueName = "rate@at[/for]"
    var limit: ScheduledBandwidthLimit

    init(parsing text: String) throws(ValidationError) {
        do {
            limit = try ScheduledBandwidthLimit(parsing: text)
        } catch {
            throw ValidationError(error.message)
        }
    }

    var defaultValueDescription: String { limit.description }
}

/// An SRTP master key and salt in base64 (AES_CM_128_HMAC_SHA1_80: 30 bytes). Never repeated in
/// messages or help.
struct SRTPKeyArgument: ArgumentValue, CustomStringConvertible {
    static let valueName = "base64"
    static let isSecret = true
    /// The suite of keys typed on the command line.
    static let suite = SRTPCryptoSuite.aesCM128HMACSHA1_80
    var keyingMaterial: SRTPKeyingMaterial

    init(parsing text: String) throws(ValidationError) {
        let fix = "give the \(Self.suite.keyingMaterialLength)-byte master key and salt in base64, e.g. from head -c \(Self.suite.keyingMaterialLength) /dev/urandom | base64"
        do {
            keyingMaterial = try SRTPKeyingMaterial(base64: text, suite: Self.suite)
        } catch .invalidKeyEncoding(.invalidCharacter) {
            // Named as typed: the decoder sees bytes, so it cannot show a character beyond ASCII.
            throw ValidationError("\(Self.firstForeignCharacter(in: text) ?? "a character") is not base64 (A–Z, a–z, 0–9, +, /, and = at the end); \(fix)")
        } catch {
            throw ValidationError("\(error); \(fix)")
        }
    }

    /// The first character of the key part (after `inline:`, before `|`) outside the base64
    /// alphabet, as `'ñ' (character 3)`; a space or control character by its code point.
    static func firstForeignCharacter(in text: String) -> String? {
        let start = text.hasPrefix("inline:") ? "inline:".count : 0
        for (offset, character) in text.enumerated().dropFirst(start) {
            if character == "|" { return nil }
            let isBase64 = character.isASCII && (character.isLetter || character.isNumber || "+/=".contains(character))
            guard !isBase64 else { continue }
            let shown = character.isWhitespace || character.unicodeScalars.contains { $0.properties.generalCategory == .control }
                ? character.unicodeScalars.map(Self.codePoint).joined(separator: " ")
                : "'\(character)'"
            return "\(shown) (character \(offset + 1))"
        }
        return nil
    }

    /// `U+0009`.
    private static func codePoint(_ scalar: Unicode.Scalar) -> String {
        let hex = String(scalar.value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }

    var description: String { "SRTPKeyArgument(\(keyingMaterial))" }
    var defaultValueDescription: String { "(hidden)" }
}

/// A destination, `HOST:PORT` or `[IPv6]:PORT`, e.g. `127.0.0.1:5004`.
struct DestinationArgument: ArgumentValue, Equatable {
    static let valueName = "host:port"
    var address: SocketAddress

    init(parsing text: String) throws(ValidationError) {
        do {
            address = try SocketAddress(parsing: text)
        } catch {
            throw ValidationError(error.message)
        }
    }

    var defaultValueDescription: String { address.description }
}

/// Where `publish --sdp` writes the SDP: a path that names a file, as ``OutputPathArgument``
/// checks it.
struct SDPPathArgument: ArgumentValue, Equatable {
    static let valueName = "sdp-path"
    var path: String

    init(parsing text: String) throws(ValidationError) {
        path = try OutputPathArgument.check(text, example: "stream.sdp")
    }

    var defaultValueDescription: String { path }
}
