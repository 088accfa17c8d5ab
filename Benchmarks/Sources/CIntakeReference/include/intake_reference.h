#ifndef PLAYOUT_INTAKE_REFERENCE_H
#define PLAYOUT_INTAKE_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

/// The references the Intake benchmarks measure against, in plain C.

/// Creates an inbound libsrtp2 session (suite 0 = AES_CM_128_HMAC_SHA1_80, 1 = AEAD_AES_128_GCM)
/// with a 32,767-packet replay window. Returns NULL on failure.
void *reference_srtp_create(int suite, const uint8_t *key_and_salt);
void reference_srtp_free(void *session);

/// Copies each of `count` packets (packet i at `packets + i * stride`, `lengths[i]` bytes) into
/// `scratch` and calls srtp_unprotect on it. Returns the number that authenticated.
int reference_srtp_unprotect_all(void *session, const uint8_t *packets, size_t stride, const int *lengths, int count,
                                 uint8_t *scratch);

/// Receives `count` datagrams from `fd` with recvmmsg(2) in batches of 64 into a static buffer,
/// blocking. With `timestamps`, also enables SO_TIMESTAMPNS and reads each datagram's kernel
/// timestamp, as UDPReceiver does by default. Returns the number received (stops early on error).
long reference_recvmmsg_loop(int fd, long count, int timestamps);

#endif
