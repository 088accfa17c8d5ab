#ifndef PLAYOUT_CSRTP_SHIM_H
#define PLAYOUT_CSRTP_SHIM_H

#include <dlfcn.h>
#include <stddef.h>
#include <srtp2/srtp.h>

/// srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80 is a macro Swift cannot import.
static inline void playout_srtp_policy_aes_cm_128_hmac_sha1_80(srtp_crypto_policy_t *policy) {
    srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(policy);
}

/// When libsrtp2 is built on NSS (Debian's is), every cipher it allocates opens an NSS context
/// and every one it frees closes it; when the last closes, NSS shuts down and unloads its crypto
/// module, and the next allocation loads and relocates it again — 19 times during srtp_init's
/// self-tests alone (≈ 55 ms of CPU in a process that links FFmpeg). Holding one context of our
/// own for the life of the process keeps the module loaded once. A no-op when NSS is not loaded
/// (libsrtp2 built on OpenSSL or its own crypto). Returns whether a context is held.
static inline int playout_srtp_hold_nss(void) {
    void *nss = dlopen("libnss3.so", RTLD_NOW | RTLD_NOLOAD);
    if (nss == NULL) return 0;
    typedef void *(*InitContext)(const char *, const char *, const char *, const char *, void *, unsigned int);
    InitContext init = (InitContext)dlsym(nss, "NSS_InitContext");
    // The flags libsrtp2's NSS ciphers use: read-only, no certificate or module database,
    // forced open, optimised for space.
    const unsigned int flags = 0x1 | 0x2 | 0x4 | 0x8 | 0x20;
    // The context and the library handle are kept on purpose: released only at exit.
    return init != NULL && init("", "", "", "", NULL, flags) != NULL;
}

#endif
