// The facade re-exports the shared vocabulary (Observable, Disposable, clocks, media time), the
// playout-delay and statistics types of the playout stage, and the telemetry/logging API, so
// `import Playout` is all an application needs.
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
