internal import CFFmpeg

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
    /// How much FFmpeg itself prints on stderr.
    public enum LogLevel: Sendable {
        /// Nothing (decode errors are counted in the statistics instead): the default, so
        /// FFmpeg's lines never break a live view or a JSON consumer's stderr.
        case quiet
        /// Warnings and errors.
        case warning
        /// Everything FFmpeg says about the streams (codec set-up, encoder summaries).
        case verbose
    }

    /// Sets FFmpeg's own console output for the process.
    public static func setLogLevel(_ level: LogLevel) {
        switch level {
        case .quiet: av_log_set_level(AV_LOG_QUIET)
        case .warning: av_log_set_level(AV_LOG_WARNING)
        case .verbose: av_log_set_level(AV_LOG_VERBOSE)
        }
    }
}
