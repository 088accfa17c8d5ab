internal import CFFmpeg
public import Logging
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

/// A sink could not be set up or written: a ``PlayoutError`` with code
/// ``PlayoutError/Code/sink`` (a wrong spec, a path that cannot be created, a frame the sink
/// cannot take) or ``PlayoutError/Code/sinkFailed`` (its file failed while writing; the sink
/// stopped and keeps the error in its `failure`).
public typealias SinkError = PlayoutError

extension PlayoutError.Code {
    /// A sink spec is wrong, its file cannot be created, or a frame does not fit the sink.
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
///
/// The header — size, frame rate, chroma — comes from the first picture: its pixel format when
/// y4m can carry it (yuv420p, yuv422p, yuv444p, their full-range `yuvj` twins, gray), yuv420p
/// otherwise. A y4m file has one size and one format, so every later picture is scaled and
/// converted to the header's with libswscale when it differs — what ffmpeg does when a stream
/// changes resolution under a fixed-size output — and a warning is logged once per change, for
/// the first ten changes ("scaling 1280x720 to the file's 320x240"). The file never holds a
/// frame its header does not describe: its size is always header + frames × (6 + the picture's
/// size).
///
/// A write that fails (a full disk, an I/O error, a short write) is thrown as a ``SinkError`` with
/// code ``PlayoutError/Code/sinkFailed`` that names the path and the system's reason; the file is
/// cut back to its last whole frame and the failure is kept in ``failure``: every later
/// ``render(_:)`` throws it again at once, without touching the dead file.
///
/// Owned by one thread at a time (not `Sendable`).
public final class Y4MSink {
    /// The file written.
    public let path: String
    /// Frames written so far (whole frames in the file).
    public private(set) var framesWritten = 0
    /// Frames that were scaled or converted to the header's size and format.
    public private(set) var framesScaled = 0
    /// The write failure that stopped the sink, or nil while it writes. Once set, it never
    /// clears: ``render(_:)`` throws it for every later frame.
    public private(set) var failure: SinkError?

    private let file: SinkFile
    private let frameRate: (numerator: Int, denominator: Int)
    private let logger: Logger
    /// The header's picture: set by the first frame.
    private var header: (width: Int32, height: Int32, format: AVPixelFormat)?
    /// "FRAME\n" and one picture, reused for every frame.
    private var buffer: [UInt8] = []
    private var scaler: PictureScaler?
    /// The size and format of the last picture rendered, to warn once per change.
    private var lastSource: (width: Int32, height: Int32, format: Int32)?
    private var warnings = ChangeWarnings()
    private static let frameMarker = Array("FRAME\n".utf8)

    /// Creates (truncates) `path`.
    ///
    /// - Parameter logger: where the once-per-change scaling warnings go.
    /// - Throws: ``SinkError`` when the file cannot be created.
    public init(path: String, frameRate: (numerator: Int, denominator: Int) = (30, 1), logger: Logger = Logger(label: "playout.sink")) throws(SinkError) {
        file = try SinkFile(path: path)
        self.path = path
        self.frameRate = frameRate
        self.logger = logger
    }

    /// Appends `frame` (a picture), scaled to the header's size and format when it differs.
    ///
    /// - Throws: ``SinkError``: with code ``PlayoutError/Code/sinkFailed`` when the file cannot
    ///   be written (kept in ``failure``, and thrown again for every later frame); with code
    ///   ``PlayoutError/Code/sink`` for a frame that is not a picture or a picture libswscale
    ///   cannot convert (that frame only).
    public func render(_ frame: borrowing DecodedFrame) throws(SinkError) {
        if let failure { throw failure }
        let source = UnsafePointer(frame.frame)
        guard source.pointee.width > 0, source.pointee.height > 0 else { throw SinkError("the y4m sink takes video frames") }
        let header: (width: Int32, height: Int32, format: AVPixelFormat)
        if let existing = self.header { header = existing } else { header = try writeHeader(for: source) }
        let sourceFormat = AVPixelFormat(rawValue: source.pointee.format)
        let same = source.pointee.width == header.width && source.pointee.height == header.height && sourceFormat == header.format
        if !same { warnOnChange(source, header: header) }
        lastSource = (source.pointee.width, source.pointee.height, source.pointee.format)
        let marker = Self.frameMarker.count
        if !same, scaler == nil { scaler = PictureScaler(width: header.width, height: header.height, format: header.format) }
        let scaler = scaler
        var filled: Result<Void, SinkError> = .success(())
        buffer.withUnsafeMutableBytes { bytes in
            let picture = UnsafeMutableRawBufferPointer(rebasing: bytes[marker...])
            if same {
                if !packPicture(source, into: picture) { filled = .failure(SinkError("cannot copy a \(pixelFormatName(sourceFormat)) picture")) }
            } else if let scaler {
                do throws(SinkError) { try scaler.scale(source, into: picture) } catch { filled = .failure(error) }
            } else {
                filled = .failure(SinkError("out of memory scaling pictures for \(path)"))
            }
        }
        try filled.get()
        do {
            try file.append(contentsOf: buffer, what: "frame \(framesWritten + 1)")
        } catch {
            fail(error)
            throw error
        }
        framesWritten += 1
        if !same { framesScaled += 1 }
    }

    /// Closes the file. A failure at close is kept in ``failure``. Idempotent.
    public func finish() {
        do {
            try file.close()
        } catch {
            fail(error)
        }
    }

    /// Writes the header for `source`'s size and (y4m-capable) format, and sizes the buffer.
    private func writeHeader(for source: UnsafePointer<AVFrame>) throws(SinkError) -> (width: Int32, height: Int32, format: AVPixelFormat) {
        let sourceFormat = AVPixelFormat(rawValue: source.pointee.format)
        let format = Self.chroma(of: sourceFormat) == nil ? AV_PIX_FMT_YUV420P : sourceFormat
        let header = (width: source.pointee.width, height: source.pointee.height, format: format)
        let size = av_image_get_buffer_size(format, header.width, header.height, 1)
        guard size > 0, let chroma = Self.chroma(of: format) else {
            throw SinkError("the y4m sink cannot write \(header.width)x\(header.height) pictures")
        }
        let text = "YUV4MPEG2 W\(header.width) H\(header.height) F\(frameRate.numerator):\(frameRate.denominator) Ip A1:1 C\(chroma)\n"
        do {
            try file.append(contentsOf: Array(text.utf8), what: "the header")
        } catch {
            fail(error)
            throw error
        }
        buffer = Self.frameMarker + [UInt8](repeating: 0, count: Int(size))
        self.header = header
        return header
    }

    /// Logs, once per change of the incoming pictures' size or format, what is scaled to what.
    private func warnOnChange(_ source: UnsafePointer<AVFrame>, header: (width: Int32, height: Int32, format: AVPixelFormat)) {
        if let last = lastSource, last.width == source.pointee.width, last.height == source.pointee.height, last.format == source.pointee.format { return }
        let sourceFormat = AVPixelFormat(rawValue: source.pointee.format)
        let resized = source.pointee.width != header.width || source.pointee.height != header.height
        let converted = sourceFormat != header.format
        let from = "\(source.pointee.width)x\(source.pointee.height)" + (converted ? " \(pixelFormatName(sourceFormat))" : "")
        let to = "\(header.width)x\(header.height)" + (converted ? " \(pixelFormatName(header.format))" : "")
        let verb = resized ? "scaling" : "converting"
        warnings.warn("\(verb) \(from) to the file's \(to)", logger: logger, path: path)
    }

    private func fail(_ error: SinkError) {
        if failure == nil { failure = error }
    }

    /// The y4m `C` tag of a pixel format, or nil when y4m cannot carry it.
    private static func chroma(of format: AVPixelFormat) -> String? {
        switch format {
        case AV_PIX_FMT_YUV420P, AV_PIX_FMT_YUVJ420P: "420jpeg"
        case AV_PIX_FMT_YUV422P, AV_PIX_FMT_YUVJ422P: "422"
        case AV_PIX_FMT_YUV444P, AV_PIX_FMT_YUVJ444P: "444"
        case AV_PIX_FMT_GRAY8: "mono"
        default: nil
        }
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
///
/// A WAV file has one format, so audio of another sample rate or channel layout is resampled and
/// remixed to the file's with libswresample — what ffmpeg does when a stream's audio format changes
/// under a fixed-format output — and a warning is logged once per change ("resampling 44100 Hz
/// mono to the file's 48000 Hz stereo"). The file never holds samples its header does not
/// describe: its size is always 44 + ``samplesWritten`` × channels × 4.
///
/// A write that fails is thrown as a ``SinkError`` with code ``PlayoutError/Code/sinkFailed``
/// naming the path and the system's reason, cut back to the last whole frame, and kept in
/// ``failure``: every later ``render(_:)`` throws it again at once.
///
/// Owned by one thread at a time (not `Sendable`).
public final class WAVSink {
    /// The file written.
    public let path: String
    /// Frames written so far (whole frames in the file).
    public private(set) var framesWritten = 0
    /// Frames that were resampled or remixed to the file's format.
    public private(set) var framesResampled = 0
    /// Samples per channel in the file.
    public private(set) var samplesWritten = 0
    /// The write failure that stopped the sink, or nil while it writes. Once set, it never
    /// clears: ``render(_:)`` throws it for every later frame.
    public private(set) var failure: SinkError?

    private let file: SinkFile
    private let logger: Logger
    private var format: (sampleRate: Int, channels: Int)?
    private var resampler: AudioResampler?
    /// The rate, channel layout and sample format of the last frame rendered, to warn once per change.
    private var lastSource: (sampleRate: Int32, layout: String, format: Int32)?
    private var warnings = ChangeWarnings()
    private var finished = false
    private static let headerSize = 44

    /// Creates (truncates) `path`.
    ///
    /// - Parameter logger: where the once-per-change resampling warnings go.
    /// - Throws: ``SinkError`` when the file cannot be created.
    public init(path: String, logger: Logger = Logger(label: "playout.sink")) throws(SinkError) {
        file = try SinkFile(path: path)
        self.path = path
        self.logger = logger
    }

    deinit {
        finish()
    }

    /// Appends `frame` (audio), resampled and remixed to the file's format when it differs.
    ///
    /// - Throws: ``SinkError``: with code ``PlayoutError/Code/sinkFailed`` when the file cannot
    ///   be written (kept in ``failure``, and thrown again for every later frame); with code
    ///   ``PlayoutError/Code/sink`` for a frame that is not audio or audio libswresample cannot
    ///   convert (that frame only).
    public func render(_ frame: borrowing DecodedFrame) throws(SinkError) {
        if let failure { throw failure }
        guard !finished else { throw SinkError(.sinkFailed, "\(path) is finished: no more frames") }
        let source = frame.frame
        guard source.pointee.width == 0, source.pointee.nb_samples > 0, source.pointee.sample_rate > 0, source.pointee.ch_layout.nb_channels > 0 else {
            throw SinkError("the wav sink takes audio frames")
        }
        let format: (sampleRate: Int, channels: Int)
        if let existing = self.format { format = existing } else { format = try writeHeader(sampleRate: frame.sampleRate, channels: frame.channelCount) }
        var samples: [Float]
        let native = frame.sampleRate == format.sampleRate && frame.channelCount == format.channels ? frame.interleavedFloatSamples() : nil
        if let native {
            // Back in the file's format: first what the resampler still holds, then these.
            samples = resampler?.flush() ?? []
            samples += native
        } else {
            if frame.sampleRate != format.sampleRate || frame.channelCount != format.channels { warnOnChange(source, format: format) }
            if resampler == nil { resampler = AudioResampler(sampleRate: format.sampleRate, channelCount: format.channels) }
            samples = try resampler!.convert(source)
            framesResampled += 1
        }
        lastSource = (source.pointee.sample_rate, describeChannelLayout(&source.pointee.ch_layout), source.pointee.format)
        try append(samples, what: "audio frame \(framesWritten + 1)")
        framesWritten += 1
    }

    /// Writes what the resampler still holds, the final sizes into the header, and closes the
    /// file. A failure is kept in ``failure``; after one, the header still gets the sizes of the
    /// whole frames the file kept (best effort). Idempotent.
    public func finish() {
        guard !finished else { return }
        finished = true
        if failure == nil, let held = resampler?.flush(), !held.isEmpty { try? append(held, what: "the last resampled samples") }
        do {
            if format != nil, file.size >= Self.headerSize {
                do {
                    try file.overwrite(headerBytes(), at: 0, what: "the header's sizes")
                } catch where failure != nil {
                    // The file failed before; its first error is the one to report.
                }
            }
            try file.close()
        } catch {
            fail(error)
        }
    }

    private func append(_ samples: [Float], what: String) throws(SinkError) {
        guard !samples.isEmpty, let channels = format?.channels else { return }
        do {
            try file.append(contentsOf: samples, what: what)
        } catch {
            fail(error)
            throw error
        }
        samplesWritten += samples.count / channels
    }

    private func writeHeader(sampleRate: Int, channels: Int) throws(SinkError) -> (sampleRate: Int, channels: Int) {
        let format = (sampleRate: sampleRate, channels: channels)
        self.format = format
        do {
            // Placeholder sizes, rewritten at finish().
            try file.append(contentsOf: headerBytes(), what: "the header")
        } catch {
            fail(error)
            throw error
        }
        return format
    }

    /// Logs, once per change of the incoming audio's format, what is resampled to what.
    private func warnOnChange(_ source: UnsafeMutablePointer<AVFrame>, format: (sampleRate: Int, channels: Int)) {
        let layout = describeChannelLayout(&source.pointee.ch_layout)
        if let last = lastSource, last.sampleRate == source.pointee.sample_rate, last.layout == layout, last.format == source.pointee.format { return }
        warnings.warn(
            "resampling \(source.pointee.sample_rate) Hz \(layout) to the file's \(format.sampleRate) Hz \(describeChannels(format.channels))",
            logger: logger, path: path
        )
    }

    private func fail(_ error: SinkError) {
        if failure == nil { failure = error }
    }

    /// RIFF/WAVE header for IEEE float samples (format 3), with the sizes written so far.
    private func headerBytes() -> [UInt8] {
        guard let format else { return [] }
        let dataBytes = max(0, file.size - Self.headerSize)
        var header: [UInt8] = []
        func append32(_ value: UInt32) { header += withUnsafeBytes(of: value.littleEndian, Array.init) }
        func append16(_ value: UInt16) { header += withUnsafeBytes(of: value.littleEndian, Array.init) }
        header += Array("RIFF".utf8)
        append32(UInt32(clamping: 36 + dataBytes))
        header += Array("WAVEfmt ".utf8)
        append32(16)
        append16(3)  // WAVE_FORMAT_IEEE_FLOAT
        append16(UInt16(clamping: format.channels))
        append32(UInt32(clamping: format.sampleRate))
        append32(UInt32(clamping: format.sampleRate * format.channels * 4))
        append16(UInt16(clamping: format.channels * 4))
        append16(32)
        header += Array("data".utf8)
        append32(UInt32(clamping: dataBytes))
        return header
    }
}
