import Foundation
import PlayoutCodec
import PlayoutCore
import PlayoutTesting
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A sink whose file fails (issue 14, item 5): the failure is thrown with the path and the
/// system's reason, kept in `failure`, and every later frame is refused with the same error
/// without touching the dead file again.
@Suite("Sinks: a failing file", .enabled(if: FFmpeg.isAvailable, "ffmpeg is not on PATH"))
struct SinkFailureTests {
    /// Decoded 320x240 pictures and their encoded frames (H.264, one key frame, no B-frames).
    static let video: (pictures: [RetainedFrame], frames: [EncodedFrame], clockRate: Int32) = {
        let clip = FFmpeg.temporaryFile("fail.ts")
        defer { try? FileManager.default.removeItem(at: clip) }
        guard (try? FFmpeg.run(["-f", "lavfi", "-i", "testsrc=size=320x240:rate=30:duration=0.5", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-bf", "0", clip.path])) != nil,
              let demuxer = try? FFmpegDemuxer(url: clip.path), let decoder = try? FFmpegDecoder(codec: .h264, configuration: .init(threadCount: 1)) else { return ([], [], 90_000) }
        var pictures: [RetainedFrame] = []
        var frames: [EncodedFrame] = []
        while let frame = try? demuxer.read() {
            frames.append(frame)
            try? decoder.decode(frame.bytes) { picture in picture.retained().map { pictures.append($0) } }
        }
        try? decoder.flush { picture in picture.retained().map { pictures.append($0) } }
        return (pictures, frames, demuxer.streams[0].clockRate)
    }()

    /// Decoded 48 kHz stereo Opus audio frames (20 ms each).
    static let audio: [RetainedFrame] = {
        let clip = FFmpeg.temporaryFile("fail.ogg")
        defer { try? FileManager.default.removeItem(at: clip) }
        guard (try? FFmpeg.run(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=2", "-ac", "2", "-c:a", "libopus", clip.path])) != nil,
              let demuxer = try? FFmpegDemuxer(url: clip.path) else { return [] }
        let stream = demuxer.streams[0]
        guard let decoder = try? FFmpegDecoder(codec: .opus, extradata: stream.extradata, sampleRate: stream.sampleRate, channelCount: stream.channelCount) else { return [] }
        var frames: [RetainedFrame] = []
        while let frame = try? demuxer.read() { try? decoder.decode(frame) { $0.retained().map { frames.append($0) } } }
        return frames
    }()

    static func render(_ picture: RetainedFrame, into sink: Y4MSink) throws(SinkError) {
        var result: Result<Void, SinkError> = .success(())
        picture.withDecodedFrame { frame in
            do throws(SinkError) { try sink.render(frame) } catch { result = .failure(error) }
        }
        try result.get()
    }

    static func render(_ samples: RetainedFrame, into sink: WAVSink) throws(SinkError) {
        var result: Result<Void, SinkError> = .success(())
        samples.withDecodedFrame { frame in
            do throws(SinkError) { try sink.render(frame) } catch { result = .failure(error) }
        }
        try result.get()
    }

    static func fileSize(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? nil
    }

    /// Expects `body` to throw a ``SinkError`` with code `sinkFailed` whose message has each of
    /// `words`; returns it.
    @discardableResult
    static func expectFailure(mentioning words: [String], _ body: () throws(SinkError) -> Void) -> SinkError? {
        do {
            try body()
            Issue.record("no error; expected one mentioning \(words)")
            return nil
        } catch {
            #expect(error.code == .sinkFailed, "\(error)")
            for word in words { #expect(error.message.contains(word), "\(error.message)") }
            return error
        }
    }

    @Test("y4m on /dev/full: ENOSPC is thrown with the path, kept in failure, and every later frame gets the same error")
    func y4mOnDevFull() throws {
        let sink = try Y4MSink(path: "/dev/full")
        let first = try #require(Self.expectFailure(mentioning: ["/dev/full", "No space left on device"]) { () throws(SinkError) in try Self.render(Self.video.pictures[0], into: sink) })
        #expect(sink.failure == first)
        for picture in Self.video.pictures.dropFirst() {
            #expect(throws: first) { try Self.render(picture, into: sink) }
        }
        sink.finish()
        #expect(sink.framesWritten == 0 && sink.failure == first)
    }

    @Test("wav on /dev/full: ENOSPC is thrown with the path, kept in failure, and every later frame gets the same error")
    func wavOnDevFull() throws {
        let sink = try WAVSink(path: "/dev/full")
        let first = try #require(Self.expectFailure(mentioning: ["/dev/full", "No space left on device"]) { () throws(SinkError) in try Self.render(Self.audio[0], into: sink) })
        #expect(sink.failure == first)
        for frame in Self.audio.dropFirst().prefix(20) {
            #expect(throws: first) { try Self.render(frame, into: sink) }
        }
        sink.finish()
        #expect(sink.framesWritten == 0 && sink.samplesWritten == 0 && sink.failure == first)
    }

    @Test("an I/O error (EIO: /proc/version takes no writes, even from root) is thrown with the path and the reason", .enabled(if: geteuid() == 0, "only root can open /proc/version for writing"))
    func ioError() throws {
        let y4m = try Y4MSink(path: "/proc/version")
        let error = Self.expectFailure(mentioning: ["/proc/version", "Input/output error"]) { () throws(SinkError) in try Self.render(Self.video.pictures[0], into: y4m) }
        #expect(y4m.failure == error)
        let wav = try WAVSink(path: "/proc/version")
        Self.expectFailure(mentioning: ["/proc/version", "Input/output error"]) { () throws(SinkError) in try Self.render(Self.audio[0], into: wav) }
    }

    @Test("remux on /dev/full: mp4 fails at its header, mkv at its first cluster or the end; the error is thrown once and kept, later frames get it again", arguments: ["mp4", "mkv"])
    func remuxOnDevFull(container: String) throws {
        let link = FFmpeg.temporaryFile("full.\(container)")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: "/dev/full")
        defer { try? FileManager.default.removeItem(at: link) }
        let sink = try RemuxSink(path: link.path, streams: [EncodedStreamDescription(codec: .h264, clockRate: Self.video.clockRate, width: 320, height: 240)])
        var errors: [SinkError] = []
        for frame in Self.video.frames {
            do { try sink.write(frame, stream: 0) } catch { errors.append(error) }
        }
        do { try sink.finish() } catch { errors.append(error) }
        let failure = try #require(sink.failure, "a file on /dev/full must fail")
        #expect(failure.code == .sinkFailed && failure.message.contains(link.path) && failure.message.contains("No space left on device"), "\(failure)")
        #expect(Set(errors) == [failure], "one error, the same every time: \(errors)")
        if container == "mp4" {
            #expect(failure.message.hasPrefix("cannot start"), "\(failure)")
            #expect(errors.count == Self.video.frames.count, "every frame refused; finish() does not throw it again")
        }
    }

    @Test("a run that ends before the video's first key frame: finish() says so, naming the stream, instead of the muxer's EINVAL")
    func endedBeforeKeyFrame() throws {
        let file = FFmpeg.temporaryFile("early.mp4")
        defer { try? FileManager.default.removeItem(at: file) }
        // No size and no parameter sets given: only a key frame would describe the video, and
        // only frames after it arrive (the subscriber stopped while waiting for the next).
        let sink = try RemuxSink(path: file.path, streams: [EncodedStreamDescription(codec: .h264, clockRate: Self.video.clockRate)])
        let deltas = Self.video.frames.filter { !$0.isKeyframe }
        #expect(deltas.count > 5)
        for frame in deltas.prefix(5) { try sink.write(frame, stream: 0) }
        #expect {
            try sink.finish()
        } throws: { error in
            let error = error as! SinkError
            return error.code == .sinkFailed && error.message.contains("before the first key frame of video stream 0") && error.message.contains(file.path)
        }
    }

    @Test("a path in a directory root cannot write to (sysfs; a 0500 directory made immutable) fails when the sink is created, naming the path and the reason")
    func readOnlyDirectory() throws {
        var directories = ["/sys"]
        let temporary = FFmpeg.temporaryFile("readonly")
        try FileManager.default.createDirectory(at: temporary, withIntermediateDirectories: false)
        chmod(temporary.path, 0o500)
        let immutable = geteuid() == 0 && SmallDisk.runs("/usr/bin/chattr", ["+i", temporary.path])
        defer {
            if immutable { _ = SmallDisk.runs("/usr/bin/chattr", ["-i", temporary.path]) }
            try? FileManager.default.removeItem(at: temporary)
        }
        if access(temporary.path, W_OK) != 0 || immutable { directories.append(temporary.path) }
        for directory in directories {
            for name in ["out.y4m", "out.wav", "out.mkv"] {
                let path = directory + "/playout-" + name
                do {
                    switch name {
                    case "out.y4m": _ = try Y4MSink(path: path)
                    case "out.wav": _ = try WAVSink(path: path)
                    default: _ = try RemuxSink(path: path, streams: [EncodedStreamDescription(codec: .h264, clockRate: 90_000)])
                    }
                    Issue.record("\(path) was created")
                } catch {
                    #expect(error.message.hasPrefix("cannot write \(path): "), "\(error)")
                    #expect(error.message.contains("Permission denied") || error.message.contains("Operation not permitted"), "\(error)")
                }
            }
        }
    }

}

/// A real full disk: a 512 KiB tmpfs (needs root and mount rights; skipped otherwise).
@Suite("Sinks: a disk that fills up", .serialized, .enabled(if: FFmpeg.isAvailable && SmallDisk.canMount, "needs ffmpeg, root and mount rights"))
struct SinkDiskFullTests {
    @Test("y4m: the frame that does not fit is a short write, thrown with the path, ENOSPC and the byte counts; the file is cut back to its last whole frame, and nothing is retried once space frees")
    func y4mShortWrite() throws {
        let disk = try SmallDisk()
        defer { disk.remove() }
        let path = disk.path + "/out.y4m"
        let sink = try Y4MSink(path: path)
        var error: SinkError?
        for picture in SinkFailureTests.video.pictures where error == nil {
            do { try SinkFailureTests.render(picture, into: sink) } catch let failure { error = failure }
        }
        let header = "YUV4MPEG2 W320 H240 F30:1 Ip A1:1 C420jpeg\n".utf8.count
        let frame = 6 + 320 * 240 * 3 / 2
        let fitting = (512 * 1024 - header) / frame  // 4
        let failure = try #require(error)
        #expect(failure.code == .sinkFailed && sink.failure == failure)
        for word in [path, "No space left on device", "a short write", "of \(frame) bytes of frame \(fitting + 1)"] {
            #expect(failure.message.contains(word), "\(failure.message)")
        }
        #expect(sink.framesWritten == fitting)
        #expect(SinkFailureTests.fileSize(path) == header + fitting * frame, "cut back to the last whole frame")
        // The cut freed a frame's worth of space: a sink that retried would now write one more.
        #expect(throws: failure) { try SinkFailureTests.render(SinkFailureTests.video.pictures[0], into: sink) }
        #expect(SinkFailureTests.fileSize(path) == header + fitting * frame && sink.framesWritten == fitting)
        sink.finish()
        #expect(try FFmpeg.probe(["-v", "error", "-count_frames", "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", path]) == "\(fitting)")
    }

    @Test("wav: the disk fills part-way; the header's sizes describe exactly the whole frames in the file, which decodes cleanly")
    func wavShortWrite() throws {
        let disk = try SmallDisk()
        defer { disk.remove() }
        let path = disk.path + "/out.wav"
        let sink = try WAVSink(path: path)
        var error: SinkError?
        // 2 s of 48 kHz stereo float is 768 KB: more than the disk holds.
        for frame in SinkFailureTests.audio where error == nil {
            do { try SinkFailureTests.render(frame, into: sink) } catch let failure { error = failure }
        }
        let failure = try #require(error)
        #expect(failure.message.contains(path) && failure.message.contains("No space left on device"), "\(failure.message)")
        sink.finish()
        #expect(sink.failure == failure)
        let size = try #require(SinkFailureTests.fileSize(path))
        #expect(size == 44 + sink.samplesWritten * 8 && sink.samplesWritten > 0)
        // The header's RIFF and data sizes say exactly that.
        let header = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)).prefix(44))
        func field(_ offset: Int) -> Int { header[offset..<offset + 4].reversed().reduce(0) { $0 << 8 | Int($1) } }
        #expect(field(4) == size - 8 && field(40) == size - 44)
        #expect(try FFmpeg.probe(["-v", "error", "-show_entries", "stream=duration_ts", "-of", "csv=p=0", path]) == "\(sink.samplesWritten)")
        #expect(try FFmpeg.decodingErrors(of: URL(fileURLWithPath: path)) == "")
    }
}
