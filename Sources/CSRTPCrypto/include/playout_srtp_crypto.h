#ifndef PLAYOUT_SRTP_CRYPTO_H
#define PLAYOUT_SRTP_CRYPTO_H

/// Replaces libsrtp2's AES-128 counter mode (SRTP_AES_ICM_128) and HMAC-SHA1 (SRTP_HMAC_SHA1)
/// with implementations on OpenSSL's libcrypto (AES-NI, SHA extensions), through libsrtp2's own
/// srtp_replace_cipher_type / srtp_replace_auth_type, which first run libsrtp2's self-tests and
/// ours (RFC 3711 B.2, RFC 2202) on them. Call after srtp_init(), before any session exists.
///
/// Returns 0 when both are replaced, else the srtp_err_status_t of the first refusal (libsrtp2
/// then keeps its own for that one).
int playout_srtp_use_libcrypto(void);

/// Checks the two primitives against libcrypto's own AES-128-CTR and HMAC() for every length
/// below `maximum_length` (at most 4,096): the counter mode in two calls split at an odd point,
/// the tag in two updates. Returns the number of mismatches (0), or -1 when it cannot run.
int playout_srtp_crypto_check(unsigned int maximum_length);

#endif
