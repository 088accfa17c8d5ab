import PlayoutCore
import PlayoutHTTP
import PlayoutTelemetryBackends

/// A swarm run's store: every shard writes each of its viewers' outcomes into one time-series
/// database (InfluxDB 1.x or VictoriaMetrics, ``SwarmStoreSpec``), and `playout swarm report`
/// reads the whole run back (``readRun(from:run:)``).
///
/// One point per viewer, InfluxDB line protocol:
///
/// | part | value |
/// |---|---|
/// | measurement | `playout_swarm_viewer` |
/// | tags | `outcome` (the state, for VictoriaMetrics, which keeps no strings), `run`, `shard`, `viewer` (global number) |
/// | fields | every ``ViewerOutcome`` field by its Swift name: `state` (string), `decoded` (boolean), `startupTime`, `renderedRatio`, `framesRendered` (integer), `freezeCount` (integer), `freezeRatio`, `endToEndLatency`, `jitterBufferDelay`, `bitrate`, `packetsLost` (integer), `nackCount` (integer), `framesDecoded` (integer); a nil or non-finite value is left out |
/// | time | the wall time given, nanoseconds |
///
/// VictoriaMetrics stores each field as a series `playout_swarm_viewer_<field>` with the tags
/// (and `db`) as labels. A retried shard writes its viewers again at a later time: reading back
/// keeps each viewer's latest point and reports the others as duplicates (``SwarmRun``).
///
/// ```swift
/// let lines = try SwarmStore.lines(outcomes, run: "nightly-42", at: wallNanoseconds)
/// try SwarmStore.write(lines, to: "influx:http://127.0.0.1:8086/write?db=playout")
/// let run = try SwarmStore.readRun(from: "influx:http://127.0.0.1:8086/write?db=playout", run: "nightly-42")
/// print(run.table())
/// ```
public enum SwarmStore {
    /// The measurement of viewers' outcomes.
    public static let measurement = "playout_swarm_viewer"
    /// The longest run id accepted, in UTF-8 bytes.
    public static let maximumRunLength = 200
    /// The most bytes an answer of the store may have (64 MiB, some 100 000 viewers): a larger
    /// one is an error, so memory stays bounded whatever the server sends.
    public static let maximumAnswerBytes = 64 * 1024 * 1024
    /// How many lines one write request carries.
    public static let linesPerRequest = 5_000
    /// The bound of one request, from connecting to the end of the answer.
    public static let requestTimeout: Duration = .seconds(30)

    /// Checks that `run` can be a run id: 1 to ``maximumRunLength`` bytes, no control character
    /// and no backslash (InfluxDB 1.x and VictoriaMetrics read backslashes in tags differently).
    /// Spaces, commas, `=`, quotes and any other character are fine: they are escaped.
    ///
    /// - Throws: ``SwarmStoreError`` with code `invalidRun` saying what to write.
    public static func validate(run: String) throws(SwarmStoreError) {
        func invalid(_ why: String) -> SwarmStoreError {
            SwarmStoreError(.invalidRun, "the run id '\(run.prefix(60))' \(why): write a plain one, e.g. --run nightly-42")
        }
        guard !run.isEmpty else { throw invalid("is empty") }
        guard run.utf8.count <= maximumRunLength else { throw invalid("is longer than \(maximumRunLength) bytes") }
        guard !run.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || $0 == "\u{2028}" || $0 == "\u{2029}" }) else {
            throw invalid("has a control character")
        }
        guard !run.contains("\\") else { throw invalid("has a backslash") }
    }

    /// The line-protocol lines of `outcomes` (one per viewer, no final newline), for run `run`
    /// at wall time `at` (nanoseconds since 1970).
    ///
    /// - Throws: ``SwarmStoreError`` with code `invalidRun` when `run` cannot be a run id
    ///   (``validate(run:)``).
    public static func lines(_ outcomes: [ViewerOutcome], run: String, at wallNanoseconds: Int64) throws(SwarmStoreError) -> [String] {
        try validate(run: run)
        return outcomes.map { line($0, run: run, at: wallNanoseconds) }
    }

    /// Writes `lines` (``lines(_:run:at:)``) to the store `spec` names, in requests of
    /// ``linesPerRequest`` lines.
    ///
    /// - Throws: ``SwarmStoreError``: `invalidSpec` for a spec that is not one, `unreachable` when
    ///   the server cannot be reached, `refused` with the server's own answer when it does not
    ///   take the write (HTTP status other than 2xx).
    public static func write(_ lines: [String], to spec: String) throws(SwarmStoreError) {
        try write(lines, to: SwarmStoreSpec(parsing: spec))
    }

    /// Writes `lines` to the parsed store `spec`, as the `String` overload does.
    public static func write(_ lines: [String], to spec: SwarmStoreSpec) throws(SwarmStoreError) {
        let client = HTTPClient(host: spec.host, port: spec.port, timeout: requestTimeout)
        defer { client.close() }
        var start = 0
        while start < lines.count {
            let end = min(lines.count, start + linesPerRequest)
            var body: [UInt8] = []
            for line in lines[start..<end] {
                body.append(contentsOf: line.utf8)
                body.append(UInt8(ascii: "\n"))
            }
            let response = try send(client, spec, "POST", spec.writeTarget, headers: [HTTPHeader("Content-Type", "text/plain; charset=utf-8")], body: body)
            guard (200...299).contains(response.status) else {
                throw SwarmStoreError(.refused, "\(spec.kind.serverName) at \(client.authority) refused the write (HTTP \(response.status)): \(answer(response))")
            }
            start = end
        }
    }

    /// Every viewer of run `run` stored in `spec`, one per viewer (the latest written when a
    /// retried shard wrote it twice), by viewer number. ``readRun(from:run:)`` also says how many
    /// duplicates there were.
    ///
    /// - Throws: ``SwarmStoreError`` (see ``readRun(from:run:)``).
    public static func read(from spec: String, run: String) throws(SwarmStoreError) -> [ViewerOutcome] {
        try readRun(from: spec, run: run).viewers
    }

    /// Run `run` as stored in `spec`: its viewers, duplicates and unreadable records.
    ///
    /// InfluxDB: `SELECT * FROM playout_swarm_viewer WHERE "run" = '…'` (the run id escaped, so
    /// it cannot change the query). VictoriaMetrics: `/api/v1/export` of
    /// `{__name__=~"playout_swarm_viewer_.+",run="…"[,db="…"]}`.
    ///
    /// - Throws: ``SwarmStoreError``: `invalidSpec`, `invalidRun`, `unreachable`, `refused` (an
    ///   HTTP error, with the server's answer), `malformedAnswer` (not the JSON the server
    ///   speaks: an HTML page, truncated JSON …) or `answerTooLarge` (above
    ///   ``maximumAnswerBytes``).
    public static func readRun(from spec: String, run: String) throws(SwarmStoreError) -> SwarmRun {
        let parsed = try SwarmStoreSpec(parsing: spec)
        try validate(run: run)
        let client = HTTPClient(host: parsed.host, port: parsed.port, timeout: requestTimeout,
                                limits: HTTPResponseParser.Limits(bodyBytes: maximumAnswerBytes))
        defer { client.close() }
        let records: SwarmStoreRecords
        switch parsed.kind {
        case .influx:
            let query = "SELECT * FROM \(measurement) WHERE \"run\" = '\(influxQLString(run))'"
            let target = "/query?db=\(HTTPEndpoint.percentEncoded(parsed.database ?? ""))&epoch=ns&q=\(HTTPEndpoint.percentEncoded(query))"
            let response = try send(client, parsed, "GET", target)
            try checkStatus(response, parsed, client: client, hint: " (is it VictoriaMetrics? then write victoria:http://\(client.authority))")
            records = try SwarmStoreRecords(influxAnswer: response.body, run: run, server: "InfluxDB at \(client.authority)")
        case .victoria:
            var selector = "{__name__=~\"\(measurement)_.+\",run=\"\(metricsQLString(run))\""
            if let database = parsed.database { selector += ",db=\"\(metricsQLString(database))\"" }
            selector += "}"
            let response = try send(client, parsed, "GET", "/api/v1/export?match[]=\(HTTPEndpoint.percentEncoded(selector))")
            try checkStatus(response, parsed, client: client, hint: "")
            records = try SwarmStoreRecords(victoriaExport: response.body, run: run, server: "VictoriaMetrics at \(client.authority)")
        }
        return SwarmRun(run: run, source: spec, records: records.records, unreadable: records.unreadable)
    }

    /// `text` inside an InfluxQL single-quoted string: backslashes and single quotes escaped.
    static func influxQLString(_ text: String) -> String {
        text.replacingAll("\\", with: "\\\\").replacingAll("'", with: "\\'")
    }

    /// `text` inside a MetricsQL double-quoted string: backslashes and double quotes escaped.
    static func metricsQLString(_ text: String) -> String {
        text.replacingAll("\\", with: "\\\\").replacingAll("\"", with: "\\\"")
    }

    // MARK: - Writing lines

    static func line(_ outcome: ViewerOutcome, run: String, at wallNanoseconds: Int64) -> String {
        let state = cleanState(outcome.state)
        var text = measurement
        text += ",outcome=" + escapeTag(outcomeTag(state))
        text += ",run=" + escapeTag(run)
        text += ",shard=\(outcome.shard),viewer=\(outcome.viewer) "
        var fields: [String] = ["state=\"\(state.replacingAll("\\", with: "\\\\").replacingAll("\"", with: "\\\""))\"", "decoded=\(outcome.decoded)"]
        func float(_ name: String, _ value: Double?) {
            if let value, value.isFinite { fields.append("\(name)=\(value)") }
        }
        func integer(_ name: String, _ value: Int?) {
            if let value { fields.append("\(name)=\(value)i") }
        }
        float("startupTime", outcome.startupTime)
        float("renderedRatio", outcome.renderedRatio)
        integer("framesRendered", outcome.framesRendered)
        integer("freezeCount", outcome.freezeCount)
        float("freezeRatio", outcome.freezeRatio)
        float("endToEndLatency", outcome.endToEndLatency)
        float("jitterBufferDelay", outcome.jitterBufferDelay)
        float("bitrate", outcome.bitrate)
        integer("packetsLost", outcome.packetsLost)
        integer("nackCount", outcome.nackCount)
        integer("framesDecoded", outcome.framesDecoded)
        text += fields.joined(separator: ",")
        text += " \(wallNanoseconds)"
        return text
    }

    /// The state as stored: control characters (which line protocol cannot carry) as spaces.
    static func cleanState(_ state: String) -> String {
        let cleaned = String(String.UnicodeScalarView(state.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? " " : $0 }))
        return cleaned.isEmpty ? "unknown" : cleaned
    }

    /// The state as the `outcome` tag carries it: backslashes as `/` (InfluxDB 1.x and
    /// VictoriaMetrics read them differently in tags), at most 256 characters.
    static func outcomeTag(_ state: String) -> String {
        String(state.replacingAll("\\", with: "/").prefix(256))
    }

    /// Commas, equals signs and spaces escaped with a backslash, as tag values need.
    static func escapeTag(_ text: String) -> String {
        var result = ""
        for character in text {
            if character == "," || character == "=" || character == " " { result.append("\\") }
            result.append(character)
        }
        return result
    }

    // MARK: - HTTP

    private static func send(_ client: HTTPClient, _ spec: SwarmStoreSpec, _ method: String, _ target: String, headers: [HTTPHeader] = [], body: [UInt8] = []) throws(SwarmStoreError) -> HTTPResponse {
        do throws(NetworkTelemetryError) {
            return try client.send(method: method, target: target, headers: headers, body: body)
        } catch {
            let code: SwarmStoreError.Code = error.code == .responseTooLarge ? .answerTooLarge : error.code == .malformedResponse ? .malformedAnswer : .unreachable
            let limit = code == .answerTooLarge ? " (at most \(maximumAnswerBytes / 1024 / 1024) MiB is read)" : ""
            throw SwarmStoreError(code, "\(spec.kind.serverName) at \(client.authority) (\(spec.text)): \(error.message)\(limit)")
        }
    }

    private static func checkStatus(_ response: HTTPResponse, _ spec: SwarmStoreSpec, client: HTTPClient, hint: String) throws(SwarmStoreError) {
        guard (200...299).contains(response.status) else {
            let extra = response.status == 404 || response.status == 400 ? hint : ""
            throw SwarmStoreError(.refused, "\(spec.kind.serverName) at \(client.authority) answered HTTP \(response.status): \(answer(response))\(extra)")
        }
    }

    /// The server's reason: InfluxDB's `X-Influxdb-Error`, else the start of the body.
    static func answer(_ response: HTTPResponse) -> String {
        let text = response.header("X-Influxdb-Error") ?? response.bodyText()
        return text.isEmpty ? "(no reason given)" : text
    }
}

extension SwarmStoreSpec.Kind {
    /// The server's name, for messages.
    var serverName: String {
        switch self {
        case .influx: "InfluxDB"
        case .victoria: "VictoriaMetrics"
        }
    }
}

/// Why a swarm run could not be written to or read from its store: a code to act on and a
/// message that names the server and the fix.
public struct SwarmStoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Code: Equatable, Sendable {
        /// The `--from` / `--telemetry` spec is not one (``SwarmStoreSpec``).
        case invalidSpec
        /// The run id cannot be one (``SwarmStore/validate(run:)``).
        case invalidRun
        /// The server could not be reached: refused, timed out, closed.
        case unreachable
        /// The server answered with an HTTP error (its answer is in the message).
        case refused
        /// The answer is not what the server speaks (an HTML page, truncated JSON …).
        case malformedAnswer
        /// The answer is larger than ``SwarmStore/maximumAnswerBytes``.
        case answerTooLarge
        /// The store holds no viewer of the run.
        case noViewers
    }

    /// What went wrong.
    public var code: Code
    /// What happened, naming the server and what to do.
    public var message: String

    /// An error with its code and message.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

extension String {
    /// `self` with every `target` replaced by `replacement` (no Foundation).
    func replacingAll(_ target: String, with replacement: String) -> String {
        guard !target.isEmpty, contains(target) else { return self }
        var result = ""
        var rest = self[...]
        while let range = rest.firstRange(of: target) {
            result += rest[..<range.lowerBound]
            result += replacement
            rest = rest[range.upperBound...]
        }
        result += rest
        return result
    }
}
