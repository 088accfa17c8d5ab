// libsrtp2's AES-ICM-128 and HMAC-SHA1 on OpenSSL's libcrypto. Debian builds libsrtp2 on NSS,
// whose freebl encrypts counter mode one block at a time and whose PKCS #11 layer creates a
// context per packet: ≈ 5.8 µs to unprotect a 1200-byte packet with a hot cache and ≈ 15 µs live.
// libcrypto (already loaded by FFmpeg's dependencies) does the same in ≈ 1 µs. libsrtp2 stays in
// charge of everything SRTP (key derivation, packet index, replay, tags); these are only the
// two primitives, plugged in through its public replacement API.
#include "playout_srtp_crypto.h"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <srtp2/auth.h>
#include <srtp2/cipher.h>
#include <srtp2/srtp.h>
#include <stdlib.h>
#include <string.h>

// MARK: AES-128 in integer counter mode (RFC 3711 §4.1.1)

typedef struct {
    EVP_CIPHER_CTX *context;
    // The session salt, left-aligned, with its last two octets zero: the counter block of a
    // packet is this XOR the IV libsrtp2 computes (SSRC and packet index); the block counter
    // then runs in the last 16 bits, which never carry for packets under 1 MiB.
    uint8_t offset[16];
} icm_state;

static const srtp_cipher_type_t icm_type;

static srtp_err_status_t icm_alloc(srtp_cipher_t **cipher, int key_length, int tag_length) {
    (void)tag_length;
    if (key_length != SRTP_AES_ICM_128_KEY_LEN_WSALT) return srtp_err_status_bad_param;
    srtp_cipher_t *allocated = calloc(1, sizeof *allocated);
    icm_state *state = calloc(1, sizeof *state);
    EVP_CIPHER_CTX *context = EVP_CIPHER_CTX_new();
    if (allocated == NULL || state == NULL || context == NULL) {
        free(allocated);
        free(state);
        EVP_CIPHER_CTX_free(context);
        return srtp_err_status_alloc_fail;
    }
    state->context = context;
    allocated->type = &icm_type;
    allocated->state = state;
    allocated->key_len = key_length;
    allocated->algorithm = SRTP_AES_ICM_128;
    *cipher = allocated;
    return srtp_err_status_ok;
}

static srtp_err_status_t icm_dealloc(srtp_cipher_t *cipher) {
    icm_state *state = cipher->state;
    EVP_CIPHER_CTX_free(state->context);
    memset(state, 0, sizeof *state);
    free(state);
    free(cipher);
    return srtp_err_status_ok;
}

/// `key` is the 16-octet key followed by the 14-octet salt.
static srtp_err_status_t icm_init(void *opaque, const uint8_t *key) {
    icm_state *state = opaque;
    memset(state->offset, 0, sizeof state->offset);
    memcpy(state->offset, key + SRTP_AES_128_KEY_LEN, SRTP_SALT_LEN);
    if (EVP_EncryptInit_ex(state->context, EVP_aes_128_ctr(), NULL, key, NULL) != 1) return srtp_err_status_init_fail;
    return srtp_err_status_ok;
}

static srtp_err_status_t icm_set_iv(void *opaque, uint8_t *iv, srtp_cipher_direction_t direction) {
    (void)direction;  // counter mode: the same either way
    icm_state *state = opaque;
    uint8_t counter[16];
    for (int index = 0; index < 16; index++) counter[index] = state->offset[index] ^ iv[index];
    if (EVP_EncryptInit_ex(state->context, NULL, NULL, NULL, counter) != 1) return srtp_err_status_cipher_fail;
    return srtp_err_status_ok;
}

/// XORs the key stream into `buffer` (encryption and decryption are the same).
static srtp_err_status_t icm_encrypt(void *opaque, uint8_t *buffer, unsigned int *length) {
    icm_state *state = opaque;
    int written = 0;
    if (*length > (unsigned int)(1 << 20)) return srtp_err_status_bad_param;  // the 16-bit block counter
    if (EVP_EncryptUpdate(state->context, buffer, &written, buffer, (int)*length) != 1) return srtp_err_status_cipher_fail;
    *length = (unsigned int)written;
    return srtp_err_status_ok;
}

// RFC 3711 Appendix B.2: the key stream of the first two blocks.
static const uint8_t icm_test_key[SRTP_AES_ICM_128_KEY_LEN_WSALT] = {
    0x2b, 0x7e, 0x15, 0x16, 0x28, 0xae, 0xd2, 0xa6, 0xab, 0xf7, 0x15, 0x88, 0x09, 0xcf, 0x4f, 0x3c,
    0xf0, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa, 0xfb, 0xfc, 0xfd,
};
static uint8_t icm_test_index[16] = {0};
static const uint8_t icm_test_plaintext[32] = {0};
static const uint8_t icm_test_ciphertext[32] = {
    0xe0, 0x3e, 0xad, 0x09, 0x35, 0xc9, 0x5e, 0x80, 0xe1, 0x66, 0xb1, 0x6d, 0xd9, 0x2b, 0x4e, 0xb4,
    0xd2, 0x35, 0x13, 0x16, 0x2b, 0x02, 0xd0, 0xf7, 0x2a, 0x43, 0xa2, 0xfe, 0x4a, 0x5f, 0x97, 0xab,
};
static const srtp_cipher_test_case_t icm_test = {
    SRTP_AES_ICM_128_KEY_LEN_WSALT, icm_test_key, icm_test_index,
    sizeof icm_test_plaintext, icm_test_plaintext, sizeof icm_test_ciphertext, icm_test_ciphertext,
    0, NULL, 0, NULL,
};

static const srtp_cipher_type_t icm_type = {
    icm_alloc, icm_dealloc, icm_init, NULL, icm_encrypt, icm_encrypt, icm_set_iv, NULL,
    "AES-128 integer counter mode (OpenSSL libcrypto)", &icm_test, SRTP_AES_ICM_128,
};

// MARK: HMAC-SHA1 (RFC 2104), tags truncated to the policy's length

typedef struct {
    EVP_MAC_CTX *context;
} hmac_state;

static const srtp_auth_type_t hmac_type;

static srtp_err_status_t hmac_alloc(srtp_auth_t **auth, int key_length, int output_length) {
    if (key_length < 0 || key_length > 20 || output_length < 0 || output_length > 20) return srtp_err_status_bad_param;
    srtp_auth_t *allocated = calloc(1, sizeof *allocated);
    hmac_state *state = calloc(1, sizeof *state);
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_MAC_CTX *context = mac == NULL ? NULL : EVP_MAC_CTX_new(mac);
    EVP_MAC_free(mac);  // the context keeps its own reference
    if (allocated == NULL || state == NULL || context == NULL) {
        free(allocated);
        free(state);
        EVP_MAC_CTX_free(context);
        return srtp_err_status_alloc_fail;
    }
    state->context = context;
    allocated->type = &hmac_type;
    allocated->state = state;
    allocated->out_len = output_length;
    allocated->key_len = key_length;
    allocated->prefix_len = 0;
    *auth = allocated;
    return srtp_err_status_ok;
}

static srtp_err_status_t hmac_dealloc(srtp_auth_t *auth) {
    hmac_state *state = auth->state;
    EVP_MAC_CTX_free(state->context);
    free(state);
    free(auth);
    return srtp_err_status_ok;
}

static srtp_err_status_t hmac_init(void *opaque, const uint8_t *key, int key_length) {
    hmac_state *state = opaque;
    OSSL_PARAM parameters[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA1", 0),
        OSSL_PARAM_construct_end(),
    };
    if (EVP_MAC_init(state->context, key, (size_t)key_length, parameters) != 1) return srtp_err_status_auth_fail;
    return srtp_err_status_ok;
}

/// Starts a new tag with the same key (libcrypto keeps the keyed inner and outer states).
static srtp_err_status_t hmac_start(void *opaque) {
    hmac_state *state = opaque;
    if (EVP_MAC_init(state->context, NULL, 0, NULL) != 1) return srtp_err_status_auth_fail;
    return srtp_err_status_ok;
}

static srtp_err_status_t hmac_update(void *opaque, const uint8_t *message, int length) {
    hmac_state *state = opaque;
    if (length < 0 || EVP_MAC_update(state->context, message, (size_t)length) != 1) return srtp_err_status_auth_fail;
    return srtp_err_status_ok;
}

static srtp_err_status_t hmac_compute(void *opaque, const uint8_t *message, int length, int tag_length, uint8_t *tag) {
    hmac_state *state = opaque;
    uint8_t digest[EVP_MAX_MD_SIZE];
    size_t written = 0;
    if (tag_length < 0 || tag_length > 20) return srtp_err_status_bad_param;
    srtp_err_status_t status = hmac_update(opaque, message, length);
    if (status != srtp_err_status_ok) return status;
    if (EVP_MAC_final(state->context, digest, &written, sizeof digest) != 1 || written < (size_t)tag_length) return srtp_err_status_auth_fail;
    memcpy(tag, digest, (size_t)tag_length);
    return srtp_err_status_ok;
}

// RFC 2202 §3, test case 1.
static const uint8_t hmac_test_key[20] = {
    0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b,
};
static const uint8_t hmac_test_data[8] = {'H', 'i', ' ', 'T', 'h', 'e', 'r', 'e'};
static const uint8_t hmac_test_tag[20] = {
    0xb6, 0x17, 0x31, 0x86, 0x55, 0x05, 0x72, 0x64, 0xe2, 0x8b, 0xc0, 0xb6, 0xfb, 0x37, 0x8c, 0x8e, 0xf1, 0x46, 0xbe, 0x00,
};
static const srtp_auth_test_case_t hmac_test = {
    sizeof hmac_test_key, hmac_test_key, sizeof hmac_test_data, hmac_test_data, sizeof hmac_test_tag, hmac_test_tag, NULL,
};

static const srtp_auth_type_t hmac_type = {
    hmac_alloc, hmac_dealloc, hmac_init, hmac_compute, hmac_update, hmac_start,
    "HMAC-SHA1 (OpenSSL libcrypto)", &hmac_test, SRTP_HMAC_SHA1,
};

int playout_srtp_use_libcrypto(void) {
    srtp_err_status_t status = srtp_replace_cipher_type(&icm_type, SRTP_AES_ICM_128);
    if (status != srtp_err_status_ok) return (int)status;
    return (int)srtp_replace_auth_type(&hmac_type, SRTP_HMAC_SHA1);
}
