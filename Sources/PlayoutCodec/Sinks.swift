internal import CFFmpeg
public import PlayoutCore
#if canImport(Glibc)
import Glibc
#endif

/// Where rendered frames go, chosen by a URL-like spec: `null`, `file:out.y4m`, `file:out.wav`,
/// `file:out.mkv`, `file:out.mp4`.
public enum SinkSpec: Equatable, Sendable, CustomStringConvertible {
    /// Count (and optionally hash) frames, write nothing — GStreamer's `fakesink`.
    case null
    /// Raw decoded video as YUV4MPEG2.
    case y4m(path: String)
    /// Decoded audio as 32-bit float WAV.
    case wav(path: String)
    /// The received encoded stream remuxed without re-encoding (Matroska or MP4).
    case remux(path: String)

    /// Parses a spec. A bad spec is an error that says what to type; the path is not touched.
    public init(parsing text: String) throws(SinkError) {
        if text == "null" {
            self = .null
            return
        }
        guard text.hasPrefix("file:") else {
            throw SinkError("unknown sink '\(text)': use null or file:PATH, e.g. file:out.y4m")
        }
        let path = String(text.dropFirst(5))
        guard !path.isEmpty else { throw SinkError("sink '\(text)' needs a path after file:, e.g. file:out.y4m") }
        switch path.split(separator: ".").last.map({ $0.lowercased() }) {
        case "y4m": self = .y4m(path: path)
        case "wav": self = .wav(path: path)
        case "mkv", "mp4", "webm", "mka": self = .remux(path: path)
        default:
            throw SinkError("cannot tell what to write to '\(path)' from its extension: use .y4m (video), .wav (audio) or .mkv/.mp4 (remux)")
        }
    }

    public var description: String {
        switch self {
        case .null: "null"
        case .y4m(let path), .wav(let path), .remux(let path): "file:\(path)"
        }
    }
}

/// A sink could not be set up or written: a ``PlayoutError`` with code ``PlayoutError/Code/sink``.
public typealias SinkError = PlayoutError

extension PlayoutError.Code {
    /// A sink spec is wrong, or its file cannot be written.
    public static let sink = Self("sink")
}

extension PlayoutError {
    /// A sink error with `message`.
    init(_ message: String) {
        self.init(.sink, message)
    }

    /// Fails early, before anything starts, when `path` cannot be created for writing.
    static func checkWritable(_ path: String) throws(SinkError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            let reason = String(cString: strerror(errno))
            throw SinkError("cannot write \(path): \(reason) (check the directory exists and is writable)")
        }
        close(descriptor)
    }
}

/// The null sink: counts rendered frames and, when asked, keeps each picture's MD5 so tests can
/// compare with `ffmpeg -f framemd5`.
public final class NullSink {
    /// Frames rendered.
    public private(set) var framesRendered = 0
    /// Each rendered picture's MD5 (when hashing), in order.
    public private(set) var pictureMD5s: [String] = []
    /// Whether to hash every picture (costs a copy and an MD5 per frame).
    public let hashes: Bool

    /// A null sink; with `hashes`, it keeps each picture's MD5 (for tests).
    public init(hashes: Bool = false) {
        self.hashes = hashes
    }

    /// Renders `frame`: counts it (and hashes a picture).
    public func render(_ frame: borrowing DecodedFrame) {
        framesRendered += 1
        if hashes, let md5 = frame.pictureMD5 { pictureMD5s.append(md5) }
    }
}

/// Writes rendered pictures to a YUV4MPEG2 file (`ffplay out.y4m`, `ffmpeg -i out.y4m …`).
/// Frames must all have the first frame's size and a planar YUV format.
public final class Y4MSink {
    /// The file written.
    public let path: String
    private let file: UnsafeMutablePointer<FILE>
    private var headerWritten = false
    private let frameRate: (numerator: Int, denominator: Int)
    /// Frames written so far.
    public private(set) var framesWritten = 0

    /// Creates (truncates) `path`.
    ///
    /// - Throws: ``SinkError`` when the file cannot be created.
    public init(path: String, frameRate: (numerator: Int, denominator: Int) = (30, 1)) throws(SinkError) {
        try SinkError.checkWritable(path)
        guard let file = fopen(path, "wb") else { throw SinkError("cannot write \(path): \(String(cString: strerror(errno)))") }
        self.path = path
        self.file = file
        self.frameRate = frameRate
    }

    deinit {
        fclose(file)
    }

    /// Appends `frame` (a picture).
    public func render(_ frame: borrowing DecodedFrame) throws(SinkError) {
        guard let pixels = frame.packedPicture() else { throw SinkError("the y4m sink takes video frames") }
        if !headerWritten {
            let chroma: String
            switch frame.formatName {
            case "yuv420p", "yuvj420p": chroma = "420jpeg"
            case "yuv422p", "yuvj422p": chroma = "422"
            case "yuv444p", "yuvj444p": chroma = "444"
            case "gray": chroma = "mono"
            default: throw SinkError("the y4m sink cannot write \(frame.formatName) pictures (planar YUV only)")
            }
            let header = "YUV4MPEG2 W\(frame.width) H\(frame.height) F\(frameRate.numerator):\(frameRate.denominator) Ip A1:1 C\(chroma)\n"
            fputs(header, file)
            headerWritten = true
        }
        fputs("FRAME\n", file)
        let written = pixels.withUnsafeBufferPointer { fwrite($0.baseAddress, 1, $0.count, file) }
        guard written == pixels.count else { throw SinkError("writing \(path) failed: \(String(cString: strerror(errno)))") }
        framesWritten += 1
    }

    /// Flushes what was written to the file.
    public func finish() {
        fflush(file)
    }
}

extension DecodedFrame {
    /// The picture's planes packed without padding (rows tight), as y4m and framemd5 want them.
    func packedPicture() -> [UInt8]? {
        guard frame.pointee.width > 0 else { return nil }
        let format = AVPixelFormat(rawValue: frame.pointee.format)
        let size = av_image_get_buffer_size(format, frame.pointee.width, frame.pointee.height, 1)
        guard size > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: Int(size))
        let copied = buffer.withUnsafeMutableBufferPointer { output in
            withUnsafePointer(to: frame.pointee.data) { data in
                withUnsafePointer(to: frame.pointee.linesize) { linesize in
                    data.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { planes in
                        linesize.withMemoryRebound(to: Int32.self, capacity: 8) { strides in
                            av_image_copy_to_buffer(output.baseAddress, size, planes, strides, format, frame.pointee.width, frame.pointee.height, 1)
                        }
                    }
                }
            }
        }
        return copied == size ? buffer : nil
    }
}

/// Writes rendered audio to a 32-bit float WAV file (`ffplay out.wav`). The sample rate and
/// channel count come from the first frame; the header's sizes are written at ``finish()``.
public final class WAVSink {
    /// The file written.
    public let path: String
    private let file: UnsafeMutablePointer<FILE>
    private var format: (sampleRate: Int, channels: Int)?
    private var dataBytes = 0
    private var finished = false
    /// Frames written so far.
    public private(set) var framesWritten = 0

    /// Creates (truncates) `path`.
    ///
    /// - Throws: ``SinkError`` when the file cannot be created.
    public init(path: String) throws(SinkError) {
        try SinkError.checkWritable(path)
        guard let file = fopen(path, "wb") else { throw SinkError("cannot write \(path): \(String(cString: strerror(errno)))") }
        self.path = path
        self.file = file
    }

    deinit {
        finish()
        fclose(file)
    }

    /// Appends `frame` (audio).
    public func render(_ frame: borrowing DecodedFrame) throws(SinkError) {
        guard let samples = frame.interleavedFloatSamples() else { throw SinkError("the wav sink takes audio frames") }
        if format == nil {
            format = (frame.sampleRate, frame.channelCount)
            writeHeader()  // placeholder sizes, rewritten at finish()
        }
        guard frame.sampleRate == format?.sampleRate, frame.channelCount == format?.channels else {
            throw SinkError("the wav sink got \(frame.sampleRate) Hz × \(frame.channelCount) after \(format!.sampleRate) Hz × \(format!.channels): one format per file")
        }
        let written = samples.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        guard written == samples.count * 4 else { throw SinkError("writing \(path) failed: \(String(cString: strerror(errno)))") }
        dataBytes += written
        framesWritten += 1
    }

    /// Writes the final sizes into the header and flushes. Idempotent.
    public func finish() {
        guard !finished, format != nil else { return }
        finished = true
        fseek(file, 0, SEEK_SET)
        writeHeader()
        fseek(file, 0, SEEK_END)
        fflush(file)
    }

    /// RIFF/WAVE header for IEEE float samples (format 3).
    private func writeHeader() {
        guard let format else { return }
        var header: [UInt8] = []
        func append32(_ value: UInt32) { header += withUnsafeBytes(of: value.littleEndian, Array.init) }
        func append16(_ value: UInt16) { header += withUnsafeBytes(of: value.littleEndian, Array.init) }
        header += Array("RIFF".utf8)
        append32(UInt32(clamping: 36 + dataBytes))
        header += Array("WAVEfmt ".utf8)
        append32(16)
        append16(3)  // WAVE_FORMAT_IEEE_FLOAT
        append16(UInt16(format.channels))
        append32(UInt32(format.sampleRate))
        append32(UInt32(format.sampleRate * format.channels * 4))
        append16(UInt16(format.channels * 4))
        append16(32)
        header += Array("data".utf8)
        append32(UInt32(clamping: dataBytes))
        _ = header.withUnsafeBufferPointer { fwrite($0.baseAddress, 1, $0.count, file) }
    }
}
