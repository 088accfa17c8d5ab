import PlayoutCodec
import PlayoutRTP

/// The C libraries Playout is linked against, for `playout version` and bug reports.
public enum LinkedLibraries {
    /// One linked library and its version.
    public struct Library: Equatable, Sendable {
        /// The library name, e.g. `"libavcodec"`.
        public var name: String
        /// Its version, e.g. `"59.37.100"`.
        public var version: String
    }

    /// The FFmpeg release string (e.g. `"5.1.6-0+deb12u1"`).
    public static var ffmpegRelease: String {
        FFmpegLibrary.release
    }

    /// Every linked C library with its version: FFmpeg's libraries, then libsrtp2.
    public static var all: [Library] {
        FFmpegLibrary.versions.map { Library(name: $0.name, version: "\($0.major).\($0.minor).\($0.micro)") }
            + [Library(name: "libsrtp2", version: SRTPLibrary.version.replacingPrefix("libsrtp2 "))]
    }

    /// A few lines describing the build: Playout's version, FFmpeg's release and each library.
    public static var report: String {
        var lines = ["playout \(PlayoutVersion.current)", "ffmpeg \(ffmpegRelease)"]
        lines += all.map { "\($0.name) \($0.version)" }
        return lines.joined(separator: "\n")
    }
}

/// Playout's own version.
public enum PlayoutVersion {
    /// The version of this build.
    public static let current = "0.1.0"
}

extension String {
    fileprivate func replacingPrefix(_ prefix: String) -> String {
        hasPrefix(prefix) ? String(dropFirst(prefix.count)) : self
    }
}
