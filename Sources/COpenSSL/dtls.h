#ifndef PLAYOUT_COPENSSL_DTLS_H
#define PLAYOUT_COPENSSL_DTLS_H

// Wrappers for DTLS-SRTP (Sources/PlayoutWebRTC/DTLS): OpenSSL macros and variadic functions that
// Swift cannot import, each a one-line static inline function. No logic lives here.
#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>

/// EVP_EC_gen("P-256") (a macro over the variadic EVP_PKEY_Q_keygen): a fresh ECDSA P-256 key.
static inline EVP_PKEY *playout_dtls_generate_p256_key(void) {
    return EVP_EC_gen("P-256");
}

/// MBSTRING_ASC, for X509_NAME_add_entry_by_txt.
static inline int playout_dtls_mbstring_asc(void) {
    return MBSTRING_ASC;
}

/// The options every DTLS-SRTP session sets: no MTU query (a memory BIO has no path MTU; the
/// link MTU is set instead), no renegotiation and no session tickets (one handshake per session).
static inline void playout_dtls_set_session_options(SSL *ssl) {
    SSL_set_options(ssl, SSL_OP_NO_QUERY_MTU | SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET);
}

/// DTLS_set_link_mtu: the largest datagram OpenSSL may write, headers included.
static inline long playout_dtls_set_link_mtu(SSL *ssl, long mtu) {
    return DTLS_set_link_mtu(ssl, mtu);
}

/// DTLSv1_get_timeout: 1 while OpenSSL's retransmission timer runs (a flight awaits its answer).
static inline int playout_dtls_timer_running(SSL *ssl) {
    struct timeval remaining;
    return DTLSv1_get_timeout(ssl, &remaining) > 0 ? 1 : 0;
}

/// DTLSv1_handle_timeout: retransmits the last flight if OpenSSL's timer has expired (1), else 0;
/// -1 when the flight was retransmitted too often.
static inline long playout_dtls_handle_timeout(SSL *ssl) {
    return DTLSv1_handle_timeout(ssl);
}

/// SSL_CTX_set_min_proto_version(ctx, DTLS1_2_VERSION).
static inline int playout_dtls_require_dtls12(SSL_CTX *ctx) {
    return (int)SSL_CTX_set_min_proto_version(ctx, DTLS1_2_VERSION);
}

/// BIO_reset on a memory BIO: drops whatever it holds.
static inline int playout_dtls_bio_reset(BIO *bio) {
    return BIO_reset(bio);
}

/// SSL_set_app_data / SSL_get_app_data (ex-data index 0): the endpoint's callback context.
static inline int playout_dtls_set_app_data(SSL *ssl, void *data) {
    return SSL_set_app_data(ssl, data);
}

static inline void *playout_dtls_get_app_data(const SSL *ssl) {
    return SSL_get_app_data(ssl);
}

#endif
