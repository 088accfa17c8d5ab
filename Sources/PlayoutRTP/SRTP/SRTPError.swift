internal import CSRTP
public import PlayoutCore

/// Why an SRTP operation failed. libsrtp2's `srtp_err_status_t` codes become these cases here and
/// nowhere else.
///
/// Per packet, ``authenticationFailed`` and ``replay(_:)`` are the normal ways a receiver drops a
/// packet; they are counted in ``SRTPSession/Statistics`` and carry no payload, so throwing them
/// allocates nothing. ``authenticationFailureRun(failures:packets:)`` is the one error a user should
/// see when the key is wrong (see ``SRTPSession/takeAuthenticationFailureReport()``).
public enum SRTPError: Error, Equatable, Sendable, CustomStringConvertible {
    /// How a replayed packet was recognized.
    public enum Replay: Equatable, Sendable {
        /// The packet index was already received (`srtp_err_status_replay_fail`).
        case duplicate
        /// The packet index is older than the replay window (`srtp_err_status_replay_old`).
        case tooOld
    }

    /// The authentication tag did not verify (`srtp_err_status_auth_fail`): wrong key, or a
    /// corrupted or forged packet.
    case authenticationFailed
    /// Replay protection dropped the packet.
    case replay(Replay)
    /// `failures` authentication failures among `packets` packets since the last success (or since
    /// the start): the key is almost certainly wrong.
    case authenticationFailureRun(failures: Int, packets: Int)
    /// The packet is shorter than the smallest packet this suite can produce.
    case packetTooShort(length: Int, minimum: Int)
    /// `length` does not fit the buffer it claims to describe (negative, or more than `capacity`).
    case invalidLength(length: Int, capacity: Int)
    /// Protecting needs `needed` bytes of buffer (packet + libsrtp's maximum trailer) but the buffer
    /// holds `capacity`.
    case bufferTooSmall(needed: Int, capacity: Int)
    /// A parameter libsrtp2 or this wrapper refused, with what to do about it.
    case badParameter(String)
    /// The keying material does not have the length `suite` needs.
    case invalidKeyLength(suite: SRTPCryptoSuite, actual: Int)
    /// The keying material is not valid base64.
    case invalidKeyEncoding(Base64.DecodingError)
    /// No suite has this name.
    case unknownSuite(String)
    /// The linked libsrtp2 cannot create a session with this suite.
    case unsupportedSuite(SRTPCryptoSuite)
    /// libsrtp2 refused a parameter (`srtp_err_status_bad_param`): a malformed packet, or a policy
    /// it does not accept.
    case libsrtpBadParameter(Operation)
    /// Any other libsrtp2 status (`srtp_err_status_t`), with the call that returned it.
    case libsrtp(status: Int32, operation: Operation)

    /// The libsrtp2 call that failed.
    public enum Operation: String, Sendable {
        case create = "srtp_create"
        case protect = "srtp_protect"
        case unprotect = "srtp_unprotect"
        case protectRTCP = "srtp_protect_rtcp"
        case unprotectRTCP = "srtp_unprotect_rtcp"
    }

    /// Whether this is a bad-parameter error (from libsrtp2's `srtp_err_status_bad_param` or the
    /// checks this wrapper makes before calling it).
    public var isBadParameter: Bool {
        switch self {
        case .badParameter, .libsrtpBadParameter, .packetTooShort, .invalidLength, .bufferTooSmall: true
        default: false
        }
    }

    public var description: String {
        switch self {
        case .authenticationFailed:
            return "SRTP authentication failed (srtp_err_status 7): the packet was forged, corrupted, or protected with another key"
        case .replay(.duplicate):
            return "SRTP replay: packet already received (srtp_err_status 9)"
        case .replay(.tooOld):
            return "SRTP replay: packet older than the replay window (srtp_err_status 10): raise replayWindowSize"
        case .authenticationFailureRun(let failures, let packets):
            return "SRTP authentication failed for \(failures) of \(packets) packets: check the key"
        case .packetTooShort(let length, let minimum):
            return "SRTP packet of \(length) bytes is shorter than the minimum of \(minimum)"
        case .invalidLength(let length, let capacity):
            return "packet length \(length) does not fit a buffer of \(capacity) bytes"
        case .bufferTooSmall(let needed, let capacity):
            return "protecting needs a buffer of \(needed) bytes (packet + \(SRTPSession.maximumTrailerLength) for the trailer), got \(capacity)"
        case .badParameter(let reason):
            return reason
        case .invalidKeyLength(let suite, let actual):
            return "SRTP key for \(suite) must be \(suite.keyingMaterialLength) bytes (\(suite.masterKeyLength) key + \(suite.masterSaltLength) salt), got \(actual)"
        case .invalidKeyEncoding(let error):
            return "SRTP key is not valid base64 (\(error))"
        case .unknownSuite(let name):
            let names = SRTPCryptoSuite.allCases.map(\.name).joined(separator: ", ")
            return "unknown SRTP crypto suite '\(name)': use one of \(names)"
        case .unsupportedSuite(let suite):
            let names = SRTPCryptoSuite.supportedSuites.map(\.name).joined(separator: ", ")
            return "SRTP crypto suite \(suite) is not supported by the linked \(SRTPLibrary.version): use one of \(names)"
        case .libsrtpBadParameter(let operation):
            return "\(operation.rawValue) refused a bad parameter (srtp_err_status 2): a malformed packet, or a policy libsrtp2 does not accept"
        case .libsrtp(let status, let operation):
            return "\(operation.rawValue) failed with srtp_err_status \(status)"
        }
    }

    /// The error for a libsrtp2 status other than `srtp_err_status_ok`.
    static func from(_ status: srtp_err_status_t, operation: Operation) -> SRTPError {
        switch status {
        case srtp_err_status_auth_fail: .authenticationFailed
        case srtp_err_status_replay_fail: .replay(.duplicate)
        case srtp_err_status_replay_old: .replay(.tooOld)
        case srtp_err_status_bad_param: .libsrtpBadParameter(operation)
        default: .libsrtp(status: Int32(truncatingIfNeeded: status.rawValue), operation: operation)
        }
    }
}
