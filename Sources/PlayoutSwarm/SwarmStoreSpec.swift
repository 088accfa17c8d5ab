import PlayoutHTTP
import PlayoutTelemetryBackends

/// Where a swarm run's viewers are stored: an InfluxDB 1.x, or a VictoriaMetrics, over HTTP.
///
/// | spec | writes to | reads from |
/// |---|---|---|
/// | `influx:http://HOST:PORT/write?db=NAME` | `POST /write?db=NAME&precision=ns` | InfluxDB 1.x `GET /query?db=NAME` (InfluxQL) |
/// | `victoria:http://HOST:PORT[/write][?db=NAME]` | `POST /write?db=NAME&precision=ns` (its InfluxDB endpoint; `db` defaults to `playout`) | `GET /api/v1/export` (series `playout_swarm_viewer_<field>`, filtered on `db` when given) |
///
/// The `influx:` spec is the one `--telemetry` takes, so the shards write where the run's other
/// telemetry goes. VictoriaMetrics takes the same writes but has no InfluxQL, so reading it back
/// needs `victoria:` (not detected: a VictoriaMetrics behind a proxy looks like anything). Any
/// path after `HOST:PORT` is ignored when reading (`/write`, `/query`, nothing); a bare
/// `http://…/write?db=NAME` means `influx:`. `https` is not spoken.
///
/// ```swift
/// let spec = try SwarmStoreSpec(parsing: "victoria:http://127.0.0.1:8428")
/// print(spec.kind, spec.host, spec.port, spec.database ?? "-")   // victoria 127.0.0.1 8428 -
/// ```
public struct SwarmStoreSpec: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// Which server it is.
    public enum Kind: String, Equatable, Hashable, Sendable {
        /// InfluxDB 1.x: line protocol through `/write`, InfluxQL through `/query`.
        case influx
        /// VictoriaMetrics: line protocol through `/write`, read through `/api/v1/export`.
        case victoria
    }

    /// The database VictoriaMetrics is written with when a `victoria:` spec names none.
    public static let defaultVictoriaDatabase = "playout"

    /// Which server it is.
    public var kind: Kind
    /// The server's host (no brackets) and port.
    public var host: String
    public var port: UInt16
    /// The database (`db=`): required for InfluxDB; for VictoriaMetrics the `db` label written
    /// and read (nil: written as ``defaultVictoriaDatabase``, read whatever it is).
    public var database: String?
    /// The spec as given, for messages.
    public var text: String

    /// Parses `text`.
    ///
    /// - Throws: ``SwarmStoreError`` with code `invalidSpec` and a message showing a valid spec.
    public init(parsing text: String) throws(SwarmStoreError) {
        func invalid(_ why: String) -> SwarmStoreError {
            SwarmStoreError(.invalidSpec, "'\(text.prefix(200))' \(why): write influx:http://HOST:PORT/write?db=NAME (InfluxDB 1.x) or victoria:http://HOST:PORT (VictoriaMetrics)")
        }
        let kind: Kind
        let url: Substring
        if text.hasPrefix("influx:") {
            kind = .influx
            url = text.dropFirst("influx:".count)
        } else if text.hasPrefix("victoria:") {
            kind = .victoria
            url = text.dropFirst("victoria:".count)
        } else if text.hasPrefix("http://") {
            kind = .influx
            url = Substring(text)
        } else {
            throw invalid("is not a store spec")
        }
        let endpoint: HTTPEndpoint
        do throws(NetworkTelemetryError) {
            endpoint = try HTTPEndpoint(parsing: String(url))
        } catch {
            throw invalid("has a URL that is not valid (\(error.message))")
        }
        if endpoint.queryValue("precision").map({ $0 != "ns" }) == true {
            throw invalid("asks for another precision than ns")
        }
        let database = endpoint.queryValue("db").flatMap { $0.isEmpty ? nil : $0 }
        if kind == .influx, database == nil { throw invalid("names no database (db=NAME)") }
        if let database, database.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            throw invalid("has a control character in its database name")
        }
        self.kind = kind
        self.host = endpoint.host
        self.port = endpoint.port
        self.database = database
        self.text = text
    }

    /// The spec as given.
    public var description: String { text }

    /// The request target of a write: `/write?db=NAME&precision=ns`.
    var writeTarget: String {
        "/write?db=\(HTTPEndpoint.percentEncoded(database ?? Self.defaultVictoriaDatabase))&precision=ns"
    }
}
