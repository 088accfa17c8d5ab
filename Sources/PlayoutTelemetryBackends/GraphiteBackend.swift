public import PlayoutTelemetry
import PlayoutCore
import Synchronization

/// Writes telemetry records to Graphite (carbon, or VictoriaMetrics' Graphite listener) over the
/// plaintext protocol on TCP: events as counters, heartbeat fields as gauges
/// (``GraphitePlaintext`` describes the paths).
///
/// The connection is kept between batches and opened again when it fails or the server closed
/// it. Each ``deliver(_:)`` is one attempt whose I/O (connect and send, not the encoding of the
/// batch) is bounded by ``timeout``. The server never answers, so a stalled server shows only
/// once the socket buffers are full; every
/// failure is retryable, and event counts advance only once a batch is sent, so a retried batch
/// writes the same points.
///
/// ```swift
/// let graphite = GraphiteBackend(host: "127.0.0.1", port: 2003, tags: [TelemetryField("run", .string("r42"))])
/// try graphite.deliver(records)      // playout.r42.events.play 1 1700000000 …
/// // or from the CLI's spec:
/// let fromSpec = try GraphiteBackend(address: "[::1]:2003")
/// ```
public final class GraphiteBackend: TelemetryBackend {
    /// The default bound of one delivery: 5 s.
    public static let defaultTimeout: Duration = .seconds(5)

    /// `graphite HOST:PORT`, for statistics and messages.
    public let name: String
    /// The server's host (a name or an IPv4/IPv6 address without brackets).
    public let host: String
    /// The server's port.
    public let port: UInt16
    /// The bound of one delivery (connect and send).
    public let timeout: Duration

    private struct State {
        var encoder: GraphitePlaintext
        var connection: TCPConnection?
    }
    private let state: Mutex<State>

    /// A backend sending to `host`:`port` (a name or an IPv4/IPv6 address without brackets); it
    /// connects on the first delivery.
    ///
    /// - Parameters:
    ///   - prefix: The first path component(s) (default `playout`).
    ///   - tags: Tags whose values follow the record's tags in every path.
    ///   - timeout: The bound of one delivery.
    public init(host: String, port: UInt16, prefix: String = GraphitePlaintext.defaultPrefix, tags: [TelemetryField] = [],
                timeout: Duration = GraphiteBackend.defaultTimeout) {
        self.host = host
        self.port = port
        self.timeout = timeout
        self.name = "graphite " + (host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)")
        self.state = Mutex(State(encoder: GraphitePlaintext(prefix: prefix, tags: tags), connection: nil))
    }

    /// A backend for `HOST:PORT` or `[IPv6]:PORT`, as `--telemetry graphite:HOST:PORT` gives it.
    ///
    /// - Throws: ``NetworkTelemetryError`` with code `invalidAddress` and an example when
    ///   `address` is not of that form.
    public convenience init(address: String, prefix: String = GraphitePlaintext.defaultPrefix, tags: [TelemetryField] = [],
                            timeout: Duration = GraphiteBackend.defaultTimeout) throws(NetworkTelemetryError) {
        let (host, port) = try Self.address(parsing: address)
        self.init(host: host, port: port, prefix: prefix, tags: tags, timeout: timeout)
    }

    /// The host and port of `HOST:PORT` or `[IPv6]:PORT`, checked as ``init(address:prefix:tags:timeout:)``
    /// checks them, without connecting (for validating a command line before a run starts).
    ///
    /// - Throws: ``NetworkTelemetryError`` with code `invalidAddress` and an example.
    public static func address(parsing address: String) throws(NetworkTelemetryError) -> (host: String, port: UInt16) {
        try parse(address: address, example: "graphite:127.0.0.1:2003")
    }

    /// Splits `HOST:PORT` or `[IPv6]:PORT`.
    static func parse(address: String, example: String, allowingPortZero: Bool = false) throws(NetworkTelemetryError) -> (host: String, port: UInt16) {
        let invalid = NetworkTelemetryError(.invalidAddress, "'\(address)' is not HOST:PORT, e.g. \(example) or [::1]:PORT")
        let host: Substring
        let port: Substring
        if address.hasPrefix("[") {
            guard let close = address.firstIndex(of: "]"), address[close...].hasPrefix("]:") else { throw invalid }
            host = address[address.index(after: address.startIndex)..<close]
            port = address[address.index(close, offsetBy: 2)...]
        } else {
            guard let colon = address.lastIndex(of: ":"), address.firstIndex(of: ":") == colon else { throw invalid }
            host = address[..<colon]
            port = address[address.index(after: colon)...]
        }
        guard !host.isEmpty, host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-._:%".contains($0)) }),
              port.count <= 5, port.allSatisfy({ $0.isASCII && $0.isNumber }), let number = UInt16(port), number > 0 || allowingPortZero
        else { throw invalid }
        return (String(host), number)
    }

    /// Sends `batch`'s lines; event counts advance only when all were sent.
    ///
    /// - Throws: ``TelemetryDeliveryError``, retryable (refused, timed out, closed).
    public func deliver(_ batch: [TelemetryRecord]) throws(TelemetryDeliveryError) {
        guard !batch.isEmpty else { return }
        do throws(NetworkTelemetryError) {
            try state.withLock { (state) throws(NetworkTelemetryError) in
                let (lines, counts) = state.encoder.encode(batch)
                guard !lines.isEmpty else { return }
                let deadline = MonotonicClock().now.advanced(by: timeout)
                if let connection = state.connection, !connection.isReusable {
                    connection.close()
                    state.connection = nil
                }
                do throws(NetworkTelemetryError) {
                    let connection: TCPConnection
                    if let existing = state.connection {
                        connection = existing
                    } else {
                        connection = try TCPConnection.connect(host: host, port: port, deadline: deadline)
                        state.connection = connection
                    }
                    try connection.send(lines, deadline: deadline)
                } catch {
                    state.connection?.close()
                    state.connection = nil
                    throw error
                }
                state.encoder.commit(counts)
            }
        } catch {
            throw error.deliveryError
        }
    }

    /// Closes the connection.
    public func close() {
        state.withLock {
            $0.connection?.close()
            $0.connection = nil
        }
    }
}
