// The facade re-exports the shared vocabulary (Observable, Disposable, clocks, media time), the
// playout-delay and statistics types of the playout stage, and the telemetry/logging API, so
// `import Playout` is all an application needs.
@_exported public import PlayoutCore
@_exported public import PlayoutJitter
@_exported public import PlayoutTelemetry
@_exported import enum PlayoutCodec.SinkSpec
