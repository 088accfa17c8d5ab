#ifndef PLAYOUT_CSRTP_SHIM_H
#define PLAYOUT_CSRTP_SHIM_H

#include <srtp2/srtp.h>

/// srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80 is a macro Swift cannot import.
static inline void playout_srtp_policy_aes_cm_128_hmac_sha1_80(srtp_crypto_policy_t *policy) {
    srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(policy);
}

#endif
