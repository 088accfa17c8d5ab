#ifndef PLAYOUT_COPENSSL_DTLS_H
#define PLAYOUT_COPENSSL_DTLS_H

// Wrappers for DTLS-SRTP (Sources/PlayoutWebRTC/DTLS).
#include <openssl/ssl.h>

#endif
