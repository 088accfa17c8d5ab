import Logging
public import PlayoutTelemetry
import PlayoutCore
public import PlayoutHTTP
import Synchronization

/// Writes telemetry records to Graphite (carbon, or VictoriaMetrics' Graphite listener) over the
/// plaintext protocol on TCP: events as counters, heartbeat fields as gauges
/// (``GraphitePlaintext`` describes the paths).
///
/// The connection is kept between batches and opened again when it fails or the server closed
/// it. Each ``deliver(_:)`` is one attempt whose I/O (connect, send, and the wait for the
/// server's acknowledgement, not the encoding of the batch) is bounded by ``timeout``.
///
/// How delivery is counted: the plaintext protocol has no answer, so a batch counts as delivered
/// only when (1) all its bytes were written, (2) the server's TCP acknowledged every one of them
/// within the timeout (a server that stopped reading fills its receive window and the wait times
/// out), and (3) the connection was not found reset or closed before that — on a new connection,
/// not within two connect times + 20 ms after the acknowledgement either — so a server that
/// resets or closes every connection delivers nothing. A batch whose
/// connection turns out lost at the *next* delivery (a reset that arrived after the
/// acknowledgement) is written again ahead of that one, so it is not lost silently. Every failure
/// is retryable and logged with its reason (at warning), and event counts advance only once a
/// batch is delivered, so a retried batch writes the same points.
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
    /// How long a batch on a new connection waits, beyond two connect times, for the server to
    /// show it does not drop the connection: 20 ms.
    static let probation: Duration = .milliseconds(20)

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
        /// The lines of the last batch delivered on `connection`: written again if the
        /// connection is found lost before the next batch.
        var unconfirmed: [UInt8] = []
    }
    private let logger = Logger(label: "playout.telemetry.graphite")
    private let state: Mutex<State>

    /// A backend sending to `host`:`port` (a name or an IPv4/IPv6 address without brackets); it
    /// connects on the first delivery.
    ///
    /// - Parameters:
    ///   - prefix: The first path component(s) (default `playout`).
    ///   - tags: Tags whose values follow the record's tags in every path.
    ///   - timeout: The bound of one delivery.
    ///   - schema: What the heartbeat fields mean (``GraphitePlaintext``); a subscriber's is
    ///     `TelemetrySchema.subscriber`.
    public init(host: String, port: UInt16, prefix: String = GraphitePlaintext.defaultPrefix, tags: [TelemetryField] = [],
                timeout: Duration = GraphiteBackend.defaultTimeout, schema: TelemetrySchema = TelemetrySchema()) {
        self.host = host
        self.port = port
        self.timeout = timeout
        self.name = "graphite " + (host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)")
        self.state = Mutex(State(encoder: GraphitePlaintext(prefix: prefix, tags: tags, schema: schema), connection: nil))
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
                let (encoded, counts) = state.encoder.encode(batch)
                guard !encoded.isEmpty else { return }
                var lines = encoded
                let deadline = MonotonicClock().now.advanced(by: timeout)
                if let connection = state.connection {
                    switch connection.health {
                    case .open:
                        state.unconfirmed = []
                    case .closedByPeer:
                        state.unconfirmed = []
                        connection.close()
                        state.connection = nil
                    case .lost(let reason):
                        // The previous batch may not have been read: written again first.
                        logger.warning("\(name): \(reason) after the last batch; writing its \(state.unconfirmed.count) bytes again")
                        lines = state.unconfirmed + lines
                        state.unconfirmed = []
                        connection.close()
                        state.connection = nil
                    }
                }
                do throws(NetworkTelemetryError) {
                    let connection: TCPConnection
                    let isNew = state.connection == nil
                    if let existing = state.connection {
                        connection = existing
                    } else {
                        connection = try TCPConnection.connect(host: host, port: port, deadline: deadline)
                        state.connection = connection
                    }
                    try connection.send(lines, deadline: deadline)
                    try connection.waitUntilAcknowledged(deadline: deadline)
                    // A new connection is on probation: a server that drops every connection
                    // resets it about a round trip after it took the bytes.
                    if isNew { try connection.expectNoHangUp(within: connection.connectDuration * 2 + Self.probation, deadline: deadline) }
                } catch {
                    logger.warning("\(name): \(batch.count) records not delivered: \(error.message)")
                    state.connection?.close()
                    state.connection = nil
                    state.unconfirmed = []
                    throw error
                }
                state.unconfirmed = encoded
                state.encoder.commit(counts)
            }
        } catch {
            throw error.deliveryError
        }
    }

    /// Closes the connection; a loss found then (a reset after the last batch) is logged.
    public func close() {
        state.withLock {
            if let connection = $0.connection, case .lost(let reason) = connection.health {
                logger.warning("\(name): \(reason) after the last batch; its \($0.unconfirmed.count) bytes may not have been read")
            }
            $0.connection?.close()
            $0.connection = nil
        }
    }
}
