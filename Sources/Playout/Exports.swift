// The facade re-exports the shared vocabulary (Observable, Disposable, clocks, media time), the
// playout-delay and statistics types of the playout stage, the telemetry/logging API and swift-log
// itself (`Logger`, `LoggingSystem`), so `import Playout` is all an application needs — also to
// set up logging with `LoggingSetup.bootstrap(collector:)`.
@_exported public import Logging
@_exported public import PlayoutCore
@_exported public import PlayoutJitter
@_exported public import PlayoutTelemetry
@_exported import enum PlayoutCodec.SinkSpec
// What the Subscriber and Publisher APIs take and give: addresses, keys, session descriptions,
// encoder settings, impairment.
@_exported import struct PlayoutRTP.SocketAddress
@_exported import struct PlayoutRTP.SRTPKeyingMaterial
@_exported import enum PlayoutRTP.SRTPCryptoSuite
@_exported import struct PlayoutRTP.SessionDescription
@_exported import struct PlayoutRTP.MediaDescription
@_exported import class PlayoutCodec.FFmpegEncoder
@_exported import enum PlayoutCodec.FFmpegLibrary
