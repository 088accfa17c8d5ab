import PlayoutRTP

// Adding up the fan-out's per-stream counters into the publisher-wide ones.

extension NetworkImpairment.Statistics {
    /// Adds `other`'s counters to these.
    mutating func add(_ other: Self) {
        datagramsSubmitted += other.datagramsSubmitted
        datagramsSent += other.datagramsSent
        datagramsLost += other.datagramsLost
        datagramsLostInOutage += other.datagramsLostInOutage
        datagramsDroppedByBandwidth += other.datagramsDroppedByBandwidth
        datagramsDroppedAtEnd += other.datagramsDroppedAtEnd
        datagramsDuplicated += other.datagramsDuplicated
        datagramsReordered += other.datagramsReordered
        bytesSent += other.bytesSent
    }
}

extension SenderFeedback.Statistics {
    /// Adds `other` (another viewer's feedback) to these: counts add up; of the latest reports,
    /// the worst loss, jitter and round trip are kept, and the lowest bit-rate limit (the one
    /// the encoder follows).
    mutating func add(_ other: Self) {
        receiverReportsReceived += other.receiverReportsReceived
        nacksReceived += other.nacksReceived
        packetsRequested += other.packetsRequested
        pliReceived += other.pliReceived
        firReceived += other.firReceived
        rembReceived += other.rembReceived
        tmmbrReceived += other.tmmbrReceived
        packetsIgnored += other.packetsIgnored
        bitrateRequestsClamped += other.bitrateRequestsClamped
        cumulativeLost += other.cumulativeLost
        if let lost = other.fractionLost { fractionLost = max(fractionLost ?? lost, lost) }
        jitter = max(jitter, other.jitter)
        if let rtt = other.roundTripTime { roundTripTime = max(roundTripTime ?? rtt, rtt) }
        if let limit = other.bitrateLimit { bitrateLimit = min(bitrateLimit ?? limit, limit) }
    }
}

extension RetransmissionLimiter.Statistics {
    /// Adds `other`'s counters to these.
    mutating func add(_ other: Self) {
        packetsAllowed += other.packetsAllowed
        bytesAllowed += other.bytesAllowed
        refusedTooOften += other.refusedTooOften
        refusedWithinRoundTrip += other.refusedWithinRoundTrip
        refusedOverBudget += other.refusedOverBudget
    }
}
