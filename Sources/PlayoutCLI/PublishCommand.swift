import ArgumentParser
import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import Playout



/// The impairment options `publish` and `demo` share.
struct ImpairmentOptions: ParsableArguments {
    @Option(help: "Random packet loss, e.g. 2% or 0.02.")
    var loss = "0%"

    @Option(name: .customLong("burst-loss"), help: "Bursty (Gilbert–Elliott) loss: RATE/MEAN-BURST-LENGTH, e.g. 10%/8 (10% of packets, in bursts of 8 on average).")
    var burstLoss: String?

    @Option(help: "Delay variation (standard deviation), e.g. 30ms; packets keep their order.")
    var jitter = DurationArgument(.zero)

    @Option(help: "Share of packets held back so later ones overtake them, e.g. 1%.")
    var reorder = "0%"

    @Option(help: "Share of packets sent twice, e.g. 1%.")
    var duplicate = "0%"

    @Option(help: "Bandwidth cap, bits/s with an optional k/M suffix, e.g. 2M.")
    var bandwidth: String?

    @Option(help: "Seed of the simulated network (same seed, same impairment).")
    var seed: UInt64 = 1

    func configuration() throws -> NetworkImpairment.Configuration {
        var configuration = NetworkImpairment.Configuration()
        configuration.loss = try NetworkImpairment.parsePercentage(loss)
        configuration.reorder = try NetworkImpairment.parsePercentage(reorder)
        configuration.duplicate = try NetworkImpairment.parsePercentage(duplicate)
        configuration.jitter = jitter.duration
        configuration.seed = seed
        if let burstLoss {
            let parts = burstLoss.split(separator: "/")
            guard parts.count == 2, let length = Double(parts[1]) else {
                throw ValidationError("--burst-loss \(burstLoss): write RATE/MEAN-BURST-LENGTH, e.g. 10%/8")
            }
            configuration.burstLoss = .init(rate: try NetworkImpairment.parsePercentage(String(parts[0])), meanBurstLength: length)
        }
        if let bandwidth {
            let multipliers: [Character: Double] = ["k": 1e3, "K": 1e3, "M": 1e6, "m": 1e6, "G": 1e9]
            var text = Substring(bandwidth)
            var multiplier = 1.0
            if let last = text.last, let factor = multipliers[last] {
                multiplier = factor
                text.removeLast()
            }
            guard let value = Double(text), value.isFinite, value * multiplier >= 1, value * multiplier <= 1e12 else {
                throw ValidationError("--bandwidth \(bandwidth): write bits per second (1 to 1T), e.g. 2M or 800k")
            }
            configuration.bandwidth = Int(value * multiplier)
        }
        _ = try NetworkImpairment(configuration: configuration)  // validates, with the fix in the message
        return configuration
    }
}

/// The test-pattern options `publish` and `demo` share.
struct VideoOptions: ParsableArguments {
    @Option(help: "Video codec of the test pattern: h264 or vp8.")
    var codec = "h264"

    @Option(help: "Picture size of the test pattern, WIDTHxHEIGHT.")
    var size = "1280x720"

    @Option(help: "Frames per second of the test pattern.")
    var fps = 30

    @Option(help: "Video bitrate, bits/s.")
    var bitrate = 2_500_000

    func settings() throws -> FFmpegEncoder.VideoSettings {
        guard let codec = Codec(rawValue: codec.uppercased()), codec == .h264 || codec == .vp8 else {
            throw ValidationError("--codec \(codec): the test pattern is encoded as h264 or vp8")
        }
        let parts = size.split(separator: "x").compactMap { Int($0) }
        guard parts.count == 2, parts[0] >= 256, parts[1] >= 32, parts[0] % 2 == 0, parts[1] % 2 == 0 else {
            throw ValidationError("--size \(size): write WIDTHxHEIGHT with even numbers, at least 256x32, e.g. 1280x720")
        }
        guard (1...120).contains(fps) else { throw ValidationError("--fps \(fps): between 1 and 120") }
        guard bitrate >= 10_000 else { throw ValidationError("--bitrate \(bitrate): at least 10000 bits/s") }
        return .init(codec: codec, width: parts[0], height: parts[1], frameRate: fps, bitrate: bitrate, keyframeInterval: fps)
    }
}

/// `playout publish <media|testsrc> --to HOST:PORT`: the built-in test sender.
struct PublishCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publish",
        abstract: "Send the test pattern (or a file's H.264/VP8/Opus streams) as RTP or SRTP in real time, through a simulated network.",
        discussion: """
            Video goes to PORT, audio to PORT+2, RTCP sender reports to the odd ports above them. Write the SDP a
            subscriber needs with --sdp. At the end, what was sent and what the simulated network did is printed
            (as one JSON object with --json).
            """
    )

    @Argument(help: "testsrc (a moving pattern with frame number and capture time, and a tone) or a media file.")
    var source: String

    @Option(help: "Destination, HOST:PORT (video on PORT, audio on PORT+2).")
    var to: String

    @Option(name: .customLong("srtp-key"), help: "Send SRTP (AES_CM_128_HMAC_SHA1_80) with this base64 master key and salt.")
    var srtpKey: String?

    @Flag(help: "Send SRTP with a random key (written into the SDP).")
    var srtp = false

    @Option(help: "Write the SDP for receivers to this path.")
    var sdp: String?

    @Option(help: "How long to send, e.g. 20s (default: until Ctrl-C, or the file's end).")
    var duration: DurationArgument?

    @Flag(name: .customLong("no-audio"), help: "Send the test pattern without the tone.")
    var noAudio = false

    @OptionGroup var video: VideoOptions
    @OptionGroup var network: ImpairmentOptions

    @Flag(help: "Print the final statistics as one JSON object on stdout.")
    var json = false

    func run() throws {
        _ = PlayoutCommand.logCollector
        do {
            let publisher = try Publisher(options: try options())
            if let sdp {
                guard writeFile(sdp, publisher.sessionDescription.serialized()) else {
                    throw PlayoutError(.invalidOption, "cannot write the SDP to \(sdp): \(String(cString: strerror(errno)))")
                }
            }
            let interrupt = onInterrupt { publisher.stop() }
            try publisher.start()
            let statistics = try publisher.waitUntilEnded()
            interrupt.cancel()
            writeOut(json ? statistics.json + "\n" : statistics.table + "\n")
        } catch let error as ValidationError {
            throw error
        } catch {
            throw PlayoutCommand.failure(error)
        }
    }

    func options() throws -> Publisher.Options {
        let destination: SocketAddress
        do {
            destination = try SocketAddress(parsing: to)
        } catch {
            throw ValidationError("--to \(to): \(error.message); write HOST:PORT, e.g. 127.0.0.1:5004")
        }
        var options = Publisher.Options(
            source: source == "testsrc" ? .testPattern : .file(path: source), destination: destination,
            video: try video.settings(), sendsAudio: !noAudio, impairment: try network.configuration(), duration: duration?.duration
        )
        if let srtpKey {
            do {
                options.keyingMaterial = try SRTPKeyingMaterial(base64: srtpKey, suite: .aesCM128HMACSHA1_80)
            } catch {
                throw ValidationError("--srtp-key: \(error); give 30 bytes of key and salt in base64, e.g. from head -c 30 /dev/urandom | base64")
            }
        } else if srtp {
            options.keyingMaterial = .random(for: .aesCM128HMACSHA1_80)
        }
        return options
    }
}

extension Publisher.Statistics {
    /// One JSON object: per track frames and packets sent, and what the network did.
    var json: String {
        var fields = ["\"type\":\"publisher\""]
        for (kind, track) in tracks.sorted(by: { $0.key.rawValue > $1.key.rawValue }) {
            fields.append("\"\(kind.rawValue)\":{\"codec\":\"\(track.codec.rawValue)\",\"framesSent\":\(track.framesSent),\"packetsSent\":\(track.packetsSent),\"payloadBytesSent\":\(track.payloadBytesSent)}")
        }
        fields.append(
            "\"network\":{\"datagramsSubmitted\":\(network.datagramsSubmitted),\"datagramsSent\":\(network.datagramsSent),\"datagramsLost\":\(network.datagramsLost),\"datagramsDroppedByBandwidth\":\(network.datagramsDroppedByBandwidth),\"datagramsDuplicated\":\(network.datagramsDuplicated),\"datagramsReordered\":\(network.datagramsReordered)}"
        )
        fields.append("\"senderReportsSent\":\(senderReportsSent)")
        return "{" + fields.joined(separator: ",") + "}"
    }

    /// A short human summary.
    var table: String {
        var lines = tracks.sorted { $0.key.rawValue > $1.key.rawValue }.map { kind, track in
            "\(kind.rawValue) \(track.codec.rawValue): \(track.framesSent) frames, \(track.packetsSent) packets"
        }
        lines.append("network: \(network.datagramsSent) sent, \(network.datagramsLost) lost, \(network.datagramsDroppedByBandwidth) over the bandwidth cap, \(network.datagramsDuplicated) duplicated, \(network.datagramsReordered) reordered")
        return lines.joined(separator: "\n")
    }
}
