#ifndef PLAYOUT_COPENSSL_TLS_H
#define PLAYOUT_COPENSSL_TLS_H

// Wrappers for TLS (WHEP over https, Sources/PlayoutWebRTC/WHEP): the OpenSSL calls that are
// macros, which Swift cannot import.
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

/// SSL_set_tlsext_host_name: the SNI name sent in the ClientHello.
static inline int playout_tls_set_sni(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

/// SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION).
static inline int playout_tls_require_tls12(SSL_CTX *ctx) {
    return (int)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
}

/// SSL_CTX_set_mode(ctx, SSL_MODE_AUTO_RETRY | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER).
static inline void playout_tls_set_modes(SSL_CTX *ctx) {
    SSL_CTX_set_mode(ctx, SSL_MODE_AUTO_RETRY | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}

/// SSL_set_options(ssl, SSL_OP_IGNORE_UNEXPECTED_EOF): a server that closes the TCP connection
/// without close_notify (common for `Connection: close` answers) ends the stream cleanly.
static inline void playout_tls_ignore_unexpected_eof(SSL *ssl) {
    SSL_set_options(ssl, SSL_OP_IGNORE_UNEXPECTED_EOF);
}

#endif
