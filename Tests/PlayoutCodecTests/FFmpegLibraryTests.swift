import PlayoutCodec
import Testing

@Suite("FFmpeg link")
struct FFmpegLibraryTests {
    @Test("avcodec_version and friends report FFmpeg 5.1 or later")
    func versions() {
        let versions = FFmpegLibrary.versions
        #expect(versions.map(\.name) == ["libavformat", "libavcodec", "libavutil", "libswscale", "libswresample"])
        let avcodec = versions[1]
        #expect(avcodec.major >= 59, "libavcodec \(avcodec) is older than FFmpeg 5.1")
        #expect(!FFmpegLibrary.release.isEmpty)
    }

    @Test("the decoders Playout relies on are present", arguments: ["h264", "hevc", "vp8", "vp9", "opus", "aac", "pcm_mulaw", "pcm_alaw"])
    func decoders(name: String) {
        #expect(FFmpegLibrary.hasDecoder(named: name))
    }

    @Test("an unknown decoder is reported missing")
    func unknownDecoder() {
        #expect(!FFmpegLibrary.hasDecoder(named: "no-such-codec"))
    }
}
