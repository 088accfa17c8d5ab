public import PlayoutHTTP
public import PlayoutTelemetry

/// Why a network telemetry backend could not be set up or could not deliver: a bad URL or
/// address, a server that refuses, stalls, closes or answers something that is not HTTP
/// (PlayoutHTTP's ``NetworkError``).
///
/// Each error says whether the same batch may succeed later (`retryable`) and converts to the
/// engine's ``TelemetryDeliveryError`` with ``NetworkError/deliveryError``.
///
/// ```swift
/// do { _ = try InfluxBackend(writeURL: "influx://nowhere", token: nil) }
/// catch { print(error) }   // "'influx://nowhere' is not an http:// URL, e.g. http://127.0.0.1:8086/write?db=playout"
/// ```
public typealias NetworkTelemetryError = NetworkError

extension NetworkError {
    /// The engine's form of this error: the same message, retried when ``retryable``.
    public var deliveryError: TelemetryDeliveryError {
        TelemetryDeliveryError(message, retryable: retryable)
    }
}
