internal import COpenSSL

/// The OpenSSL objects of one endpoint: an `SSL_CTX` and an `SSL` over two memory BIOs.
final class SSLContextHandle {
    /// `SSL_CTX*` (owned).
    let sslContext: OpaquePointer
    /// `SSL*` (owned; owns both BIOs).
    let ssl: OpaquePointer
    /// The BIO received datagrams are written into.
    let readBIO: OpaquePointer
    /// The BIO OpenSSL writes records into.
    let writeBIO: OpaquePointer

    init(
        role: DTLSEndpoint.Role,
        certificate: DTLSCertificate,
        profiles: [DTLSSRTPProfile],
        mtu: Int,
        callbacks: DTLSCallbackContext
    ) throws(DTLSError) {
        ERR_clear_error()
        guard let sslContext = SSL_CTX_new(DTLS_method()) else { throw .openSSL("SSL_CTX_new failed: \(OpenSSLErrors.drain())") }
        var ok = playout_dtls_require_dtls12(sslContext) == 1
        ok = ok && SSL_CTX_use_certificate(sslContext, certificate.certificate) == 1
        ok = ok && SSL_CTX_use_PrivateKey(sslContext, certificate.privateKey) == 1
        ok = ok && SSL_CTX_check_private_key(sslContext) == 1
        // Returns 0 on success, unlike its neighbours.
        ok = ok && SSL_CTX_set_tlsext_use_srtp(sslContext, profiles.map(\.name).joined(separator: ":")) == 0
        guard ok else {
            let reason = OpenSSLErrors.drain()
            SSL_CTX_free(sslContext)
            throw .openSSL("setting up the DTLS context failed: \(reason)")
        }
        // Both sides present and check a certificate; the check is the fingerprint, not a CA.
        SSL_CTX_set_verify(sslContext, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
        SSL_CTX_set_cert_verify_callback(sslContext, { store, _ in
            guard let store,
                  let sslPointer = X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()),
                  let callbacks = DTLSCallbackContext.of(OpaquePointer(sslPointer)),
                  let certificate = X509_STORE_CTX_get0_cert(store)
            else { return 0 }
            if callbacks.verify(certificate: certificate) { return 1 }
            X509_STORE_CTX_set_error(store, X509_V_ERR_CERT_REJECTED)
            return 0
        }, nil)

        guard let ssl = SSL_new(sslContext) else {
            SSL_CTX_free(sslContext)
            throw .openSSL("SSL_new failed: \(OpenSSLErrors.drain())")
        }
        guard let readBIO = BIO_new(BIO_s_mem()), let writeBIO = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            SSL_CTX_free(sslContext)
            throw .openSSL("BIO_new failed")
        }
        SSL_set_bio(ssl, readBIO, writeBIO)
        playout_dtls_set_session_options(ssl)
        _ = playout_dtls_set_link_mtu(ssl, mtu)
        callbacks.writeBIO = writeBIO
        _ = playout_dtls_set_app_data(ssl, Unmanaged.passUnretained(callbacks).toOpaque())
        DTLS_set_timer_cb(ssl) { ssl, previous in
            guard let ssl, let callbacks = DTLSCallbackContext.of(ssl) else { return UInt32.max }
            return callbacks.timer(previous: previous)
        }
        switch role {
        case .client: SSL_set_connect_state(ssl)
        case .server: SSL_set_accept_state(ssl)
        }
        self.sslContext = sslContext
        self.ssl = ssl
        self.readBIO = readBIO
        self.writeBIO = writeBIO
    }

    deinit {
        SSL_free(ssl)
        SSL_CTX_free(sslContext)
    }
}

/// What OpenSSL's callbacks need from the endpoint, reached through the `SSL`'s app data. It is
/// only touched from inside OpenSSL calls the endpoint makes, on the endpoint's thread.
final class DTLSCallbackContext {
    /// The fingerprint the peer's certificate must have.
    let expected: DTLSFingerprint
    /// Retransmission copies OpenSSL prepares per flight.
    let copiesPerFlight: Int
    /// The write BIO, to mark where each prepared copy starts.
    var writeBIO: OpaquePointer?

    /// The peer's certificate matched.
    private(set) var verified = false
    /// The peer's certificate's fingerprint when it did not match.
    private(set) var mismatch: DTLSFingerprint?

    private var copiesRemaining = 0
    private var boundaries: [Int] = []
    private var freshFlight = false

    init(expected: DTLSFingerprint, copies: Int) {
        self.expected = expected
        copiesPerFlight = copies
    }

    static func of(_ ssl: OpaquePointer) -> DTLSCallbackContext? {
        guard let raw = playout_dtls_get_app_data(ssl) else { return nil }
        return Unmanaged<DTLSCallbackContext>.fromOpaque(raw).takeUnretainedValue()
    }

    /// OpenSSL's timer callback (see ``DTLSEndpoint``, "Retransmission on the injected clock"):
    /// `previous` is 0 when a flight starts, the last answer on each timeout.
    func timer(previous: UInt32) -> UInt32 {
        if previous == 0 {
            freshFlight = true
            boundaries.removeAll()
            copiesRemaining = copiesPerFlight
            return 1  // expired at once: OpenSSL's next failed read prepares the first copy
        }
        // A timeout: OpenSSL writes a copy of the flight right after this returns.
        boundaries.append(writeBIO.map { Int(BIO_ctrl_pending($0)) } ?? 0)
        copiesRemaining -= 1
        return copiesRemaining > 0 ? 1 : UInt32.max
    }

    /// Offsets in the write BIO where prepared copies start, since the last call.
    func takeBoundaries() -> [Int] {
        defer { boundaries.removeAll() }
        return boundaries
    }

    /// Whether a new flight started since the last call.
    func takeFreshFlight() -> Bool {
        defer { freshFlight = false }
        return freshFlight
    }

    /// The certificate check: the leaf's digest with the answer's hash function equals the answer's.
    func verify(certificate: OpaquePointer) -> Bool {
        let actual = DTLSFingerprint(algorithm: expected.algorithm, certificate: certificate)
        if actual == expected {
            verified = true
            mismatch = nil
            return true
        }
        mismatch = actual
        return false
    }
}
