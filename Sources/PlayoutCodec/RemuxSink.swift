internal import CFFmpeg
public import Logging
public import PlayoutCore

/// What a remux sink needs to know of one encoded stream.
public struct EncodedStreamDescription: Equatable, Sendable {
    /// The codec of the stream.
    public var codec: Codec
    /// Ticks per second of the frames' media times (90,000 for RTP video, 48,000 for Opus, …).
    public var clockRate: Int32
    /// Codec configuration; for H.264/H.265 left empty, the first key frame's parameter sets are
    /// used.
    public var extradata: [UInt8]
    /// Picture width (video; 0 until known).
    public var width: Int
    /// Picture height (video; 0 until known).
    public var height: Int
    /// Sample rate (audio).
    public var sampleRate: Int
    /// Channels (audio).
    public var channelCount: Int

    /// A stream description.
    public init(codec: Codec, clockRate: Int32, extradata: [UInt8] = [], width: Int = 0, height: Int = 0, sampleRate: Int = 0, channelCount: Int = 0) {
        self.codec = codec
        self.clockRate = clockRate
        self.extradata = extradata
        self.width = width
        self.height = height
        self.sampleRate = sampleRate
        self.channelCount = channelCount
    }
}

/// Writes the received encoded streams, without re-encoding, into a Matroska or MP4 file through
/// libavformat. Frames of each stream must come in decoding order.
///
/// The header is written once every stream is described well enough for the container: a video
/// stream needs its picture size (given, or set by ``setPictureSize(width:height:stream:)`` once
/// the first picture is decoded) and, for H.264/H.265 without extradata, a key frame's parameter
/// sets. Frames that come before are held (at most ``maximumHeldFrames``; older ones are dropped
/// and counted), then written in order. Opus without extradata gets an `OpusHead` built from the
/// channel count. The index is written at ``finish()``.
///
/// **A video stream that changes size after the header** (a sender switching 320x240 → 1280x720,
/// as simulcast and adaptive senders do) is kept in the one file, its frames written unchanged:
/// H.264 and H.265 key frames carry their new parameter sets in-band and VP8/VP9 key frames their
/// new size, so ffmpeg, ffprobe and players decode every frame at its own size, as they do for
/// `ffmpeg -c copy` of such a stream. Only the header's size (what `ffprobe -show_streams`
/// reports) stays the first one. We chose this over the alternatives because each loses
/// something a user wants: re-encoding to the first size would change the received bits the
/// remux sink exists to keep, and starting a new numbered file would split one recording into
/// several and break players' seeking across the change. A warning is logged once per change
/// ("video stream 0 changed size from 320x240 to 1280x720: …"), and ``pictureSizeChanges``
/// counts them.
///
/// A write that fails (a full disk, an I/O error; through libavformat, so for Matroska met at the
/// end of a cluster, for MP4 with the packet) is thrown as a ``SinkError`` with code
/// ``PlayoutError/Code/sinkFailed`` naming the path and the reason, and kept in ``failure``:
/// every later ``write(_:stream:timestamp:)`` throws it again at once, and ``finish()`` only
/// closes the file.
///
/// Owned by one thread at a time (not `Sendable`).
public final class RemuxSink {
    /// The file written.
    public let path: String
    /// The streams, completed as the first frames arrive.
    public private(set) var streams: [EncodedStreamDescription]
    /// Frames handed to the container so far.
    public private(set) var framesWritten = 0
    /// Times a video stream's pictures changed size after the header was written.
    public private(set) var pictureSizeChanges = 0
    /// The write failure that stopped the sink, or nil while it writes. Once set, it never
    /// clears: ``write(_:stream:timestamp:)`` throws it for every later frame.
    public private(set) var failure: SinkError?
    /// Frames dropped because they waited too long for the header (see ``maximumHeldFrames``).
    public private(set) var framesDropped = 0
    /// How many frames are held while a stream is not yet described (≈ 10 s of 30 fps video
    /// with 50 audio frames a second).
    public static let maximumHeldFrames = 800

    private var format: UnsafeMutablePointer<AVFormatContext>?
    private let packet: UnsafeMutablePointer<AVPacket>
    private var headerWritten = false
    private var finished = false
    private var held: [(frame: EncodedFrame, stream: Int, timestamp: MediaTime?)] = []
    /// Per video stream, the picture size last seen after the header (to warn once per change).
    private var currentSizes: [Int: (width: Int, height: Int)] = [:]
    private let logger: Logger
    private var warnings = ChangeWarnings()

    /// Prepares `path` (created now, so a bad path fails before anything starts).
    ///
    /// - Parameter logger: where the once-per-change picture-size warnings go.
    /// - Throws: ``SinkError`` for an unwritable path or a container libavformat cannot write.
    public init(path: String, streams: [EncodedStreamDescription], logger: Logger = Logger(label: "playout.sink")) throws(SinkError) {
        try SinkError.checkWritable(path)
        var format: UnsafeMutablePointer<AVFormatContext>?
        let allocated = avformat_alloc_output_context2(&format, nil, nil, path)
        guard allocated >= 0, let format, let packet = av_packet_alloc() else {
            throw SinkError("cannot write \(path): libavformat has no muxer for it (\(ffmpegErrorText(allocated)))")
        }
        self.path = path
        self.streams = streams
        self.format = format
        self.packet = packet
        self.logger = logger
        // Every packet goes to the file as it is written, so a failing file fails the write
        // that meets it (the container may still hold a cluster back).
        format.pointee.flush_packets = 1
        for description in streams {
            guard let stream = avformat_new_stream(format, nil), let parameters = stream.pointee.codecpar else {
                throw SinkError("cannot add a \(description.codec.rawValue) stream to \(path)")
            }
            parameters.pointee.codec_id = description.codec.avCodecID
            parameters.pointee.codec_type = description.codec.kind == .video ? AVMEDIA_TYPE_VIDEO : AVMEDIA_TYPE_AUDIO
            parameters.pointee.width = Int32(clamping: description.width)
            parameters.pointee.height = Int32(clamping: description.height)
            parameters.pointee.sample_rate = Int32(clamping: description.sampleRate)
            if description.channelCount > 0 { av_channel_layout_default(&parameters.pointee.ch_layout, Int32(clamping: description.channelCount)) }
            stream.pointee.time_base = AVRational(num: 1, den: max(1, description.clockRate))
            var extradata = description.extradata
            if extradata.isEmpty, description.codec == .opus {
                extradata = Self.opusHead(channelCount: max(1, description.channelCount))
                if parameters.pointee.sample_rate == 0 { parameters.pointee.sample_rate = 48_000 }
                if description.channelCount == 0 { av_channel_layout_default(&parameters.pointee.ch_layout, 2) }
            }
            if !extradata.isEmpty { Self.setExtradata(extradata, on: parameters) }
        }
        let opened = avio_open(&format.pointee.pb, path, 2)  // AVIO_FLAG_WRITE
        guard opened >= 0 else { throw SinkError("cannot write \(path): \(ffmpegErrorText(opened))") }
    }

    deinit {
        if !finished { try? finish() }
        var packet: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&packet)
        if let format {
            avio_closep(&format.pointee.pb)
            avformat_free_context(format)
        }
    }

    private static func setExtradata(_ bytes: [UInt8], on parameters: UnsafeMutablePointer<AVCodecParameters>) {
        let padding = Int(playout_input_buffer_padding())
        guard let buffer = av_mallocz(bytes.count + padding)?.assumingMemoryBound(to: UInt8.self) else { return }
        bytes.withUnsafeBufferPointer { buffer.update(from: $0.baseAddress!, count: bytes.count) }
        av_freep(&parameters.pointee.extradata)
        parameters.pointee.extradata = buffer
        parameters.pointee.extradata_size = Int32(bytes.count)
    }

    /// An `OpusHead` (RFC 7845 §5.1) for `channelCount` channels: version 1, no pre-skip, 48 kHz,
    /// no gain, mapping family 0 (what RTP's `opus/48000/2` carries).
    static func opusHead(channelCount: Int) -> [UInt8] {
        Array("OpusHead".utf8) + [1, UInt8(clamping: min(channelCount, 2)), 0, 0] + [0x80, 0xBB, 0, 0] + [0, 0, 0]
    }

    /// Sets a video stream's picture size: before the header, the size it declares; after it,
    /// the size of the pictures now coming (a change is logged once and counted in
    /// ``pictureSizeChanges``; the frames go on being written unchanged).
    public func setPictureSize(width: Int, height: Int, stream index: Int) {
        guard index < streams.count, width > 0, height > 0,
              let parameters = format?.pointee.streams[index]?.pointee.codecpar else { return }
        guard !headerWritten else {
            if failure == nil { noteSize(width: width, height: height, stream: index) }
            return
        }
        streams[index].width = width
        streams[index].height = height
        parameters.pointee.width = Int32(clamping: width)
        parameters.pointee.height = Int32(clamping: height)
    }

    /// Writes `frame` into stream `index` (the position in ``streams``), stamped `timestamp`
    /// (default: the frame's media time) as its decoding time and that plus its
    /// ``EncodedFrame/presentationOffset`` as its presentation time; held until the header can
    /// be written.
    ///
    /// - Throws: ``SinkError``: with code ``PlayoutError/Code/sinkFailed`` when the file cannot be
    ///   written or the container cannot take the streams (kept in ``failure``, and thrown again
    ///   for every later frame); with code ``PlayoutError/Code/sink`` for a stream index that
    ///   does not exist.
    public func write(_ frame: EncodedFrame, stream index: Int, timestamp: MediaTime? = nil) throws(SinkError) {
        if let failure { throw failure }
        guard format != nil, index < streams.count else { throw SinkError("no stream \(index) in \(path)") }
        guard !finished else { throw SinkError(.sinkFailed, "\(path) is finished: no more frames") }
        if !headerWritten {
            takeParameterSets(from: frame, stream: index)
            held.append((frame, index, timestamp))
            guard isDescribed else {
                if held.count > Self.maximumHeldFrames {
                    held.removeFirst()
                    framesDropped += 1
                }
                return
            }
            try writeHeader()
            return
        }
        try put(frame, stream: index, timestamp: timestamp)
    }

    /// Whether every stream is described well enough for the header.
    private var isDescribed: Bool {
        format != nil && undescribedVideoStream == nil
    }

    /// The first video stream not yet described well enough for the header (no picture size, or
    /// an H.264/H.265 stream without its parameter sets), if any.
    private var undescribedVideoStream: Int? {
        guard let format else { return nil }
        return streams.indices.first { index in
            guard streams[index].codec.kind == .video, let parameters = format.pointee.streams[index]?.pointee.codecpar else { return false }
            let needsParameterSets = streams[index].codec == .h264 || streams[index].codec == .h265
            return !(parameters.pointee.width > 0 && parameters.pointee.height > 0 && (!needsParameterSets || parameters.pointee.extradata_size > 0))
        }
    }

    /// H.264/H.265 without configuration: the parameter sets of the first key frame that has them.
    private func takeParameterSets(from frame: EncodedFrame, stream index: Int) {
        let codec = streams[index].codec
        guard frame.isKeyframe, codec == .h264 || codec == .h265,
              let parameters = format?.pointee.streams[index]?.pointee.codecpar, parameters.pointee.extradata_size == 0 else { return }
        let sets = Self.parameterSets(in: frame.bytes, codec: codec)
        if !sets.isEmpty { Self.setExtradata(sets, on: parameters) }
    }

    /// Logs a video stream's size change after the header, once per change.
    private func noteSize(width: Int, height: Int, stream index: Int) {
        let previous = currentSizes[index] ?? (streams[index].width, streams[index].height)
        currentSizes[index] = (width, height)
        guard previous != (width, height) else { return }
        pictureSizeChanges += 1
        let header = "\(streams[index].width)x\(streams[index].height)"
        warnings.warn(
            "video stream \(index) changed size from \(previous.width)x\(previous.height) to \(width)x\(height): written unchanged, the new size travels in the stream itself (the header keeps \(header))",
            logger: logger, path: path
        )
    }

    /// Writes the header, then the frames held until now.
    private func writeHeader() throws(SinkError) {
        guard let format else { return }
        let written = avformat_write_header(format, nil)
        guard written >= 0 else { throw fail(SinkError(.sinkFailed, "cannot start \(path): \(ffmpegErrorText(written))")) }
        headerWritten = true
        let waiting = held
        held = []
        for (frame, stream, timestamp) in waiting { try put(frame, stream: stream, timestamp: timestamp) }
    }

    private func put(_ frame: EncodedFrame, stream index: Int, timestamp: MediaTime?) throws(SinkError) {
        guard let format, let stream = format.pointee.streams[index] else { throw SinkError("no stream \(index) in \(path)") }
        av_packet_unref(packet)
        guard av_new_packet(packet, Int32(frame.bytes.count)) >= 0 else { throw fail(SinkError(.sinkFailed, "out of memory writing \(path)")) }
        frame.bytes.withUnsafeBufferPointer { packet.pointee.data.update(from: $0.baseAddress!, count: frame.bytes.count) }
        let time = timestamp ?? frame.mediaTime
        let ticks = av_rescale_q(time.ticks, AVRational(num: 1, den: max(1, time.clockRate)), stream.pointee.time_base)
        // Decoding time as stamped; presentation later by the frame's composition offset (B-frames).
        let offset = av_rescale_q(max(0, frame.presentationOffset), AVRational(num: 1, den: max(1, frame.mediaTime.clockRate)), stream.pointee.time_base)
        packet.pointee.dts = ticks
        packet.pointee.pts = ticks &+ offset
        packet.pointee.stream_index = Int32(index)
        if frame.isKeyframe { packet.pointee.flags |= 1 }  // AV_PKT_FLAG_KEY
        let result = av_interleaved_write_frame(format, packet)
        guard result >= 0 else { throw fail(SinkError(.sinkFailed, "writing \(path) failed: \(ffmpegErrorText(result))")) }
        framesWritten += 1
    }

    /// Keeps the first failure; returns `error` to throw.
    private func fail(_ error: SinkError) -> SinkError {
        if failure == nil { failure = error }
        return error
    }

    /// Writes what is held (the header as described so far), the trailer (index), and closes the
    /// file; after a ``failure`` it only closes the file (the failure was thrown by the write that
    /// met it). Idempotent.
    ///
    /// - Throws: ``SinkError`` with code ``PlayoutError/Code/sinkFailed`` when the container
    ///   cannot take the streams as described (e.g. no key frame or picture size ever came for a
    ///   video stream) or the file fails now; kept in ``failure``.
    public func finish() throws(SinkError) {
        guard !finished, let format else { return }
        finished = true
        var error: SinkError?
        if failure == nil {
            do throws(SinkError) {
                if !headerWritten, !held.isEmpty {
                    // A run stopped before a video stream's first key frame: no header can say it.
                    if let index = undescribedVideoStream {
                        throw fail(SinkError(.sinkFailed, "\(path): the run ended before the first key frame of video stream \(index) (its picture size and parameter sets), so there is nothing playable to write"))
                    }
                    try writeHeader()
                }
                if headerWritten {
                    let result = av_write_trailer(format)
                    if result < 0 { error = fail(SinkError(.sinkFailed, "finishing \(path) failed: \(ffmpegErrorText(result))")) }
                }
            } catch let failed {
                error = failed
            }
        }
        let closed = avio_closep(&format.pointee.pb)
        if closed < 0, error == nil, failure == nil { error = fail(SinkError(.sinkFailed, "closing \(path) failed: \(ffmpegErrorText(closed))")) }
        if let error { throw error }
    }

    /// The Annex B parameter-set NAL units (with start codes) of an access unit.
    static func parameterSets(in accessUnit: [UInt8], codec: Codec) -> [UInt8] {
        AnnexB.nalUnits(of: accessUnit).filter { unit in
            let type = codec == .h264 ? unit[0] & 0x1F : (unit[0] >> 1) & 0x3F
            return codec == .h264 ? (type == 7 || type == 8) : (32...34).contains(type)
        }.flatMap { [0, 0, 0, 1] + $0 }
    }
}
