// libsrtp2's AES-ICM-128 and HMAC-SHA1 on OpenSSL's libcrypto. Debian builds libsrtp2 on NSS,
// whose freebl encrypts counter mode one block at a time and whose PKCS #11 layer creates a
// context per packet: ≈ 5.8 µs to unprotect a 1200-byte packet with a hot cache and ≈ 15 µs live.
// libcrypto (already loaded by FFmpeg's dependencies) does the same in ≈ 1 µs. libsrtp2 stays in
// charge of everything SRTP (key derivation, packet index, replay, tags); these are only the
// two primitives, plugged in through its public replacement API.
#include "playout_srtp_crypto.h"

// SHA-1's own functions are deprecated in OpenSSL 3.0 in favour of EVP, not removed; they are what
// HMAC's fixed, per-key states need (see the HMAC section).
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <srtp2/auth.h>
#include <srtp2/cipher.h>
#include <srtp2/srtp.h>
#include <stdlib.h>
#include <string.h>

// MARK: AES-128 in integer counter mode (RFC 3711 §4.1.1)
//
// The counter blocks are encrypted in ECB mode under a key set once, and XORed in here: libcrypto's
// counter mode takes its IV through EVP_EncryptInit_ex, which at every packet looks the IV's length
// up by name through the provider layer (a string compare per parameter), a tenth of the cost of
// unprotecting a 1,200-byte packet. AES itself runs the same (AES-NI, many blocks a call).

typedef struct {
    EVP_CIPHER_CTX *context;  // AES-128-ECB under the session key, no padding
    // The session salt, left-aligned, with its last two octets zero: the counter block of a
    // packet is this XOR the IV libsrtp2 computes (SSRC and packet index); the block counter
    // then runs in the last 16 bits, which never carry for packets under 1 MiB.
    uint8_t offset[16];
    uint8_t counter[16];    // the next counter block
    uint8_t keystream[16];  // the key stream of the last block, when a call ended inside it
    unsigned int used;      // octets of `keystream` used (16: none left)
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
    state->used = 16;
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
    OPENSSL_cleanse(state, sizeof *state);
    free(state);
    free(cipher);
    return srtp_err_status_ok;
}

/// `key` is the 16-octet key followed by the 14-octet salt.
static srtp_err_status_t icm_init(void *opaque, const uint8_t *key) {
    icm_state *state = opaque;
    memset(state->offset, 0, sizeof state->offset);
    memcpy(state->offset, key + SRTP_AES_128_KEY_LEN, SRTP_SALT_LEN);
    memcpy(state->counter, state->offset, sizeof state->counter);
    state->used = 16;
    if (EVP_EncryptInit_ex(state->context, EVP_aes_128_ecb(), NULL, key, NULL) != 1) return srtp_err_status_init_fail;
    if (EVP_CIPHER_CTX_set_padding(state->context, 0) != 1) return srtp_err_status_init_fail;
    return srtp_err_status_ok;
}

static srtp_err_status_t icm_set_iv(void *opaque, uint8_t *iv, srtp_cipher_direction_t direction) {
    (void)direction;  // counter mode: the same either way
    icm_state *state = opaque;
    for (int index = 0; index < 16; index++) state->counter[index] = state->offset[index] ^ iv[index];
    state->used = 16;
    return srtp_err_status_ok;
}

/// XORs the key stream into `buffer` (encryption and decryption are the same), going on from
/// where the last call since ``icm_set_iv`` ended.
static srtp_err_status_t icm_encrypt(void *opaque, uint8_t *buffer, unsigned int *length) {
    icm_state *state = opaque;
    enum { chunk_blocks = 64 };
    uint8_t blocks[chunk_blocks * 16];
    unsigned int total = *length, position = 0;
    if (total > (unsigned int)(1 << 20)) return srtp_err_status_bad_param;  // the 16-bit block counter
    while (position < total && state->used < 16) buffer[position++] ^= state->keystream[state->used++];
    // The counter is kept in registers and each block written as two 8-byte stores: reading it
    // back from `state` after patching its last two bytes stalled every block (a 16-byte load
    // cannot be forwarded from the 2-byte stores before it), three quarters of this function.
    uint64_t high, low_word;
    memcpy(&high, state->counter, 8);
    memcpy(&low_word, state->counter + 8, 8);
    unsigned int low = (unsigned int)state->counter[14] << 8 | state->counter[15];
    while (position < total) {
        unsigned int remaining = total - position;
        unsigned int count = (remaining + 15) / 16;
        if (count > chunk_blocks) count = chunk_blocks;
        for (unsigned int block = 0; block < count; block++) {
            uint8_t tail[8];
            memcpy(tail, &low_word, 8);
            tail[6] = (uint8_t)(low >> 8);  // the counter's octets 14 and 15, big-endian
            tail[7] = (uint8_t)low;
            memcpy(blocks + 16 * block, &high, 8);
            memcpy(blocks + 16 * block + 8, tail, 8);
            low = (low + 1) & 0xFFFF;
        }
        state->counter[14] = (uint8_t)(low >> 8);
        state->counter[15] = (uint8_t)low;
        int written = 0;
        if (EVP_EncryptUpdate(state->context, blocks, &written, blocks, (int)(count * 16)) != 1 || written != (int)(count * 16)) {
            return srtp_err_status_cipher_fail;
        }
        unsigned int taken = remaining < count * 16 ? remaining : count * 16;
        for (unsigned int index = 0; index < taken; index++) buffer[position + index] ^= blocks[index];
        position += taken;
        if (taken % 16 != 0) {  // ended inside the last block: its rest serves the next call
            memcpy(state->keystream, blocks + (count - 1) * 16, 16);
            state->used = taken % 16;
        }
    }
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
//
// On SHA-1's own contexts rather than EVP_MAC: the keyed inner and outer states are computed once
// per key, and a tag costs two plain struct copies around the hashing. EVP_MAC re-keys through
// the provider layer at every packet (a context duplicated twice, allocated and freed, parameters
// looked up by name), which took a quarter of libcrypto's time per 1,200-byte packet. The hashing
// itself is the same (libcrypto's SHA-1 block function).

typedef struct {
    SHA_CTX inner;    // after the key XOR ipad: where every tag starts
    SHA_CTX outer;    // after the key XOR opad
    SHA_CTX current;  // the tag under way
} hmac_state;

static const srtp_auth_type_t hmac_type;

static srtp_err_status_t hmac_alloc(srtp_auth_t **auth, int key_length, int output_length) {
    if (key_length < 0 || key_length > 20 || output_length < 0 || output_length > 20) return srtp_err_status_bad_param;
    srtp_auth_t *allocated = calloc(1, sizeof *allocated);
    hmac_state *state = calloc(1, sizeof *state);
    if (allocated == NULL || state == NULL) {
        free(allocated);
        free(state);
        return srtp_err_status_alloc_fail;
    }
    allocated->type = &hmac_type;
    allocated->state = state;
    allocated->out_len = output_length;
    allocated->key_len = key_length;
    allocated->prefix_len = 0;
    *auth = allocated;
    return srtp_err_status_ok;
}

static srtp_err_status_t hmac_dealloc(srtp_auth_t *auth) {
    OPENSSL_cleanse(auth->state, sizeof(hmac_state));
    free(auth->state);
    free(auth);
    return srtp_err_status_ok;
}

static srtp_err_status_t hmac_init(void *opaque, const uint8_t *key, int key_length) {
    hmac_state *state = opaque;
    // Keys are at most 20 octets (hmac_alloc), shorter than SHA-1's 64-octet block: padded
    // with zeros, never hashed first.
    if (key_length < 0 || key_length > 20) return srtp_err_status_bad_param;
    uint8_t inner[SHA_CBLOCK], outer[SHA_CBLOCK];
    memset(inner, 0x36, sizeof inner);
    memset(outer, 0x5c, sizeof outer);
    for (int index = 0; index < key_length; index++) {
        inner[index] ^= key[index];
        outer[index] ^= key[index];
    }
    int ok = SHA1_Init(&state->inner) && SHA1_Update(&state->inner, inner, sizeof inner) && SHA1_Init(&state->outer)
        && SHA1_Update(&state->outer, outer, sizeof outer);
    OPENSSL_cleanse(inner, sizeof inner);
    OPENSSL_cleanse(outer, sizeof outer);
    if (!ok) return srtp_err_status_auth_fail;
    state->current = state->inner;
    return srtp_err_status_ok;
}

/// Starts a new tag with the same key.
static srtp_err_status_t hmac_start(void *opaque) {
    hmac_state *state = opaque;
    state->current = state->inner;
    return srtp_err_status_ok;
}

static srtp_err_status_t hmac_update(void *opaque, const uint8_t *message, int length) {
    hmac_state *state = opaque;
    if (length < 0 || !SHA1_Update(&state->current, message, (size_t)length)) return srtp_err_status_auth_fail;
    return srtp_err_status_ok;
}

static srtp_err_status_t hmac_compute(void *opaque, const uint8_t *message, int length, int tag_length, uint8_t *tag) {
    hmac_state *state = opaque;
    uint8_t digest[SHA_DIGEST_LENGTH];
    if (tag_length < 0 || tag_length > SHA_DIGEST_LENGTH) return srtp_err_status_bad_param;
    srtp_err_status_t status = hmac_update(opaque, message, length);
    if (status != srtp_err_status_ok) return status;
    SHA_CTX outer = state->outer;
    if (!SHA1_Final(digest, &state->current) || !SHA1_Update(&outer, digest, sizeof digest) || !SHA1_Final(digest, &outer)) {
        return srtp_err_status_auth_fail;
    }
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

// MARK: Cross-check against libcrypto's own counter mode and HMAC

int playout_srtp_crypto_check(unsigned int maximum_length) {
    enum { limit = 4096 };
    if (maximum_length > limit) maximum_length = limit;
    static uint8_t key[SRTP_AES_ICM_128_KEY_LEN_WSALT];
    for (unsigned int index = 0; index < sizeof key; index++) key[index] = (uint8_t)(index * 7 + 3);
    srtp_cipher_t *cipher = NULL;
    srtp_auth_t *auth = NULL;
    int mismatches = 0;
    uint8_t *ours = malloc(limit), *theirs = malloc(limit);
    EVP_CIPHER_CTX *reference = EVP_CIPHER_CTX_new();
    if (ours == NULL || theirs == NULL || reference == NULL || icm_alloc(&cipher, sizeof key, 0) != srtp_err_status_ok
        || icm_init(cipher->state, key) != srtp_err_status_ok || hmac_alloc(&auth, 20, 10) != srtp_err_status_ok
        || hmac_init(auth->state, key, 20) != srtp_err_status_ok) {
        mismatches = -1;
        goto done;
    }
    for (unsigned int length = 0; length < maximum_length; length++) {
        // An SRTP IV: its last two octets zero, so the 16-bit block counter does not wrap.
        uint8_t iv[16] = {0};
        for (int index = 0; index < 14; index++) iv[index] = (uint8_t)(length * 13 + index);
        for (unsigned int index = 0; index < length; index++) ours[index] = theirs[index] = (uint8_t)(index ^ length);
        // Counter mode in two calls split at an odd point (the key stream goes on across them).
        unsigned int first = length / 3 + length % 7;
        if (first > length) first = length;
        unsigned int second = length - first;
        icm_state *state = cipher->state;
        icm_set_iv(state, iv, srtp_direction_encrypt);
        uint8_t counter[16];
        for (int index = 0; index < 16; index++) counter[index] = state->offset[index] ^ iv[index];
        icm_encrypt(state, ours, &first);
        icm_encrypt(state, ours + first, &second);
        int written = 0;
        if (EVP_EncryptInit_ex(reference, EVP_aes_128_ctr(), NULL, key, counter) != 1
            || EVP_EncryptUpdate(reference, theirs, &written, theirs, (int)length) != 1 || memcmp(ours, theirs, length) != 0) {
            mismatches++;
        }
        // A tag in two updates, against HMAC().
        uint8_t tag[20], expected[20];
        unsigned int expected_length = 0;
        hmac_start(auth->state);
        if (hmac_update(auth->state, ours, (int)(length / 2)) != srtp_err_status_ok
            || hmac_compute(auth->state, ours + length / 2, (int)(length - length / 2), 10, tag) != srtp_err_status_ok
            || HMAC(EVP_sha1(), key, 20, ours, length, expected, &expected_length) == NULL || memcmp(tag, expected, 10) != 0) {
            mismatches++;
        }
    }
done:
    EVP_CIPHER_CTX_free(reference);
    free(ours);
    free(theirs);
    if (cipher != NULL) icm_dealloc(cipher);
    if (auth != NULL) hmac_dealloc(auth);
    return mismatches;
}
