internal import CFFmpeg
public import PlayoutCore

/// What a remux sink needs to know of one encoded stream.
public struct EncodedStreamDescription: Equatable, Sendable {
    public var codec: Codec
    /// Ticks per second of the frames' media times (90,000 for RTP video, 48,000 for Opus, …).
    public var clockRate: Int32
    /// Codec configuration; for H.264/H.265 left empty, the first key frame's parameter sets are
    /// used.
    public var extradata: [UInt8]
    public var width: Int
    public var height: Int
    public var sampleRate: Int
    public var channelCount: Int

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
/// libavformat. Frames of each stream must come in decoding order; the header is written at the
/// first frame (so H.264/H.265 parameter sets can come from the first key frame), the index at
/// ``finish()``.
public final class RemuxSink {
    public let path: String
    public let streams: [EncodedStreamDescription]
    public private(set) var framesWritten = 0

    private var format: UnsafeMutablePointer<AVFormatContext>?
    private let packet: UnsafeMutablePointer<AVPacket>
    private var headerWritten = false
    private var finished = false

    /// Prepares `path` (created now, so a bad path fails before anything starts).
    ///
    /// - Throws: ``SinkError`` for an unwritable path or a container libavformat cannot write.
    public init(path: String, streams: [EncodedStreamDescription]) throws(SinkError) {
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
        for description in streams {
            guard let stream = avformat_new_stream(format, nil), let parameters = stream.pointee.codecpar else {
                throw SinkError("cannot add a \(description.codec.rawValue) stream to \(path)")
            }
            parameters.pointee.codec_id = description.codec.avCodecID
            parameters.pointee.codec_type = description.codec.kind == .video ? AVMEDIA_TYPE_VIDEO : AVMEDIA_TYPE_AUDIO
            parameters.pointee.width = Int32(description.width)
            parameters.pointee.height = Int32(description.height)
            parameters.pointee.sample_rate = Int32(description.sampleRate)
            if description.channelCount > 0 { av_channel_layout_default(&parameters.pointee.ch_layout, Int32(description.channelCount)) }
            stream.pointee.time_base = AVRational(num: 1, den: description.clockRate)
            if !description.extradata.isEmpty { Self.setExtradata(description.extradata, on: parameters) }
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

    /// Writes `frame` into stream `index` (the position in ``streams``).
    public func write(_ frame: EncodedFrame, stream index: Int) throws(SinkError) {
        guard let format, index < streams.count else { throw SinkError("no stream \(index) in \(path)") }
        if !headerWritten {
            // H.264/H.265 without configuration: take the parameter sets of this key frame.
            for (position, description) in streams.enumerated() where description.extradata.isEmpty && position == index {
                let sets = Self.parameterSets(in: frame.bytes, codec: description.codec)
                if !sets.isEmpty, let parameters = format.pointee.streams[position]?.pointee.codecpar {
                    Self.setExtradata(sets, on: parameters)
                }
            }
            let written = avformat_write_header(format, nil)
            guard written >= 0 else { throw SinkError("cannot start \(path): \(ffmpegErrorText(written))") }
            headerWritten = true
        }
        guard let stream = format.pointee.streams[index] else { throw SinkError("no stream \(index) in \(path)") }
        av_packet_unref(packet)
        guard av_new_packet(packet, Int32(frame.bytes.count)) >= 0 else { throw SinkError("out of memory writing \(path)") }
        frame.bytes.withUnsafeBufferPointer { packet.pointee.data.update(from: $0.baseAddress!, count: frame.bytes.count) }
        let source = AVRational(num: 1, den: frame.mediaTime.clockRate)
        let timestamp = av_rescale_q(frame.mediaTime.ticks, source, stream.pointee.time_base)
        packet.pointee.pts = timestamp
        packet.pointee.dts = timestamp
        packet.pointee.stream_index = Int32(index)
        if frame.isKeyframe { packet.pointee.flags |= 1 }  // AV_PKT_FLAG_KEY
        let result = av_interleaved_write_frame(format, packet)
        guard result >= 0 else { throw SinkError("writing \(path) failed: \(ffmpegErrorText(result))") }
        framesWritten += 1
    }

    /// Writes the trailer (index) and closes the file. Idempotent.
    public func finish() throws(SinkError) {
        guard !finished, let format else { return }
        finished = true
        if headerWritten {
            let result = av_write_trailer(format)
            guard result >= 0 else { throw SinkError("finishing \(path) failed: \(ffmpegErrorText(result))") }
        }
        avio_closep(&format.pointee.pb)
    }

    /// The Annex B parameter-set NAL units (with start codes) of an access unit.
    static func parameterSets(in accessUnit: [UInt8], codec: Codec) -> [UInt8] {
        AnnexB.nalUnits(of: accessUnit).filter { unit in
            let type = codec == .h264 ? unit[0] & 0x1F : (unit[0] >> 1) & 0x3F
            return codec == .h264 ? (type == 7 || type == 8) : (32...34).contains(type)
        }.flatMap { [0, 0, 0, 1] + $0 }
    }
}
