import PlayoutCore

/// Why a DTLS-SRTP session did not come up, or ended.
public enum DTLSError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The peer's certificate does not have the fingerprint the SDP answer announced: someone
    /// other than the answerer is on the path. The session is refused.
    case fingerprintMismatch(expected: DTLSFingerprint, actual: DTLSFingerprint)
    /// No complete handshake within the bounded time (``DTLSEndpoint/Configuration/handshakeTimeout``)
    /// or after every retransmission of a flight went unanswered.
    case handshakeTimeout(elapsed: Duration, retransmissions: Int)
    /// OpenSSL ended the handshake: a fatal alert from the peer, a malformed handshake message, no
    /// common cipher. The text is OpenSSL's.
    case handshakeFailed(String)
    /// The handshake completed without a `use_srtp` profile (the peer did not take any offered).
    case noSRTPProfile(offered: [String])
    /// The negotiated `use_srtp` profile is not one Playout keys (the peer chose outside the offer).
    case unsupportedSRTPProfile(UInt)
    /// `SSL_export_keying_material` failed.
    case keyExportFailed(String)
    /// A connected session ended on an error (a fatal alert after the handshake).
    case connectionFailed(String)
    /// Setting OpenSSL up failed (context, certificate, profiles).
    case openSSL(String)
    /// An SDP `a=setup` value that does not decide a role (an answer must say active or passive).
    case invalidSetup(String)

    public var description: String {
        switch self {
        case .fingerprintMismatch(let expected, let actual):
            "DTLS fingerprint mismatch: the answer announced \(expected.sdpValue) but the peer's certificate is \(actual.sdpValue); session refused"
        case .handshakeTimeout(let elapsed, let retransmissions):
            "DTLS handshake did not complete within \(elapsed.compactDescription) (\(retransmissions) retransmissions unanswered): check that the peer's DTLS reaches this address"
        case .handshakeFailed(let reason):
            "DTLS handshake failed: \(reason)"
        case .noSRTPProfile(let offered):
            "DTLS handshake completed without a use_srtp profile (offered \(offered.joined(separator: ", "))): the peer does not do DTLS-SRTP"
        case .unsupportedSRTPProfile(let id):
            "DTLS peer chose SRTP protection profile 0x\(String(id, radix: 16)), which was not offered"
        case .keyExportFailed(let reason):
            "exporting the DTLS-SRTP keys failed: \(reason)"
        case .connectionFailed(let reason):
            "DTLS session ended on an error: \(reason)"
        case .openSSL(let reason):
            "OpenSSL: \(reason)"
        case .invalidSetup(let value):
            "a=setup:\(value) in an answer does not decide the DTLS role: it must be active or passive"
        }
    }
}
