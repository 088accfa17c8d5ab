extension SRTPSession {
    /// What a session has done, read as one snapshot (``SRTPSession/statistics``). RTP and RTCP
    /// are counted together. QoS reports `authFailures` and `replayDrops` (DESIGN.md).
    public struct Statistics: Sendable, Hashable {
        /// Packets protected (RTP and RTCP).
        public var packetsProtected = 0
        /// Packets that authenticated, passed the replay check and were decrypted.
        public var packetsUnprotected = 0
        /// Packets whose authentication tag did not verify.
        public var authFailures = 0
        /// Packets dropped by replay protection: duplicates and packets older than the window.
        public var replayDrops = 0
        /// Packets refused for any other reason: malformed, too short, a bad length, another status.
        public var otherFailures = 0
        /// Authentication failures since the last packet that unprotected (or since the start).
        /// Other failures neither add to nor reset it; a success resets it to 0.
        public var consecutiveAuthFailures = 0
        /// Streams joined late whose rollover counter was found (see
        /// ``SRTPSession/maximumRecoveredRolloverCounter``): their packets authenticate from then on.
        public var rolloverCountersRecovered = 0

        public init() {}
    }

    /// The one clear error for a run of authentication failures: returns
    /// ``SRTPError/authenticationFailureRun(failures:packets:)`` exactly once per run, once
    /// ``Configuration/authenticationFailureReportThreshold`` authentication failures (default 50)
    /// happened with no success since the start or since the last success, and `nil` otherwise.
    /// Its description reads "SRTP authentication failed for 50 of 50 packets: check the key"
    /// (failures of all packets refused in the run, counted when the threshold was reached).
    ///
    /// A packet that unprotects ends the run: an untaken report is discarded and the next run can
    /// report again. Call it after a failed `unprotect` (it is O(1) and allocates nothing).
    public func takeAuthenticationFailureReport() -> SRTPError? {
        defer { failureRun.pendingReport = nil }
        return failureRun.pendingReport
    }

    /// A run of failures with no success in between.
    struct FailureRun {
        /// Packets refused since the last success, for any reason.
        var packetsRefused = 0
        /// Whether this run has produced its report already.
        var reported = false
        var pendingReport: SRTPError?
    }

    func recordSuccess() {
        statistics.packetsUnprotected += 1
        statistics.consecutiveAuthFailures = 0
        failureRun = FailureRun()
    }

    func recordFailure(_ error: SRTPError) {
        failureRun.packetsRefused += 1
        switch error {
        case .authenticationFailed:
            statistics.authFailures += 1
            statistics.consecutiveAuthFailures += 1
            if !failureRun.reported,
                statistics.consecutiveAuthFailures >= configuration.authenticationFailureReportThreshold
            {
                failureRun.reported = true
                failureRun.pendingReport = .authenticationFailureRun(
                    failures: statistics.consecutiveAuthFailures,
                    packets: failureRun.packetsRefused
                )
            }
        case .replay:
            statistics.replayDrops += 1
        default:
            statistics.otherFailures += 1
        }
    }
}
