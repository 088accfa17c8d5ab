import ArgumentParser
import Playout
import PlayoutSender

/// The simulated-network options `publish` and `demo` share: what happens to the publisher's
/// packets on their way out.
struct ImpairmentOptions: ParsableArguments {
    @Option(parsing: .unconditional, help: PercentageArgument.help("Random packet loss, e.g. 2% or 0.02."))
    var loss = PercentageArgument(fraction: NetworkImpairment.Configuration().loss)

    @Option(name: .customLong("burst-loss"), parsing: .unconditional, help: BurstLossArgument.help("Bursty (Gilbert–Elliott) loss: RATE/MEAN-BURST-LENGTH, e.g. 10%/8 (10% of packets, in bursts of 8 on average)."))
    var burstLoss: BurstLossArgument?

    @Option(parsing: .unconditional, help: DurationArgument.help("Delay variation (standard deviation), e.g. 30ms; packets keep their order."))
    var jitter = DurationArgument(NetworkImpairment.Configuration().jitter)

    @Option(parsing: .unconditional, help: PercentageArgument.help("Share of packets held back so later ones overtake them, e.g. 1%."))
    var reorder = PercentageArgument(fraction: NetworkImpairment.Configuration().reorder)

    @Option(parsing: .unconditional, help: PercentageArgument.help("Share of packets sent twice, e.g. 1%."))
    var duplicate = PercentageArgument(fraction: NetworkImpairment.Configuration().duplicate)

    @Option(parsing: .unconditional, help: BitRateArgument.help("Bandwidth cap, bits/s with an optional k, M or G, e.g. 2M (default: none)."))
    var bandwidth: BitRateArgument?

    @Option(help: "Seed of the simulated network (same seed, same impairment).")
    var seed: UInt64 = NetworkImpairment.Configuration.defaultSeed

    func validate() throws {
        let maximum = NetworkImpairment.Configuration.maximumDuration
        guard jitter.duration <= maximum else {
            throw ValidationError("--jitter \(jitter.text): must be at most \(maximum.typedDescription), e.g. 30ms")
        }
        // What only the whole configuration can tell (a burst rate its mean length cannot reach).
        do {
            _ = try NetworkImpairment(configuration: configuration())
        } catch {
            let option = burstLoss.map { "--burst-loss \($0.defaultValueDescription)" } ?? "the network options"
            let reason = error.message.replacing("NetworkImpairment.Configuration.burstLoss: ", with: "")
            throw ValidationError("\(option): \(reason)")
        }
    }

    /// The publisher's network impairment.
    func configuration() -> NetworkImpairment.Configuration {
        NetworkImpairment.Configuration(
            loss: loss.fraction, burstLoss: burstLoss?.burstLoss, jitter: jitter.duration, reorder: reorder.fraction,
            duplicate: duplicate.fraction, bandwidth: bandwidth?.bitsPerSecond, seed: seed
        )
    }
}

/// The test-pattern options `publish` and `demo` share.
struct VideoOptions: ParsableArguments {
    /// The encoder's defaults.
    private static let defaults = FFmpegEncoder.VideoSettings()
    /// The frame rates the test pattern is encoded at.
    static let frameRates = 1...120
    /// The lowest video bitrate.
    static let minimumBitrate = 10_000

    @Option(help: VideoCodecArgument.help("Video codec of the test pattern."))
    var codec = VideoCodecArgument(defaults.codec)

    @Option(help: PictureSizeArgument.help("Picture size of the test pattern, WIDTHxHEIGHT, even numbers, at least 256x32."))
    var size = PictureSizeArgument(width: defaults.width, height: defaults.height)

    @Option(parsing: .unconditional, help: "Frames per second of the test pattern, 1 to 120.")
    var fps = defaults.frameRate

    @Option(parsing: .unconditional, help: BitRateArgument.help("Video bitrate, bits/s with an optional k or M, e.g. 2.5M."))
    var bitrate = BitRateArgument(bitsPerSecond: defaults.bitrate)

    func validate() throws {
        guard size.width >= 256, size.height >= 32, size.width % 2 == 0, size.height % 2 == 0 else {
            throw ValidationError("--size \(size.defaultValueDescription): write WIDTHxHEIGHT with even numbers, at least 256x32, e.g. 1280x720")
        }
        guard Self.frameRates.contains(fps) else { throw ValidationError("--fps \(fps): write a frame rate from 1 to 120, e.g. 30") }
        guard bitrate.bitsPerSecond >= Self.minimumBitrate else {
            throw ValidationError("--bitrate \(bitrate.defaultValueDescription): write 10k or more, e.g. 2.5M")
        }
    }

    /// The test pattern's encoder settings: a key frame every second.
    func settings() -> FFmpegEncoder.VideoSettings {
        .init(codec: codec.codec, width: size.width, height: size.height, frameRate: fps, bitrate: bitrate.bitsPerSecond, keyframeInterval: fps)
    }
}

/// `--no-rtx`, which `publish` and `demo` share. (`publish` also takes `--no-feedback`, for the
/// publisher; `demo`'s `--no-feedback` is the subscriber's.)
struct SenderFeedbackOptions: ParsableArguments {
    @Flag(name: .customLong("no-rtx"), help: "Answer NACKs with nothing: no nack and no RTX payload type in the SDP, so receivers repair a loss with a key-frame request (PLI/FIR).")
    var noRetransmission = false
}

extension Publisher.Options {
    /// Checks the destination port as ``Publisher`` will, in the command line's words.
    static func validatePort(of destination: SocketAddress, option: String, example: String) throws(ValidationError) {
        do {
            try Publisher.Options(destination: destination).validate()
        } catch {
            let ports = Publisher.Options.destinationPorts
            throw ValidationError(
                "\(option): video goes to PORT, audio to PORT+2, and RTCP to PORT+1 and PORT+3, so PORT must be from \(ports.lowerBound) to \(ports.upperBound), e.g. \(example)"
            )
        }
    }

    /// Checks `--fanout` as ``Publisher`` will, in the command line's words: at least 1, not
    /// with `--whep-listen`, and every viewer's ports (viewer i at PORT + i × stride, the stride
    /// 4 with audio and 2 for video alone) at most 65535 — the message names the highest port.
    static func validateFanout(_ fanout: Int, destination: SocketAddress?, servesWHEP: Bool, sendsAudio: Bool) throws(ValidationError) {
        guard fanout >= 1 else {
            throw ValidationError("--fanout \(fanout): the number of viewers' streams must be 1 or more, e.g. --fanout 100")
        }
        guard fanout == 1 || !servesWHEP else {
            throw ValidationError("--fanout with --whep-listen: the WHEP endpoint already serves each session its own stream; leave out --fanout")
        }
        guard fanout > 1, let destination else { return }
        let stride = sendsAudio ? 4 : 2
        let (product, overflow) = (fanout - 1).multipliedReportingOverflow(by: stride)
        let highest = overflow ? Int.max : Int(destination.port) + stride - 1 + product
        guard highest > Int(UInt16.max) else { return }
        let most = max(0, (Int(UInt16.max) - (Int(destination.port) + stride - 1)) / stride + 1)
        throw ValidationError(
            "--fanout \(fanout) from port \(destination.port): viewer \(fanout - 1) would need ports up to \(overflow ? "beyond \(Int.max)" : String(highest)) (viewer i at PORT + i × \(stride)), above the highest port 65535: use --fanout \(most) at most, or a lower PORT"
        )
    }
}
