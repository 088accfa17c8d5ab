import PlayoutCodec
import PlayoutCore
import PlayoutJitter
import PlayoutRTP
import PlayoutTelemetry

extension TrackQoS {
    /// A track's sample composed from each stage's typed statistics — the one place a sample is
    /// made (rates not yet measured: ``measureRates(since:window:)``): the `pipeline`'s receiver
    /// (jitter buffer, SRTP, intake, sources, retransmissions, feedback) and playout (depacketizer,
    /// scheduler), what the playout loop measured presenting its frames (`playback`: the decoder,
    /// renders, distributions), the RTCP datagrams `sent` and `unsent`, and the delay in effect.
    init(
        kind: MediaKind, codec: Codec, pipeline: TrackPipeline, playback: SubscribedTrack.Playback, rtcp: (sent: Int, unsent: Int),
        playoutDelay: EffectivePlayoutDelay
    ) {
        self.init(kind: kind, codec: codec)
        self.playoutDelay = playoutDelay
        let (receiver, playout) = (pipeline.receiver, pipeline.playout)

        // The jitter buffer (and libavformat's assembled bytes); SRTP, whose replays are duplicates.
        let network = receiver.statistics(assembledBytes: playout.assembledBytesReceived)
        let srtp = receiver.srtpStatistics
        packetsReceived = network.packetsReceived
        packetsLost = network.packetsLost
        packetsDiscarded = network.packetsDiscarded
        packetsDuplicated = network.packetsDuplicated + (srtp?.replayDrops ?? 0)
        bytesReceived = network.bytesReceived
        jitter = Duration(exactlySeconds: network.jitter) ?? .zero
        authFailures = srtp?.authFailures
        replayDrops = srtp?.replayDrops

        // What the intake turned away, and the sources on the port.
        let (refused, sources) = (receiver.intakeStatistics, receiver.sourceStatistics)
        packetsFromOtherSources = sources.packetsFromOtherSources
        packetsFromUnvalidatedSources = sources.packetsInProbation
        packetsFromSourcesNotPlayed = sources.packetsNotPlayed
        packetsOutOfSequence = sources.packetsOutOfSequence
        packetsImplausibleTimestamp = sources.packetsImplausibleTimestamp
        sourceSwitches = sources.sourceSwitches
        sourceResyncs = sources.resyncs
        playedSSRC = receiver.playedSSRC
        packetsWrongPayloadType = refused.packetsWrongPayloadType
        datagramsUndecodable = refused.datagramsUndecodable
        datagramsNotRTP = refused.datagramsNotRTP
        datagramsBadVersion = refused.datagramsBadVersion
        datagramsTruncated = refused.datagramsTruncated
        datagramsBadExtension = refused.datagramsBadExtension
        datagramsBadPadding = refused.datagramsBadPadding
        rtcpFromOtherSources = refused.controlPacketsFromOtherSources
        rtcpUndecodable = receiver.controlPacketsIgnored

        // Retransmissions, and the feedback sent (when the track talks back).
        let retransmissions = receiver.retransmissionStatistics
        retransmittedPacketsReceived = retransmissions.packetsReceived
        retransmittedBytesReceived = retransmissions.bytesReceived
        retransmittedPacketsLate = retransmissions.packetsLate
        retransmittedPacketsDuplicated = retransmissions.packetsDuplicated
        retransmittedPacketsDropped = retransmissions.packetsDropped
        if let feedback = receiver.feedbackStatistics {
            nackCount = feedback.nackCount
            pliCount = feedback.pliCount
            firCount = feedback.firCount
            rtcpPacketsSent = rtcp.sent
            rtcpPacketsUnsent = rtcp.unsent
            roundTripTime = feedback.roundTripTime
        }

        // The playout side: frames assembled, the depacketizer's discards, the scheduler.
        let frames = playout.schedulerStatistics
        restarts = playout.restarts
        framesReceived = playout.framesReceived
        framesIncomplete = playout.depacketizerStatistics.framesDiscarded
        framesDroppedWaitingForKeyframe = playout.framesDroppedWaitingForKeyframe
        framesDroppedBeforeFirstKeyframe = playout.framesDroppedBeforeFirstKeyframe
        framesSkipped = frames.framesSkipped
        totalSkippedDuration = frames.totalSkippedDuration
        framesDroppedOverflow = frames.framesDroppedOverflow
        framesDroppedOnRestart = frames.framesDroppedOnRestart
        framesLate = frames.framesLate
        totalInterFrameDelay = frames.totalInterFrameDelay
        totalSquaredInterFrameDelay = frames.totalSquaredInterFrameDelay
        freezeCount = frames.freezeCount
        totalFreezesDuration = frames.totalFreezesDuration
        pauseCount = frames.pauseCount
        totalPausesDuration = frames.totalPausesDuration
        delayPauseCount = frames.delayPauseCount
        totalDelayPausesDuration = frames.totalDelayPausesDuration
        jitterBufferDelay = frames.jitterBufferDelay
        jitterBufferEmittedCount = frames.jitterBufferEmittedCount
        jitterBufferTargetDelay = frames.jitterBufferTargetDelay
        jitterBufferMinimumDelay = frames.jitterBufferMinimumDelay
        bufferedDuration = frames.bufferedDuration
        bufferedFrames = frames.bufferedFrames + playback.framesHeldAtEnd
        bufferedBytes = frames.bufferedBytes

        // The decoder and the presentation. Rendered means presented: a frame released for
        // rendering counts once its picture reached the sink.
        decoded = playback.decoded
        framesDecoded = playback.decoder.framesDecoded
        keyFramesDecoded = playback.decoder.keyFramesDecoded
        decodeErrors = playback.decoder.decodeErrors
        totalDecodeTime = playback.decoder.totalDecodeTime
        framesRendered = playback.framesPresented
        framesRenderedLate = playback.framesPresentedLate
        frameWidth = playback.width
        frameHeight = playback.height
        // Snapshots: the track records on, in place, at its next frame.
        renderError = playback.renderError.snapshot()
        endToEndLatency = playback.latency.snapshot()
        transit = playback.transit.snapshot()

        framesDropped = framesSkipped + framesLate + framesDroppedOverflow + framesDroppedOnRestart + decodeErrors + framesIncomplete
            + framesDroppedWaitingForKeyframe
    }
}
