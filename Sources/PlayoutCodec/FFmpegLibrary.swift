internal import CFFmpeg
import Logging

/// The system's FFmpeg libraries, as linked into Playout.
public enum FFmpegLibrary {
    /// A library's version, split the way FFmpeg packs it (`major << 16 | minor << 8 | micro`).
    public struct Version: Equatable, Sendable, CustomStringConvertible {
        /// The library name, e.g. `"libavcodec"`.
        public var name: String
        public var major: Int
        public var minor: Int
        public var micro: Int

        init(name: String, packed: UInt32) {
            self.name = name
            major = Int(packed >> 16)
            minor = Int((packed >> 8) & 0xFF)
            micro = Int(packed & 0xFF)
        }

        public var description: String {
            "\(name) \(major).\(minor).\(micro)"
        }
    }

    /// FFmpeg's release, e.g. `"5.1.6-0+deb12u1"`.
    public static var release: String {
        String(cString: av_version_info())
    }

    /// The versions of the linked libavformat, libavcodec, libavutil, libswscale and libswresample.
    public static var versions: [Version] {
        [
            Version(name: "libavformat", packed: avformat_version()),
            Version(name: "libavcodec", packed: avcodec_version()),
            Version(name: "libavutil", packed: avutil_version()),
            Version(name: "libswscale", packed: swscale_version()),
            Version(name: "libswresample", packed: swresample_version()),
        ]
    }

    /// Whether the linked libavcodec can decode the codec named `name` (FFmpeg's short name,
    /// e.g. `"h264"`, `"vp8"`, `"opus"`).
    public static func hasDecoder(named name: String) -> Bool {
        avcodec_find_decoder_by_name(name) != nil
    }
}

extension FFmpegLibrary {
    /// How much of its own logging FFmpeg hands to swift-log (see ``setLogLevel(_:)``).
    public enum LogLevel: Sendable {
        /// Nothing (decode errors are counted in the statistics instead).
        case quiet
        /// Errors and warnings, logged at `.debug`.
        case warning
        /// Everything FFmpeg says about the streams (codec set-up, encoder summaries): errors
        /// and warnings at `.debug`, the rest at `.trace`.
        case verbose
    }

    /// The swift-log label of FFmpeg's own lines.
    public static let logLabel = "playout.ffmpeg"

    /// Routes FFmpeg's own log lines — libavcodec, libavformat and the encoders and decoders
    /// they wrap (libx264, libvpx, libopus, …: libavcodec hands them its `av_log`) — into swift-log
    /// under ``logLabel`` instead of straight to standard error, and sets how many of them FFmpeg
    /// hands over. Without this call FFmpeg prints its informational lines (x264's settings and
    /// statistics among them) on standard error.
    ///
    /// FFmpeg's errors and warnings arrive at `.debug` and its informational lines at `.trace`:
    /// Playout counts what they report (undecodable frames, concealed errors) in its statistics,
    /// so a damaged stream never writes into a live view or a JSON consumer's stderr at the
    /// default console level, while a ``LogCollector`` at `.debug` still collects them.
    ///
    /// Process-wide (FFmpeg has one logger); call it once, at start-up, before any encoder,
    /// decoder or input is opened. Thread safe.
    ///
    /// ```swift
    /// let collector = LoggingSetup.bootstrap(collector: LogCollector())
    /// FFmpegLibrary.setLogLevel(.warning)    // FFmpeg's warnings collected, on stderr only at debug
    /// ```
    public static func setLogLevel(_ level: LogLevel) {
        _ = installLogCallback
        switch level {
        case .quiet: av_log_set_level(AV_LOG_QUIET)
        case .warning: av_log_set_level(AV_LOG_WARNING)
        case .verbose: av_log_set_level(AV_LOG_VERBOSE)
        }
    }

    /// The swift-log level of an FFmpeg line at `level` (`AV_LOG_…`).
    static func swiftLogLevel(forFFmpegLevel level: Int32) -> Logger.Level {
        level <= AV_LOG_WARNING ? .debug : .trace
    }

    /// Routes FFmpeg's lines into swift-log (at whatever level FFmpeg is set to) if nothing did
    /// yet: every encoder, decoder and input calls it before it opens, so FFmpeg never writes on
    /// a library user's standard error, whether or not the application called ``setLogLevel(_:)``.
    static func routeLogs() {
        _ = installLogCallback
    }

    /// Installs ``forwardLogLine`` as FFmpeg's log callback, once.
    private static let installLogCallback: Void = {
        av_log_set_callback(forwardLogLine)
    }()
}

/// FFmpeg's log callback: formats the line as FFmpeg's own callback would (`[libx264 @ 0x…] …`)
/// and logs it under ``FFmpegLibrary/logLabel``. A custom callback must filter by level itself.
private func forwardLogLine(_ context: UnsafeMutableRawPointer?, _ level: Int32, _ format: UnsafePointer<CChar>?, _ arguments: CVaListPointer?) {
    guard let format, let arguments, level <= av_log_get_level() else { return }
    let line = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 1_024) { buffer -> String in
        var printPrefix: Int32 = 1
        buffer.initialize(repeating: 0)
        _ = av_log_format_line2(context, level, format, arguments, buffer.baseAddress, Int32(buffer.count), &printPrefix)
        buffer[buffer.count - 1] = 0
        return String(cString: buffer.baseAddress!)
    }
    var text = Substring(line)
    while let last = text.last, last.isWhitespace { text.removeLast() }
    guard !text.isEmpty else { return }
    Logger(label: FFmpegLibrary.logLabel).log(level: FFmpegLibrary.swiftLogLevel(forFFmpegLevel: level), "\(text)")
}
