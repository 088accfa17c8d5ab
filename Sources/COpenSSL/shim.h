#ifndef PLAYOUT_COPENSSL_SHIM_H
#define PLAYOUT_COPENSSL_SHIM_H

// OpenSSL 3 (Debian's libssl-dev) for WebRTC: HMAC-SHA1 and CRC for STUN, DTLS-SRTP through
// memory BIOs, TLS for WHEP over https. Macros Swift cannot import get a static inline wrapper in
// the header of the part that needs them.
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "dtls.h"
#include "tls.h"

#endif
