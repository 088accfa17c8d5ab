import ArgumentParser
import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import Playout
import PlayoutSender

/// `playout publish <media|testsrc> --to HOST:PORT` (or `--whep-listen HOST:PORT`): the built-in
/// test sender.
struct PublishCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publish",
        abstract: "Send the test pattern (or a file's H.264/VP8/Opus streams) as RTP or SRTP in real time, through a simulated network.",
        discussion: """
            Video goes to PORT, audio to PORT+2, RTCP sender reports to the odd ports above them. Write the SDP a \
            subscriber needs with --sdp. With --whep-listen instead of --to, it serves WHEP subscribers (ICE-lite, \
            DTLS-SRTP, one UDP socket for all sessions): the URL to POST offers to is printed at once (a \
            {"type":"whep","url":…} line with --json), and every session gets the same frames in its own SRTP \
            stream through its own simulated network. With --fanout N, one encode is sent as N viewers' streams, \
            the way an SFU serves an audience: viewer i at each port + i × 4 (× 2 without audio), its own SSRC, \
            SRTP keys, simulated network, reports and feedback; --sdp writes viewer 0's SDP (viewer i's is \
            SessionDescription.fannedOut(viewer: i), Docs/Fanout.md). At the end, what was sent and what the \
            simulated network did is printed (as one JSON object with --json).
            """
    )

    @Argument(help: "testsrc (a moving pattern with frame number and capture time, and a tone) or a media file.")
    var source: String

    @Option(help: DestinationArgument.help("Destination, HOST:PORT: video on PORT, audio on PORT+2, RTCP on PORT+1 and PORT+3."))
    var to: DestinationArgument?

    @Option(name: .customLong("whep-listen"), help: DestinationArgument.help("Serve WHEP (ICE-lite) on HOST:PORT instead of sending to --to, e.g. 127.0.0.1:8889 (port 0: a free one, printed)."))
    var whepListen: DestinationArgument?

    @Option(name: .customLong("srtp-key"), help: SRTPKeyArgument.help("Send SRTP (AES_CM_128_HMAC_SHA1_80) with this base64 master key and salt (30 bytes)."))
    var srtpKey: SRTPKeyArgument?

    @Flag(help: "Send SRTP with a random key (written into the SDP).")
    var srtp = false

    @Option(help: SDPPathArgument.help("Write the SDP for receivers to this path (with --fanout: viewer 0's)."))
    var sdp: SDPPathArgument?

    @Option(help: RunLength.help("How long to send, e.g. 20s (a file is sent to its end at most)."))
    var duration = RunLength.untilStopped

    @Option(parsing: .unconditional, help: "Send one encode as N viewers' streams (viewer i at each port + i × 4, or × 2 without audio), each with its own SSRC, SRTP keys, simulated network, reports and feedback.")
    var fanout = 1

    @Flag(name: .customLong("no-audio"), help: "Send the test pattern without the tone.")
    var noAudio = false

    @OptionGroup var video: VideoOptions
    @OptionGroup var network: ImpairmentOptions

    @Flag(name: .customLong("no-feedback"), help: "Announce and answer no RTCP feedback, as ffmpeg: no a=rtcp-fb, no RTX; receivers send reports only.")
    var noFeedback = false

    @OptionGroup var feedback: SenderFeedbackOptions

    @Flag(help: "Print the final statistics as one JSON object on stdout.")
    var json = false

    func validate() throws {
        switch (to, whepListen) {
        case (let to?, nil):
            try Publisher.Options.validatePort(of: to.address, option: "--to \(to.defaultValueDescription)", example: "127.0.0.1:5004")
        case (nil, let listen?):
            if srtp || srtpKey != nil { throw ValidationError("--whep-listen: WHEP sessions key SRTP with DTLS; leave out --srtp and --srtp-key") }
            if sdp != nil { throw ValidationError("--whep-listen: subscribers get their SDP from the endpoint (POST an offer); leave out --sdp") }
            if ["0.0.0.0", "::"].contains(listen.address.host) {
                throw ValidationError("--whep-listen \(listen.defaultValueDescription): name the address to serve on (it is the answers' host candidate), e.g. 127.0.0.1:8889")
            }
        case (nil, nil):
            throw ValidationError("name where to send: --to HOST:PORT (RTP/SRTP), or --whep-listen HOST:PORT to serve WHEP, e.g. --to 127.0.0.1:5004")
        case (_?, _?):
            throw ValidationError("--to and --whep-listen: choose one (--whep-listen serves subscribers instead of sending to one)")
        }
        try Publisher.Options.validateFanout(fanout, destination: to?.address, servesWHEP: whepListen != nil, sendsAudio: !noAudio || source != "testsrc")
        if let limit = duration.duration, limit <= .zero {
            throw ValidationError("--duration \(duration.limit?.text ?? ""): must be more than 0s, e.g. 20s")
        }
    }

    func run() throws {
        do {
            let publisher = try Publisher(options: options())
            if let sdp = sdp?.path {
                guard writeFile(sdp, publisher.sessionDescription.serialized()) else {
                    throw PlayoutError(.invalidOption, "cannot write the SDP to \(sdp): \(String(cString: strerror(errno)))")
                }
            }
            if let endpoint = publisher.whepEndpoint {
                // At once, so a script (or a test) can start its subscribers.
                writeError("serving WHEP at \(endpoint.url) (media on udp \(endpoint.mediaAddress))\n")
                if json { writeOut("{\"type\":\"whep\",\"url\":\"\(endpoint.url)\",\"port\":\(endpoint.port),\"mediaPort\":\(endpoint.mediaAddress.port)}\n") }
            }
            let interrupt = onInterrupt { publisher.stop() }
            try publisher.start()
            let statistics = try publisher.waitUntilEnded()
            interrupt.cancel()
            writeOut(json ? statistics.json + "\n" : statistics.table + "\n")
        } catch {
            throw PlayoutCommand.failure(error)
        }
    }

    /// The publisher's options: `--srtp-key`, else a random key with `--srtp`, else plain RTP.
    func options() -> Publisher.Options {
        Publisher.Options(
            source: source == "testsrc" ? .testPattern : .file(path: source),
            destination: to?.address ?? whepListen?.address ?? Self.unusedDestination,
            video: video.settings(), sendsAudio: !noAudio,
            keyingMaterial: srtpKey?.keyingMaterial ?? (srtp ? .random(for: .aesCM128HMACSHA1_80) : nil),
            impairment: network.configuration(), duration: duration.duration,
            feedback: !noFeedback, retransmission: !feedback.noRetransmission,
            whep: whepListen.map { WHEPEndpoint.Configuration(listen: $0.address) }, fanout: fanout
        )
    }

    /// The destination of a publisher that serves WHEP (not sent to).
    private static let unusedDestination = try! SocketAddress(host: "127.0.0.1", port: 9)
}

extension Publisher.Statistics {
    /// One JSON object: per track frames and packets sent and the feedback answered, and what
    /// the network did.
    var json: String {
        var fields = ["\"type\":\"publisher\""]
        for (kind, track) in tracks.sorted(by: { $0.key.rawValue > $1.key.rawValue }) {
            let feedback = track.feedback
            var answered = [
                "\"receiverReportsReceived\":\(feedback.receiverReportsReceived)", "\"nacksReceived\":\(feedback.nacksReceived)",
                "\"retransmittedPacketsSent\":\(track.retransmittedPacketsSent)", "\"pliReceived\":\(feedback.pliReceived)",
                "\"firReceived\":\(feedback.firReceived)", "\"keyFramesForced\":\(track.keyFramesForced)",
            ]
            if let rtt = feedback.roundTripTime { answered.append("\"roundTripTime\":\(rtt.seconds)") }
            if let lost = feedback.fractionLost { answered.append("\"fractionLost\":\(lost)") }
            let limits = track.retransmissionLimits
            answered += [
                "\"retransmittedBytesSent\":\(track.retransmittedBytesSent)",
                "\"retransmissionsRefused\":{\"overBudget\":\(limits.refusedOverBudget),\"tooOften\":\(limits.refusedTooOften),\"withinRoundTrip\":\(limits.refusedWithinRoundTrip)}",
                "\"rembReceived\":\(feedback.rembReceived)", "\"tmmbrReceived\":\(feedback.tmmbrReceived)",
                "\"bitrateLimit\":\(feedback.bitrateLimit.map(String.init) ?? "null")", "\"bitrateRequestsClamped\":\(feedback.bitrateRequestsClamped)",
                "\"rtcpIgnored\":\(feedback.packetsIgnored)",
            ]
            let target = track.targetBitrate.map { ",\"targetBitrate\":\($0)" } ?? ""
            fields.append(
                "\"\(kind.rawValue)\":{\"codec\":\"\(track.codec.rawValue)\",\"framesSent\":\(track.framesSent),\"packetsSent\":\(track.packetsSent),\"payloadBytesSent\":\(track.payloadBytesSent)\(target),\"feedback\":{\(answered.joined(separator: ","))}}"
            )
        }
        fields.append(
            "\"network\":{\"datagramsSubmitted\":\(network.datagramsSubmitted),\"datagramsSent\":\(network.datagramsSent),\"datagramsLost\":\(network.datagramsLost),\"datagramsDroppedByBandwidth\":\(network.datagramsDroppedByBandwidth),\"datagramsDuplicated\":\(network.datagramsDuplicated),\"datagramsReordered\":\(network.datagramsReordered)}"
        )
        fields.append("\"senderReportsSent\":\(senderReportsSent)")
        if let whep { fields.append("\"whep\":\(whep.json)") }
        if let fanout { fields.append("\"fanout\":\(fanout.json)") }
        fields.append("\"rtcp\":{\"accepted\":\(rtcpAccepted),\"refused\":\(rtcpRefused),\"undecodable\":\(rtcpUndecodable),\"ignored\":\(rtcpIgnored)}")
        return "{" + fields.joined(separator: ",") + "}"
    }

    /// RTCP messages about streams this publisher does not send, or that it does not act on.
    var rtcpIgnored: Int { tracks.values.reduce(0) { $0 + $1.feedback.packetsIgnored } }

    /// The feedback line: the RTCP taken, refused (another address), undecodable and ignored,
    /// the retransmissions the bounds refused, and the video bit rate in effect.
    var feedbackLine: String {
        var line = "feedback: \(rtcpAccepted) RTCP taken, \(rtcpRefused) refused (not from the destination), \(rtcpUndecodable) undecodable, \(rtcpIgnored) ignored"
        let refused = tracks.values.reduce(0) { $0 + $1.retransmissionLimits.packetsRefused }
        if refused > 0 { line += ", \(refused) retransmissions refused (budget, resends, RTT)" }
        if let video = tracks[.video], let target = video.targetBitrate {
            line += ", video target \(target) bit/s"
            if let limit = video.feedback.bitrateLimit { line += " (receiver's limit \(limit) bit/s)" }
            if video.feedback.bitrateRequestsClamped > 0 { line += ", \(video.feedback.bitrateRequestsClamped) requests below the floor raised" }
        }
        return line
    }

    /// A short human summary.
    var table: String {
        var lines = tracks.sorted { $0.key.rawValue > $1.key.rawValue }.map { kind, track in
            var line = "\(kind.rawValue) \(track.codec.rawValue): \(track.framesSent) frames, \(track.packetsSent) packets"
            let feedback = track.feedback
            if feedback.receiverReportsReceived > 0 || feedback.nacksReceived > 0 || feedback.pliReceived + feedback.firReceived > 0 {
                line += ", \(feedback.nacksReceived) NACKs → \(track.retransmittedPacketsSent) RTX, \(feedback.pliReceived) PLI + \(feedback.firReceived) FIR → \(track.keyFramesForced) key frames"
                if let rtt = feedback.roundTripTime { line += ", RTT \(fixed(rtt.seconds * 1_000, 1)) ms" }
                if let lost = feedback.fractionLost { line += ", reported loss \(fixed(lost * 100, 1)) %" }
            }
            return line
        }
        if let whep {
            // Each session has its own link and feedback: they are in the WHEP lines.
            return (lines + whep.lines).joined(separator: "\n")
        }
        lines.append(feedbackLine)
        if let fanout { lines.append(fanout.line) }
        lines.append("network: \(network.datagramsSent) sent, \(network.datagramsLost) lost, \(network.datagramsDroppedByBandwidth) over the bandwidth cap, \(network.datagramsDuplicated) duplicated, \(network.datagramsReordered) reordered")
        return lines.joined(separator: "\n")
    }
}

extension WHEPEndpoint.Statistics {
    /// One JSON object: the requests, the sessions opened and ended (by reason), and per session
    /// what it sent and what its subscriber asked.
    var json: String {
        let ended = WHEPSessionEnd.allCases.map { "\"\($0.rawValue)\":\(sessionsEnded[$0] ?? 0)" }.joined(separator: ",")
        let rejected = self.rejected.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",")
        let perSession = sessions.map { session -> String in
            var fields = ["\"id\":\"\(session.id)\"", "\"end\":\(session.end.map { "\"\($0.rawValue)\"" } ?? "null")"]
            fields.append("\"connectTime\":\(session.connectTime.map { String($0.seconds) } ?? "null")")
            for (kind, track) in session.tracks.sorted(by: { $0.key.rawValue > $1.key.rawValue }) {
                fields.append(
                    "\"\(kind.rawValue)\":{\"codec\":\"\(track.codec)\",\"packetsSent\":\(track.packetsSent),\"payloadBytesSent\":\(track.payloadBytesSent),\"nacksReceived\":\(track.feedback.nacksReceived),\"retransmittedPacketsSent\":\(track.retransmittedPacketsSent),\"pliReceived\":\(track.feedback.pliReceived),\"firReceived\":\(track.feedback.firReceived),\"rembReceived\":\(track.feedback.rembReceived),\"receiverReportsReceived\":\(track.feedback.receiverReportsReceived)}"
                )
            }
            fields.append("\"network\":{\"datagramsSent\":\(session.network.datagramsSent),\"datagramsLost\":\(session.network.datagramsLost)}")
            fields.append("\"ice\":{\"checksAnswered\":\(session.checksAnswered),\"checksDropped\":\(session.checksDropped)}")
            return "{" + fields.joined(separator: ",") + "}"
        }
        return "{\"requests\":\(requests),\"sessionsOpened\":\(sessionsOpened),\"sessionsEnded\":{\(ended)},\"rejected\":{\(rejected)},"
            + "\"connectionsTimedOut\":\(connectionsTimedOut),\"connectionsEvicted\":\(connectionsEvicted),"
            + "\"datagramsWithoutSession\":\(datagramsWithoutSession),\"datagramsDropped\":\(datagramsDropped),"
            + "\"sessions\":[\(perSession.joined(separator: ","))]}"
    }

    /// The WHEP lines of the human summary.
    var lines: [String] {
        let ended = sessionsEnded.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.value) \($0.key.rawValue)" }.joined(separator: ", ")
        var lines = ["whep: \(sessionsOpened) sessions opened, ended: \(ended.isEmpty ? "none" : ended); \(requestsRejected) requests refused"]
        for session in sessions.prefix(20) {
            let tracks = session.tracks.sorted { $0.key.rawValue > $1.key.rawValue }.map { kind, track in
                "\(kind.rawValue) \(track.packetsSent) packets, \(track.feedback.nacksReceived) NACKs → \(track.retransmittedPacketsSent) RTX"
            }
            let link = "link \(session.network.datagramsSent) sent, \(session.network.datagramsLost) lost"
            lines.append("  session \(session.id) (\(session.end?.rawValue ?? "live")): \(tracks.joined(separator: "; ")); \(link)")
        }
        if sessions.count > 20 { lines.append("  … \(sessions.count - 20) more sessions (all of them with --json)") }
        return lines
    }
}

extension FanoutStatistics {
    /// One JSON object: the streams, their port stride, the per-stream counts summarised
    /// (fewest and most), the RTCP refused from no viewer's address, and the batched send path.
    var json: String {
        func range(_ values: ClosedRange<Int>?) -> String {
            values.map { "{\"min\":\($0.lowerBound),\"max\":\($0.upperBound)}" } ?? "null"
        }
        return "{\"streams\":\(streams),\"stride\":\(stride),\"packetsSentPerStream\":\(range(packetsSentPerStream)),"
            + "\"feedbackRefusedPerStream\":\(range(feedbackRefusedPerStream)),\"retransmittedPacketsPerStream\":\(range(retransmittedPacketsPerStream)),"
            + "\"rtcpRefused\":\(rtcpRefused),\"datagramsSent\":\(batch.datagramsSent),\"systemCalls\":\(batch.systemCalls),\"segmentedMessages\":\(batch.segmentedMessages),\"datagramsFailed\":\(batch.datagramsFailed)}"
    }

    /// The fan-out line of the human summary.
    var line: String {
        func range(_ values: ClosedRange<Int>?) -> String {
            values.map { $0.lowerBound == $0.upperBound ? "\($0.lowerBound)" : "\($0.lowerBound)–\($0.upperBound)" } ?? "-"
        }
        return "fanout: \(streams) streams (ports every \(stride)): \(range(packetsSentPerStream)) packets, \(range(retransmittedPacketsPerStream)) RTX and "
            + "\(range(feedbackRefusedPerStream)) RTCP refused per stream; \(rtcpRefused) RTCP from no viewer refused; "
            + "\(batch.datagramsSent) datagrams in \(batch.systemCalls) sendmmsg calls, \(batch.datagramsFailed) failed"
    }
}
