internal import CFFmpeg
import Logging
import PlayoutCore

/// Scales and converts pictures to one size and pixel format with libswscale — bicubic, as
/// ffmpeg's `scale` filter does when a stream changes size under a fixed-size output — and packs
/// the result without row padding (what a y4m frame holds).
///
/// Owned by one sink; the libswscale context is kept and rebuilt only when the source's size or
/// format changes.
final class PictureScaler {
    /// The size and format every picture is converted to.
    let width: Int32
    let height: Int32
    let format: AVPixelFormat
    /// The bytes of one packed output picture.
    let pictureSize: Int
    private var context: OpaquePointer?
    private let output: UnsafeMutablePointer<AVFrame>

    /// A scaler to `width`×`height` in `format`; nil when libavutil cannot allocate the picture.
    init?(width: Int32, height: Int32, format: AVPixelFormat) {
        let size = av_image_get_buffer_size(format, width, height, 1)
        guard size > 0, let output = av_frame_alloc() else { return nil }
        output.pointee.width = width
        output.pointee.height = height
        output.pointee.format = format.rawValue
        guard av_frame_get_buffer(output, 0) >= 0 else {
            var frame: UnsafeMutablePointer<AVFrame>? = output
            av_frame_free(&frame)
            return nil
        }
        self.width = width
        self.height = height
        self.format = format
        self.output = output
        pictureSize = Int(size)
    }

    deinit {
        sws_freeContext(context)
        var frame: UnsafeMutablePointer<AVFrame>? = output
        av_frame_free(&frame)
    }

    /// Scales `source` and packs the result into `buffer` (``pictureSize`` bytes).
    ///
    /// - Throws: ``SinkError`` when libswscale cannot convert from the source's format or size.
    func scale(_ source: UnsafePointer<AVFrame>, into buffer: UnsafeMutableRawBufferPointer) throws(SinkError) {
        let sourceFormat = AVPixelFormat(rawValue: source.pointee.format)
        context = sws_getCachedContext(
            context, source.pointee.width, source.pointee.height, sourceFormat, width, height, format, SWS_BICUBIC, nil, nil, nil
        )
        guard let context else {
            throw SinkError(.sink, "cannot scale \(source.pointee.width)x\(source.pointee.height) \(pixelFormatName(sourceFormat)) pictures to \(width)x\(height) \(pixelFormatName(format))")
        }
        let lines = withUnsafePointer(to: source.pointee.data) { data in
            withUnsafePointer(to: source.pointee.linesize) { linesize in
                data.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { planes in
                    linesize.withMemoryRebound(to: Int32.self, capacity: 8) { strides in
                        withUnsafePointer(to: output.pointee.data) { outputData in
                            withUnsafePointer(to: output.pointee.linesize) { outputLinesize in
                                outputData.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { outputPlanes in
                                    outputLinesize.withMemoryRebound(to: Int32.self, capacity: 8) { outputStrides in
                                        sws_scale(context, planes, strides, 0, source.pointee.height, outputPlanes, outputStrides)
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        guard lines == height, packPicture(output, into: buffer) else {
            throw SinkError(.sink, "scaling a \(source.pointee.width)x\(source.pointee.height) picture to \(width)x\(height) failed")
        }
    }
}

/// Packs `frame`'s planes without row padding into `buffer` (exactly its packed size); false
/// when the sizes disagree.
func packPicture(_ frame: UnsafePointer<AVFrame>, into buffer: UnsafeMutableRawBufferPointer) -> Bool {
    let format = AVPixelFormat(rawValue: frame.pointee.format)
    let size = av_image_get_buffer_size(format, frame.pointee.width, frame.pointee.height, 1)
    guard size > 0, Int(size) == buffer.count, let base = buffer.baseAddress else { return false }
    let copied = withUnsafePointer(to: frame.pointee.data) { data in
        withUnsafePointer(to: frame.pointee.linesize) { linesize in
            data.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { planes in
                linesize.withMemoryRebound(to: Int32.self, capacity: 8) { strides in
                    av_image_copy_to_buffer(
                        base.assumingMemoryBound(to: UInt8.self), size, planes, strides, format, frame.pointee.width, frame.pointee.height, 1
                    )
                }
            }
        }
    }
    return copied == size
}

/// FFmpeg's name of a pixel format (`"yuv420p"`).
func pixelFormatName(_ format: AVPixelFormat) -> String {
    av_get_pix_fmt_name(format).map { String(cString: $0) } ?? "unknown"
}

/// Converts audio to one sample rate and channel count, as interleaved 32-bit float, with
/// libswresample (what ffmpeg does when a stream's audio format changes under a fixed-format
/// output): resampling, remixing (mono → stereo, 5.1 → stereo, …) and sample-format conversion.
///
/// The resampler's filter holds a few samples back; ``flush()`` returns them, and a change of the
/// input's format flushes the old conversion before starting the new one, so no sample is lost
/// or doubled at a change.
final class AudioResampler {
    /// The output rate and channel count.
    let sampleRate: Int32
    let channelCount: Int32
    private var context: OpaquePointer?
    /// The input the context was made for: rate, sample format and channel layout.
    private var inputRate: Int32 = 0
    private var inputFormat: Int32 = -1
    private var inputLayout = AVChannelLayout()

    /// A resampler to `sampleRate` Hz × `channelCount` channels (the default layout for that
    /// count).
    init(sampleRate: Int, channelCount: Int) {
        self.sampleRate = Int32(clamping: sampleRate)
        self.channelCount = Int32(clamping: channelCount)
    }

    deinit {
        swr_free(&context)
        av_channel_layout_uninit(&inputLayout)
    }

    /// Whether a conversion is under way (samples may be held in the filter).
    var isActive: Bool { context != nil }

    /// Converts `frame`; the result may hold a few samples fewer or more than the frame (the
    /// filter's delay), and starts with what the previous conversion still held when the input
    /// format changed.
    ///
    /// - Throws: ``SinkError`` when libswresample cannot convert from the frame's format.
    func convert(_ frame: UnsafeMutablePointer<AVFrame>) throws(SinkError) -> [Float] {
        var layout = AVChannelLayout()
        defer { av_channel_layout_uninit(&layout) }
        if frame.pointee.ch_layout.order == AV_CHANNEL_ORDER_UNSPEC || frame.pointee.ch_layout.nb_channels <= 0 {
            av_channel_layout_default(&layout, max(1, frame.pointee.ch_layout.nb_channels))
        } else {
            _ = av_channel_layout_copy(&layout, &frame.pointee.ch_layout)
        }
        var output: [Float] = []
        if context == nil || inputRate != frame.pointee.sample_rate || inputFormat != frame.pointee.format
            || av_channel_layout_compare(&inputLayout, &layout) != 0 {
            output = flush()
            try open(rate: frame.pointee.sample_rate, format: frame.pointee.format, layout: &layout)
        }
        let inputCount = frame.pointee.nb_samples
        let capacity = swr_get_out_samples(context, inputCount)
        guard capacity >= 0 else { throw SinkError(.sink, "cannot resample \(inputCount) samples: \(ffmpegErrorText(capacity))") }
        let converted = try run(capacity: Int(capacity)) { pointer, count in
            frame.pointee.extended_data.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: Int(layout.nb_channels)) { input in
                swr_convert(context, pointer, count, input, inputCount)
            }
        }
        output += converted
        return output
    }

    /// Returns what the filter still holds and ends the conversion (the next ``convert(_:)``
    /// starts afresh).
    func flush() -> [Float] {
        guard let context else { return [] }
        var output: [Float] = []
        while true {
            let capacity = max(64, Int(swr_get_out_samples(context, 0)))
            guard let samples = try? run(capacity: capacity, { pointer, count in swr_convert(context, pointer, count, nil, 0) }), !samples.isEmpty else { break }
            output += samples
        }
        swr_free(&self.context)
        return output
    }

    private func open(rate: Int32, format: Int32, layout: UnsafeMutablePointer<AVChannelLayout>) throws(SinkError) {
        var outputLayout = AVChannelLayout()
        defer { av_channel_layout_uninit(&outputLayout) }
        av_channel_layout_default(&outputLayout, channelCount)
        var created: OpaquePointer?
        let allocated = swr_alloc_set_opts2(
            &created, &outputLayout, AV_SAMPLE_FMT_FLT, sampleRate, layout, AVSampleFormat(rawValue: format), rate, 0, nil
        )
        let initialized = allocated >= 0 ? swr_init(created) : allocated
        guard initialized >= 0, let created else {
            swr_free(&created)
            let name = av_get_sample_fmt_name(AVSampleFormat(rawValue: format)).map { String(cString: $0) } ?? "unknown"
            throw SinkError(.sink, "cannot convert \(rate) Hz \(name) audio to \(sampleRate) Hz float: \(ffmpegErrorText(initialized))")
        }
        context = created
        inputRate = rate
        inputFormat = format
        av_channel_layout_uninit(&inputLayout)
        _ = av_channel_layout_copy(&inputLayout, layout)
    }

    /// Runs one `swr_convert` into a buffer of `capacity` samples per channel; returns the
    /// samples it produced, interleaved.
    private func run(capacity: Int, _ body: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, Int32) -> Int32) throws(SinkError) -> [Float] {
        let channels = Int(channelCount)
        var buffer = [Float](repeating: 0, count: max(1, capacity) * channels)
        let produced = buffer.withUnsafeMutableBytes { bytes in
            var plane: UnsafeMutablePointer<UInt8>? = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
            return body(&plane, Int32(clamping: max(1, capacity)))
        }
        guard produced >= 0 else { throw SinkError(.sink, "resampling failed: \(ffmpegErrorText(produced))") }
        buffer.removeLast(buffer.count - Int(produced) * channels)
        return buffer
    }
}

/// How a channel layout reads ("mono", "stereo", "5.1"), from libavutil.
func describeChannelLayout(_ layout: UnsafePointer<AVChannelLayout>) -> String {
    var text = [CChar](repeating: 0, count: 64)
    guard av_channel_layout_describe(layout, &text, text.count) > 0 else { return "\(layout.pointee.nb_channels) channels" }
    return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// How `count` channels read in the default layout ("mono", "stereo").
func describeChannels(_ count: Int) -> String {
    var layout = AVChannelLayout()
    defer { av_channel_layout_uninit(&layout) }
    av_channel_layout_default(&layout, Int32(clamping: max(1, count)))
    return describeChannelLayout(&layout)
}

/// A sink's once-per-change warnings, bounded: a stream that flaps between two sizes every few
/// frames logs the first ``limit`` changes, then one line saying later ones are not logged.
struct ChangeWarnings {
    /// The most changes logged per sink.
    static let limit = 10
    /// Changes met so far.
    private(set) var count = 0

    /// Logs `message` for one more change, unless past the limit.
    mutating func warn(_ message: @autoclosure () -> String, logger: Logger, path: String) {
        count += 1
        if count <= Self.limit {
            logger.warning("\(message())", metadata: ["path": "\(path)"])
        } else if count == Self.limit + 1 {
            logger.warning("the stream keeps changing format: further changes are not logged", metadata: ["path": "\(path)"])
        }
    }
}
