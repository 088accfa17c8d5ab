// The facade re-exports the shared vocabulary (Observable, Disposable, clocks, media time) and the
// telemetry/logging API, so `import Playout` is all an application needs.
@_exported public import PlayoutCore
@_exported public import PlayoutTelemetry
