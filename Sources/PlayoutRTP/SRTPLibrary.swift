internal import CSRTP
internal import CSRTPCrypto
import PlayoutCore

/// The system's libsrtp2, as linked into Playout.
public enum SRTPLibrary {
    /// libsrtp2's version string, e.g. `"libsrtp2 2.5.0"`.
    public static var version: String {
        String(cString: srtp_get_version_string())
    }

    /// libsrtp2's version as a number (`major << 24 | minor << 16 | micro`).
    public static var versionNumber: UInt32 {
        UInt32(srtp_get_version())
    }

    private static let initialized = LockedValue(false)
    private static let holdsNSS = LockedValue(false)

    /// Whether libsrtp2 runs on NSS and Playout keeps NSS's crypto module loaded for the whole
    /// process (see `playout_srtp_hold_nss`): without that, every SRTP stream created after the
    /// last one was freed would load and relocate the module again. Set by ``initialize()``.
    public static var keepsCryptoModuleLoaded: Bool { holdsNSS.withLock { $0 } }

    private static let libcryptoStatus = LockedValue<Int32?>(nil)

    /// Whether libsrtp2's AES-128 counter mode and HMAC-SHA1 — the primitives of
    /// AES_CM_128_HMAC_SHA1_80/32, the suites most senders use — run on OpenSSL's libcrypto
    /// instead of the library libsrtp2 was built on (Debian: NSS, ≈ 10× slower per packet).
    /// Replaced through libsrtp2's own API by ``initialize()``, after libsrtp2 and Playout's
    /// known-answer tests passed on them; libsrtp2 does everything else (key derivation,
    /// packet index, replay protection, tags).
    public static var usesLibcrypto: Bool { libcryptoStatus.withLock { $0 == 0 } }

    /// Initializes libsrtp2 once per process (runs its self-tests of the crypto kernel) and
    /// puts its AES-ICM-128 and HMAC-SHA1 on libcrypto (see ``usesLibcrypto``; when libsrtp2
    /// refuses them, it keeps its own). Idempotent and thread safe; every SRTP session calls it
    /// first.
    ///
    /// - Throws: ``SRTPLibraryError`` if libsrtp2 refuses to start.
    public static func initialize() throws(SRTPLibraryError) {
        let status: Int32 = initialized.withLock { done in
            if done { return 0 }
            let held = playout_srtp_hold_nss() != 0
            holdsNSS.withLock { $0 = held }
            let status = Int32(srtp_init().rawValue)
            if status == 0 {
                done = true
                let replaced = playout_srtp_use_libcrypto()
                libcryptoStatus.withLock { $0 = replaced }
            }
            return status
        }
        if status != 0 { throw SRTPLibraryError(status: status) }
    }

    /// How many of the lengths below `maximumLength` (at most 4,096) give a different key stream
    /// or tag from libcrypto's own AES-128-CTR and `HMAC()` with the primitives
    /// ``usesLibcrypto`` puts in libsrtp2 (the key stream in two calls split at an odd point,
    /// the tag in two updates): 0, or -1 when the check cannot run. libsrtp2's self-tests cover
    /// one vector of each; this covers every length and the paths between calls.
    package static func primitiveMismatches(maximumLength: Int) -> Int {
        Int(playout_srtp_crypto_check(UInt32(clamping: maximumLength)))
    }
}

/// libsrtp2 could not be initialized.
public struct SRTPLibraryError: Error, Equatable, Sendable, CustomStringConvertible {
    /// libsrtp2's `srtp_err_status_t` value.
    public var status: Int32

    public var description: String {
        "libsrtp2 failed to initialize (srtp_err_status \(status)): reinstall libsrtp2-dev (make setup)"
    }
}
