// The decode loops the Decode benchmark and decode-instructions.sh compare: Playout's path and the
// C loop (CDecodeReference), on one file with one decoder configuration.
import CDecodeReference
import PlayoutCodec
import PlayoutCore

/// Playout's path: open the input (libavformat probes it), open the decoder, demux, decode to
/// nothing. Calls `opened` once the input is open (the point from which ffmpeg's `-benchmark`
/// line counts). Returns the frames decoded.
public func playoutDecode(_ path: String, configuration: FFmpegDecoder.Configuration, opened: () -> Void = {}) throws -> Int {
    let demuxer = try FFmpegDemuxer(url: path)
    opened()
    guard let stream = demuxer.streams.first(where: { $0.kind == .video }), let codec = stream.codec else {
        throw CodecError(.openFailed, "\(path) has no video stream Playout decodes")
    }
    let decoder = try FFmpegDecoder(codec: codec, configuration: configuration)
    var frames = 0
    while let frame = try demuxer.read() {
        guard frame.track.rawValue == UInt32(stream.index) else { continue }
        try decoder.decode(frame.bytes) { _ in frames += 1 }
    }
    try decoder.flush { _ in frames += 1 }
    return frames
}

/// Opens what ``playoutDecode(_:configuration:opened:)`` opens and decodes nothing: its fixed
/// cost, to subtract.
public func playoutOpen(_ path: String, configuration: FFmpegDecoder.Configuration) throws {
    let demuxer = try FFmpegDemuxer(url: path)
    guard let codec = demuxer.streams.first(where: { $0.kind == .video })?.codec else { return }
    _ = try FFmpegDecoder(codec: codec, configuration: configuration)
}

/// The C loop (`av_read_frame` → `avcodec_send_packet` → `avcodec_receive_frame`, decoder opened
/// from the stream's codec parameters). Returns the frames decoded, or -1 when it cannot open.
public func referenceDecode(_ path: String, configuration: FFmpegDecoder.Configuration) -> Int {
    Int(reference_decode_file(path, Int32(configuration.threadCount), configuration.threading == .frame ? 1 : 0))
}
