import PlayoutCore

/// A store's answer taken apart into viewers' records: InfluxDB 1.x's `/query` JSON or
/// VictoriaMetrics' `/api/v1/export` JSON Lines. Records that lack a field every outcome has
/// (or have one of the wrong type) are counted in ``unreadable`` and dropped; an answer that is
/// not the server's JSON at all is a ``SwarmStoreError``.
struct SwarmStoreRecords {
    /// Each record: one viewer's outcome, written at `time` (nanoseconds).
    var records: [(outcome: ViewerOutcome, time: Int64)] = []
    /// Records left out because a field was missing or not a number.
    var unreadable = 0

    /// One record's fields as read, before it is known to be whole.
    private struct Partial {
        var state: String?
        var decoded: Bool?
        var numbers: [String: Double] = [:]
    }

    /// The fields read as numbers, and whether each must be there.
    private static let numberFields: [(name: String, required: Bool)] = [
        ("startupTime", false), ("renderedRatio", false), ("framesRendered", true), ("freezeCount", true), ("freezeRatio", false),
        ("endToEndLatency", false), ("jitterBufferDelay", false), ("bitrate", true), ("packetsLost", true), ("nackCount", true), ("framesDecoded", false),
    ]

    private static func outcome(viewer: Int, shard: Int, _ partial: Partial) -> ViewerOutcome? {
        guard let state = partial.state, let decoded = partial.decoded else { return nil }
        let numbers = partial.numbers
        for field in numberFields where field.required && numbers[field.name] == nil { return nil }
        func integer(_ name: String) -> Int? {
            guard let value = numbers[name], value.isFinite, value.rounded() == value, abs(value) < 9e15 else { return nil }
            return Int(value)
        }
        guard let framesRendered = integer("framesRendered"), let freezeCount = integer("freezeCount"), let packetsLost = integer("packetsLost"),
              let nackCount = integer("nackCount"), let bitrate = numbers["bitrate"]
        else { return nil }
        if numbers["framesDecoded"] != nil, integer("framesDecoded") == nil { return nil }
        return ViewerOutcome(
            viewer: viewer, shard: shard, state: state, decoded: decoded, startupTime: numbers["startupTime"], renderedRatio: numbers["renderedRatio"],
            framesRendered: framesRendered, freezeCount: freezeCount, freezeRatio: numbers["freezeRatio"], endToEndLatency: numbers["endToEndLatency"],
            jitterBufferDelay: numbers["jitterBufferDelay"], bitrate: bitrate, packetsLost: packetsLost, nackCount: nackCount,
            framesDecoded: integer("framesDecoded"))
    }

    /// A viewer or shard number from a tag: a plain decimal number below 10^9.
    private static func tagNumber(_ text: String?) -> Int? {
        guard let text, !text.isEmpty, text.count <= 9, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int(text)
    }

    private static func number(_ value: JSONParser.Value) -> Double? {
        switch value {
        case .integer(let number): Double(number)
        case .double(let number): number
        default: nil
        }
    }

    private static func malformed(_ server: String, _ why: String, _ body: [UInt8]) -> SwarmStoreError {
        let start = String(decoding: body.prefix(120), as: UTF8.self).unicodeScalars.map { $0.value < 0x20 ? " " : String($0) }.joined()
        return SwarmStoreError(.malformedAnswer, "\(server) answered something that is not its JSON (\(why)): '\(start)'")
    }

    // MARK: - InfluxDB

    /// Reads InfluxDB 1.x's answer to `SELECT * FROM playout_swarm_viewer WHERE run = …`
    /// (`epoch=ns`): `{"results":[{"series":[{"columns":[…],"values":[[…],…]}]}]}`, or an
    /// `"error"` in it.
    init(influxAnswer body: [UInt8], run: String, server: String) throws(SwarmStoreError) {
        let root: JSONParser.Value
        do throws(JSONParser.Failure) {
            root = try JSONParser.parse(Substring(decoding: body, as: UTF8.self))
        } catch {
            throw Self.malformed(server, "\(error.reason) at byte \(error.column)", body)
        }
        guard case .object(let top) = root else { throw Self.malformed(server, "not a JSON object", body) }
        if let (_, value) = top.first(where: { $0.0 == "error" }), case .string(let message) = value {
            throw SwarmStoreError(.refused, "\(server) could not run the query: \(message)")
        }
        guard let (_, resultsValue) = top.first(where: { $0.0 == "results" }), case .array(let results) = resultsValue else {
            throw Self.malformed(server, "no \"results\"", body)
        }
        for result in results {
            guard case .object(let statement) = result else { throw Self.malformed(server, "a result that is not an object", body) }
            if let (_, value) = statement.first(where: { $0.0 == "error" }), case .string(let message) = value {
                throw SwarmStoreError(.refused, "\(server) could not run the query: \(message)")
            }
            guard let (_, seriesValue) = statement.first(where: { $0.0 == "series" }) else { continue }
            guard case .array(let series) = seriesValue else { throw Self.malformed(server, "\"series\" is not an array", body) }
            for item in series {
                guard case .object(let fields) = item,
                      let (_, columnsValue) = fields.first(where: { $0.0 == "columns" }), case .array(let columnValues) = columnsValue
                else { throw Self.malformed(server, "a series without \"columns\"", body) }
                let columns = columnValues.map { value -> String in
                    if case .string(let name) = value { return name }
                    return ""
                }
                guard let (_, rowsValue) = fields.first(where: { $0.0 == "values" }), case .array(let rows) = rowsValue else { continue }
                for row in rows {
                    guard case .array(let cells) = row, cells.count == columns.count else {
                        unreadable += 1
                        continue
                    }
                    read(row: Array(zip(columns, cells)), run: run)
                }
            }
        }
    }

    private mutating func read(row: [(String, JSONParser.Value)], run: String) {
        var partial = Partial()
        var viewer: Int?
        var shard: Int?
        var time: Int64?
        var rowRun: String?
        for (column, value) in row {
            switch (column, value) {
            case ("time", .integer(let nanoseconds)): time = nanoseconds
            case ("viewer", .string(let text)): viewer = Self.tagNumber(text)
            case ("shard", .string(let text)): shard = Self.tagNumber(text)
            case ("run", .string(let text)): rowRun = text
            case ("state", .string(let text)): partial.state = text
            case ("decoded", .bool(let flag)): partial.decoded = flag
            case (_, .null), ("outcome", _): continue
            default:
                if let number = Self.number(value) { partial.numbers[column] = number }
            }
        }
        guard rowRun == run, let viewer, let shard, let time, let outcome = Self.outcome(viewer: viewer, shard: shard, partial) else {
            unreadable += 1
            return
        }
        records.append((outcome, time))
    }

    // MARK: - VictoriaMetrics

    /// Reads VictoriaMetrics' `/api/v1/export` JSON Lines: one line per series
    /// `playout_swarm_viewer_<field>` (`{"metric":{"__name__":…,"run":…,"shard":…,"viewer":…,
    /// "outcome":…},"values":[…],"timestamps":[…]}`, timestamps in milliseconds); the points of
    /// one viewer at one time make one record.
    init(victoriaExport body: [UInt8], run: String, server: String) throws(SwarmStoreError) {
        struct Key: Hashable {
            var viewer: Int
            var shard: Int
            var time: Int64
        }
        var partials: [Key: Partial] = [:]
        var order: [Key] = []
        let prefix = SwarmStore.measurement + "_"
        var lineStart = body.startIndex
        var lineNumber = 0
        while lineStart < body.endIndex {
            let lineEnd = body[lineStart...].firstIndex(of: UInt8(ascii: "\n")) ?? body.endIndex
            defer { lineStart = lineEnd == body.endIndex ? lineEnd : lineEnd + 1 }
            lineNumber += 1
            let line = body[lineStart..<lineEnd]
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x0D || $0 == 0x09 }) { continue }
            let value: JSONParser.Value
            do throws(JSONParser.Failure) {
                value = try JSONParser.parse(Substring(decoding: line, as: UTF8.self))
            } catch {
                throw Self.malformed(server, "line \(lineNumber): \(error.reason) at byte \(error.column)", Array(line))
            }
            guard case .object(let series) = value,
                  let (_, metricValue) = series.first(where: { $0.0 == "metric" }), case .object(let metric) = metricValue,
                  let (_, valuesValue) = series.first(where: { $0.0 == "values" }), case .array(let values) = valuesValue,
                  let (_, timesValue) = series.first(where: { $0.0 == "timestamps" }), case .array(let times) = timesValue
            else { throw Self.malformed(server, "line \(lineNumber) is not an exported series", Array(line)) }
            var labels: [String: String] = [:]
            for (name, label) in metric {
                if case .string(let text) = label { labels[name] = text }
            }
            guard let name = labels["__name__"], name.hasPrefix(prefix), labels["run"] == run else { continue }
            let field = String(name.dropFirst(prefix.count))
            guard let viewer = Self.tagNumber(labels["viewer"]), let shard = Self.tagNumber(labels["shard"]), values.count == times.count else {
                unreadable += values.count
                continue
            }
            for (sample, stamp) in zip(values, times) {
                guard case .integer(let milliseconds) = stamp, let number = Self.number(sample) else {
                    unreadable += 1
                    continue
                }
                let key = Key(viewer: viewer, shard: shard, time: milliseconds)
                if partials[key] == nil { order.append(key) }
                var partial = partials[key] ?? Partial()
                switch field {
                case "state": partial.state = partial.state ?? labels["outcome"]
                case "decoded": partial.decoded = number != 0
                default: partial.numbers[field] = number
                }
                if partial.state == nil, let outcome = labels["outcome"] { partial.state = outcome }
                partials[key] = partial
            }
        }
        for key in order {
            guard let partial = partials[key], let outcome = Self.outcome(viewer: key.viewer, shard: key.shard, partial) else {
                unreadable += 1
                continue
            }
            records.append((outcome, key.time.multipliedReportingOverflow(by: 1_000_000).partialValue))
        }
    }
}
