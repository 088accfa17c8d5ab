import Playout

/// One track's frames of a real-time run, split into those the receiver answers for and those the
/// sender made late, so that an assertion holds the receiver to the first on a busy machine.
///
/// An in-process sender that the machine keeps from a CPU encodes and sends late: with two
/// `yes > /dev/null` running, the VP8 publisher sent 198 of 330 frames, 96 of them late, and the
/// subscriber counted them late — not its doing. The publisher stamps each frame's capture time
/// at the instant the frame was due, so a frame's transit (arrival − capture) less the fastest
/// frame's is how much later than the fastest the sender and the network delivered it. A frame
/// delivered later than that by more than the playout delay less one frame interval could not
/// render on time whatever the receiver did: it is the sender's. Every other frame is the
/// receiver's to render. The receiver's own due times play no part, so a receiver that moves them
/// (a timeline that drifts with the path's jitter) or decodes late still fails.
///
/// One thing of the receiver's is the machine's: a thread the kernel keeps waiting. A run beside
/// the rest of the suite on two cores saw one audio frame of 200, delivered in time, presented
/// 32 ms after its due time and so skipped as late. ``skippedInTimeAllowance`` is what an
/// assertion allows of those: 2 % of the frames recorded, at least one.
struct ReceiverShare {
    /// Skipped frames (late, or skipped by a delay decrease) that the sender delivered in time.
    var skippedInTime: [FrameRecord] = []
    /// Skipped frames the sender delivered too late to be on time.
    var skippedSentLate = 0
    /// Frames recorded (rendered or skipped).
    var recorded = 0
    /// The latest delivery, beyond the fastest frame's transit, of any frame recorded.
    var latestDelivery: Duration = .zero

    /// Splits `frames` (a subscriber's frame log) of `kind`; `interval` is the track's frame interval.
    init(_ frames: [FrameRecord], kind: MediaKind, interval: Duration) {
        let track = frames.filter { $0.kind == kind }
        recorded = track.count
        guard let reference = track.first?.arrival else { return }
        // Transit up to a constant: arrival on the local clock less capture on the sender's.
        let transits = track.map { record in
            record.captureTime.map { reference.duration(to: record.arrival) - .nanoseconds($0) }
        }
        guard let fastest = transits.compactMap({ $0 }).min() else {
            skippedInTime = track.filter(\.skipped)
            return
        }
        for (record, transit) in zip(track, transits) {
            let later = transit.map { $0 - fastest }
            if let later { latestDelivery = max(latestDelivery, later) }
            guard record.skipped else { continue }
            if let later, later > record.delay - interval {
                skippedSentLate += 1
            } else {
                skippedInTime.append(record)
            }
        }
    }

    /// How many of ``skippedInTime`` a run on a busy machine may show: 2 % of the frames
    /// recorded, at least one. More is the receiver's doing, not a late thread's.
    var skippedInTimeAllowance: Int { max(1, recorded / 50) }

    /// What `skippedInTime` says about each frame, for a failure message.
    var skippedInTimeDescription: String {
        skippedInTime.prefix(5).map { "media \($0.mediaTime), arrival → due \($0.arrival.duration(to: $0.due)), shown \($0.due.duration(to: $0.shown)) after due" }
            .joined(separator: "; ")
    }
}
