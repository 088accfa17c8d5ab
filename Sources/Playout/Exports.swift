// The facade re-exports the shared vocabulary (Observable, Disposable, clocks, media time), the
// playout-delay types of the playout stage, the telemetry/logging API and swift-log
// itself (`Logger`, `LoggingSystem`), so `import Playout` is all an application needs — also to
// set up logging with `LoggingSetup.bootstrap(collector:)`.
@_exported public import Logging
@_exported public import PlayoutCore
// From the playout stage only what the Subscriber and Renderer APIs take and give; its parts
// (jitter buffer, scheduler, timeline) stay in `PlayoutJitter` for whoever builds a pipeline.
@_exported import enum PlayoutJitter.PlayoutDelay
@_exported import enum PlayoutJitter.PlayoutDelayError
@_exported import class PlayoutJitter.PlayoutDelayOverride
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
