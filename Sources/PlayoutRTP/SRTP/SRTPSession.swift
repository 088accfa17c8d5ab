internal import CSRTP

/// One libsrtp2 session for one direction: protects outgoing or unprotects incoming RTP and RTCP
/// packets of any SSRC with one key.
///
/// Packets are transformed in place in a buffer the caller owns; the hot path allocates nothing.
///
/// ```swift
/// let keys = try SRTPKeyingMaterial(base64: key, suite: .aesCM128HMACSHA1_80)
/// let session = try SRTPSession(keyingMaterial: keys, direction: .inbound)
/// let rtpLength = try session.unprotectRTP(buffer, length: received)   // drop the packet on error
/// if let error = session.takeAuthenticationFailureReport() { report(error) }  // once per run
/// ```
///
/// Allocations: the in-place methods allocate nothing in Swift (errors are payload-free enum cases
/// thrown by typed throws). libsrtp2 itself, as Debian builds it with NSS, was measured at about 16
/// `malloc`s per protect + unprotect pair for AES-CM and 4 for GCM (NSS creates a context per call).
///
/// The session is not `Sendable`: it is owned by the one task that does packet intake (STYLE.md,
/// "confine, don't share"); read ``statistics`` there and publish the snapshot.
///
/// - Complexity: each operation is O(packet length), plus libsrtp2's per-SSRC stream lookup.
public final class SRTPSession {
    /// Which way packets flow through the session.
    public enum Direction: Sendable, Hashable {
        /// Received packets (libsrtp2 `ssrc_any_inbound`): use the `unprotect` methods.
        case inbound
        /// Packets to send (libsrtp2 `ssrc_any_outbound`): use the `protect` methods.
        case outbound
    }

    /// Tunables of a session, with documented defaults.
    public struct Configuration: Sendable, Hashable {
        /// Default replay window: 32,767 packets, the largest libsrtp2 2.5 accepts (it refuses
        /// 32,768 and above, and below 64). libsrtp2's own default is 128, which drops any packet
        /// reordered by more than 128 sequence numbers; a jitter buffer holding seconds of high-rate
        /// video reorders far deeper (DESIGN.md: 10 s at 50 Mbit/s is more than 2^15 packets).
        public static let defaultReplayWindowSize = 32_767
        /// The replay window sizes libsrtp2 2.5 accepts, as measured: 64…32767.
        public static let libsrtpReplayWindowSizes = 64...32_767
        /// Default number of consecutive authentication failures, with no success in between,
        /// after which ``SRTPSession/takeAuthenticationFailureReport()`` yields its one error.
        public static let defaultAuthenticationFailureReportThreshold = 50

        /// Packets kept in the SRTP replay window: a packet whose index is more than this many
        /// behind the highest one received is dropped as a replay (``SRTPError/Replay/tooOld``).
        /// SRTCP's window is fixed by libsrtp2 at 128.
        public var replayWindowSize: Int
        /// Consecutive authentication failures that make one ``SRTPError/authenticationFailureRun(failures:packets:)``.
        public var authenticationFailureReportThreshold: Int

        public init(
            replayWindowSize: Int = Configuration.defaultReplayWindowSize,
            authenticationFailureReportThreshold: Int = Configuration.defaultAuthenticationFailureReportThreshold
        ) {
            self.replayWindowSize = replayWindowSize
            self.authenticationFailureReportThreshold = authenticationFailureReportThreshold
        }
    }

    /// Spare bytes a buffer must have after the packet for `protect`: libsrtp2 2.5 documents that it
    /// may write `SRTP_MAX_TRAILER_LEN` (tag + MKI, 144) bytes, plus 4 for the SRTCP index.
    /// Receive buffers of 1,500 + this many bytes are always enough.
    public static let maximumTrailerLength = Int(SRTP_MAX_TAG_LEN) + Int(SRTP_MAX_MKI_LEN) + 4

    /// The suite of the keying material.
    public let suite: SRTPCryptoSuite
    public let direction: Direction
    public let configuration: Configuration

    /// The counters, read as one snapshot.
    public internal(set) var statistics = Statistics()
    var failureRun = FailureRun()

    private let context: srtp_t
    /// The master key and salt (inbound only), for a stream of one SSRC added when its rollover
    /// counter is recovered; zeroed when the session ends.
    private var key: [UInt8]
    /// Authentication failures per SSRC that never authenticated, while its rollover counter may
    /// still be recovered (at most ``maximumRecoveringSSRCs`` SSRCs).
    private var recovering: [UInt32: Int] = [:]
    /// With GCM, libsrtp2 decrypts in place before the tag fails: a packet of an SSRC that never
    /// authenticated is copied here first, so its rollover counter can be looked for.
    private var pristine: [UInt8] = []

    /// The most rollover counters tried for a stream joined late (``unprotectRTP(_:length:)``):
    /// 15 wraps of the sequence number, ≈ 1 M packets — an hour of 2.5 Mbit/s video.
    public static let maximumRecoveredRolloverCounter: UInt32 = 15
    /// SSRCs whose rollover counter is looked for at once; strangers beyond are simply refused.
    static let maximumRecoveringSSRCs = 64

    /// Creates a libsrtp2 session for any SSRC in `direction`.
    ///
    /// - Throws: ``SRTPError/unsupportedSuite(_:)`` if libsrtp2 lacks the suite,
    ///   ``SRTPError/badParameter(_:)`` for a configuration it refuses, or ``SRTPError/libsrtp(status:operation:)``.
    public init(
        keyingMaterial: SRTPKeyingMaterial,
        direction: Direction,
        configuration: Configuration = Configuration()
    ) throws(SRTPError) {
        do {
            try SRTPLibrary.initialize()
        } catch {
            throw .badParameter(error.description)
        }
        let suite = keyingMaterial.suite
        guard suite.isSupported else { throw .unsupportedSuite(suite) }
        guard configuration.replayWindowSize > 0 else {
            throw .badParameter("replayWindowSize must be \(Configuration.libsrtpReplayWindowSizes), got \(configuration.replayWindowSize)")
        }
        guard configuration.authenticationFailureReportThreshold > 0 else {
            throw .badParameter("authenticationFailureReportThreshold must be at least 1, got \(configuration.authenticationFailureReportThreshold)")
        }

        var policy = Self.policy(
            suite, ssrc: srtp_ssrc_t(type: direction == .inbound ? ssrc_any_inbound : ssrc_any_outbound, value: 0), configuration: configuration)
        var key = keyingMaterial.concatenated
        self.key = direction == .inbound ? key : []
        var created: srtp_t?
        let status = key.withUnsafeMutableBufferPointer { key in
            policy.key = key.baseAddress
            return srtp_create(&created, &policy)  // copies the key into its own state
        }
        for index in key.indices { key[index] = 0 }
        guard status == srtp_err_status_ok, let created else {
            if status == srtp_err_status_bad_param {
                throw .badParameter(
                    "libsrtp2 refused the session (srtp_err_status 2): replayWindowSize must be \(Configuration.libsrtpReplayWindowSizes), got \(configuration.replayWindowSize)"
                )
            }
            throw .from(status, operation: .create)
        }
        self.suite = suite
        self.direction = direction
        self.configuration = configuration
        self.context = created
    }

    deinit {
        srtp_dealloc(context)
        for index in key.indices { key[index] = 0 }
    }

    // MARK: In place, on a caller-owned buffer

    /// Protects the RTP packet in `buffer[0..<length]` in place and returns the SRTP packet's
    /// length (`length` + ``SRTPCryptoSuite/authenticationTagLength``).
    ///
    /// - Parameter buffer: holds the packet and at least ``maximumTrailerLength`` more bytes.
    /// - Throws: ``SRTPError/bufferTooSmall(needed:capacity:)``, ``SRTPError/packetTooShort(length:minimum:)``,
    ///   ``SRTPError/replay(_:)`` for a sequence number already protected, or another libsrtp2 status.
    public func protectRTP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        try protect(buffer, length: length, minimum: 12, operation: .protect)
    }

    /// Protects the RTCP compound packet in `buffer[0..<length]` in place (adds the E flag, the
    /// SRTCP index and the tag) and returns the SRTCP packet's length.
    ///
    /// - Parameter buffer: holds the packet and at least ``maximumTrailerLength`` more bytes.
    public func protectRTCP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        try protect(buffer, length: length, minimum: 8, operation: .protectRTCP)
    }

    /// Authenticates, replay-checks and decrypts the SRTP packet in `buffer[0..<length]` in place
    /// and returns the RTP packet's length. Every outcome is counted in ``statistics``.
    ///
    /// - Throws: ``SRTPError/authenticationFailed``, ``SRTPError/replay(_:)``,
    ///   ``SRTPError/packetTooShort(length:minimum:)``, ``SRTPError/invalidLength(length:capacity:)``,
    ///   ``SRTPError/libsrtpBadParameter(_:)`` for a malformed header, or another libsrtp2 status.
    ///   Drop the packet; none of these leaves the session unusable.
    public func unprotectRTP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        try unprotect(buffer, length: length, minimum: 12 + suite.authenticationTagLength, operation: .unprotect)
    }

    /// Authenticates, replay-checks and decrypts the SRTCP packet in `buffer[0..<length]` in place
    /// and returns the RTCP packet's length. Counted like ``unprotectRTP(_:length:)``.
    public func unprotectRTCP(_ buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        try unprotect(buffer, length: length, minimum: 8 + suite.rtcpOverhead, operation: .unprotectRTCP)
    }

    // MARK: Convenience on arrays (allocates; for tests and cold paths)

    /// Returns `packet` protected as SRTP.
    public func protectRTP(_ packet: [UInt8]) throws(SRTPError) -> [UInt8] {
        try transform(packet, spare: Self.maximumTrailerLength) { buffer, length throws(SRTPError) in
            try protectRTP(buffer, length: length)
        }
    }

    /// Returns `packet` protected as SRTCP.
    public func protectRTCP(_ packet: [UInt8]) throws(SRTPError) -> [UInt8] {
        try transform(packet, spare: Self.maximumTrailerLength) { buffer, length throws(SRTPError) in
            try protectRTCP(buffer, length: length)
        }
    }

    /// Returns the RTP packet inside the SRTP `packet`.
    public func unprotectRTP(_ packet: [UInt8]) throws(SRTPError) -> [UInt8] {
        try transform(packet, spare: 0) { buffer, length throws(SRTPError) in
            try unprotectRTP(buffer, length: length)
        }
    }

    /// Returns the RTCP packet inside the SRTCP `packet`.
    public func unprotectRTCP(_ packet: [UInt8]) throws(SRTPError) -> [UInt8] {
        try transform(packet, spare: 0) { buffer, length throws(SRTPError) in
            try unprotectRTCP(buffer, length: length)
        }
    }

    // MARK: Implementation

    @inline(__always)
    private func protect(
        _ buffer: UnsafeMutableRawBufferPointer,
        length: Int,
        minimum: Int,
        operation: SRTPError.Operation
    ) throws(SRTPError) -> Int {
        guard length >= 0, length <= buffer.count, length <= Int(Int32.max) - Self.maximumTrailerLength else {
            throw .invalidLength(length: length, capacity: buffer.count)
        }
        guard length >= minimum else { throw .packetTooShort(length: length, minimum: minimum) }
        guard buffer.count - length >= Self.maximumTrailerLength, let base = buffer.baseAddress else {
            throw .bufferTooSmall(needed: length + Self.maximumTrailerLength, capacity: buffer.count)
        }
        var octets = Int32(length)
        let status = operation == .protect
            ? srtp_protect(context, base, &octets)
            : srtp_protect_rtcp(context, base, &octets)
        guard status == srtp_err_status_ok else { throw .from(status, operation: operation) }
        statistics.packetsProtected += 1
        return Int(octets)
    }

    @inline(__always)
    private func unprotect(
        _ buffer: UnsafeMutableRawBufferPointer,
        length: Int,
        minimum: Int,
        operation: SRTPError.Operation
    ) throws(SRTPError) -> Int {
        guard length >= 0, length <= buffer.count, length <= Int(Int32.max) else {
            recordFailure(.invalidLength(length: length, capacity: buffer.count))
            throw .invalidLength(length: length, capacity: buffer.count)
        }
        guard length >= minimum, let base = buffer.baseAddress else {
            recordFailure(.packetTooShort(length: length, minimum: minimum))
            throw .packetTooShort(length: length, minimum: minimum)
        }
        var octets = Int32(length)
        // A stream that never authenticated may have joined late (see recoverRolloverCounter):
        // asked before an AEAD packet is decrypted in place, and after a failure otherwise.
        let mayJoinLate = operation == .unprotect && !key.isEmpty
        let unknownBefore = mayJoinLate && suite.isAEAD ? !authenticated(base, length: length) : nil
        let keepsPristine = unknownBefore == true
        if keepsPristine {
            pristine.removeAll(keepingCapacity: true)
            pristine.append(contentsOf: UnsafeRawBufferPointer(start: base, count: length))
        }
        var status = operation == .unprotect
            ? srtp_unprotect(context, base, &octets)
            : srtp_unprotect_rtcp(context, base, &octets)
        if keepsPristine, status != srtp_err_status_ok {
            pristine.withUnsafeBytes { base.copyMemory(from: $0.baseAddress!, byteCount: length) }
        }
        if status == srtp_err_status_auth_fail, mayJoinLate, unknownBefore ?? !authenticated(base, length: length),
            let recovered = recoverRolloverCounter(base, length: Int32(length)) {
            octets = recovered
            status = srtp_err_status_ok
        }
        guard status == srtp_err_status_ok else {
            let error = SRTPError.from(status, operation: operation)
            recordFailure(error)
            throw error
        }
        recordSuccess()
        return Int(octets)
    }

    /// A stream joined late: its sender's sequence number wrapped before the first packet came,
    /// so the rollover counter (ROC) is not the 0 a new stream starts from, and every packet fails
    /// authentication (RFC 3711 §3.3.1 wants the ROC signalled; SDES cannot). Such is a viewer
    /// that joins a fanned-out stream or a multicast group minutes in. For an SSRC that never
    /// authenticated, tries ROC 1…``maximumRecoveredRolloverCounter`` on a copy of the packet; the
    /// first that authenticates is kept (a stream of that SSRC is added at that ROC) and the
    /// packet decrypted in place. Tried at that SSRC's 1st, 2nd, 4th… 512th failure only, so a
    /// wrong key or a stranger costs a bounded number of tries. Returns the RTP length, or nil.
    /// The caller checked that the SSRC never authenticated.
    private func recoverRolloverCounter(_ base: UnsafeMutableRawPointer, length: Int32) -> Int32? {
        guard length >= 12 else { return nil }
        let ssrc = Self.ssrc(base)
        guard recovering[ssrc] != nil || recovering.count < Self.maximumRecoveringSSRCs else { return nil }
        let failures = recovering[ssrc, default: 0] + 1
        recovering[ssrc] = failures
        guard failures <= 512, failures & (failures - 1) == 0 else { return nil }
        var policy = Self.policy(suite, ssrc: srtp_ssrc_t(type: ssrc_specific, value: ssrc), configuration: configuration)
        let added = key.withUnsafeMutableBufferPointer { key in
            policy.key = key.baseAddress
            return srtp_add_stream(context, &policy)
        }
        guard added == srtp_err_status_ok else { return nil }
        var copy = [UInt8](repeating: 0, count: Int(length))
        for candidate in 1...Self.maximumRecoveredRolloverCounter {
            var octets = length
            let status = copy.withUnsafeMutableBytes { copy -> srtp_err_status_t in
                copy.copyMemory(from: UnsafeRawBufferPointer(start: base, count: Int(length)))
                _ = srtp_set_stream_roc(context, ssrc, candidate)
                return srtp_unprotect(context, copy.baseAddress, &octets)
            }
            if status == srtp_err_status_ok {
                copy.withUnsafeBytes { base.copyMemory(from: $0.baseAddress!, byteCount: Int(octets)) }
                recovering[ssrc] = nil
                statistics.rolloverCountersRecovered += 1
                return octets
            }
        }
        _ = srtp_remove_stream(context, ssrc.bigEndian)  // back to the template: ROC 0 for its next packet
        return nil
    }

    /// A libsrtp2 policy for `ssrc` (any inbound, any outbound, or one): `suite`'s ciphers, the
    /// configured replay window, no repeated sends. The caller points it at the key for the call
    /// that copies it.
    private static func policy(_ suite: SRTPCryptoSuite, ssrc: srtp_ssrc_t, configuration: Configuration) -> srtp_policy_t {
        var policy = srtp_policy_t()
        suite.configure(&policy)
        policy.ssrc = ssrc
        policy.window_size = UInt(configuration.replayWindowSize)
        policy.allow_repeat_tx = 0
        return policy
    }

    /// The SSRC of the RTP packet at `base` (12 bytes or more).
    private static func ssrc(_ base: UnsafeMutableRawPointer) -> UInt32 {
        let bytes = base.assumingMemoryBound(to: UInt8.self)
        return UInt32(bytes[8]) << 24 | UInt32(bytes[9]) << 16 | UInt32(bytes[10]) << 8 | UInt32(bytes[11])
    }

    /// Whether a packet of the SSRC of the RTP packet at `base` authenticated before: libsrtp2
    /// keeps a stream of it from then on, and follows its wraps.
    private func authenticated(_ base: UnsafeMutableRawPointer, length: Int) -> Bool {
        guard length >= 12 else { return true }
        var roc: UInt32 = 0
        return srtp_get_stream_roc(context, Self.ssrc(base), &roc) == srtp_err_status_ok
    }

    private func transform(
        _ packet: [UInt8],
        spare: Int,
        _ body: (UnsafeMutableRawBufferPointer, Int) throws(SRTPError) -> Int
    ) throws(SRTPError) -> [UInt8] {
        var bytes = packet
        bytes.append(contentsOf: repeatElement(0, count: spare))
        let result = bytes.withUnsafeMutableBytes { buffer in
            Result { () throws(SRTPError) -> Int in try body(buffer, packet.count) }
        }
        let length = try result.get()
        bytes.removeLast(bytes.count - length)
        return bytes
    }
}

/// A session is confined to the task that owns it; see ``SRTPSession``.
@available(*, unavailable)
extension SRTPSession: Sendable {}
