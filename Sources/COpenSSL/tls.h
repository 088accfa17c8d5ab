#ifndef PLAYOUT_COPENSSL_TLS_H
#define PLAYOUT_COPENSSL_TLS_H

// Wrappers for TLS (WHEP over https).
#include <openssl/ssl.h>

#endif
