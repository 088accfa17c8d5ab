#define _GNU_SOURCE
#include "intake_reference.h"

#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <srtp2/srtp.h>

void *reference_srtp_create(int suite, const uint8_t *key_and_salt) {
    // libsrtp2 may already be initialized by Playout in this process; a second srtp_init reports
    // an error (its debug module is already loaded) while leaving the library usable.
    static int initialized = 0;
    if (!initialized) {
        (void)srtp_init();
        initialized = 1;
    }
    srtp_policy_t policy;
    memset(&policy, 0, sizeof policy);
    if (suite == 0) {
        srtp_crypto_policy_set_rtp_default(&policy.rtp);
        srtp_crypto_policy_set_rtcp_default(&policy.rtcp);
    } else {
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtp);
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtcp);
    }
    policy.ssrc.type = ssrc_any_inbound;
    policy.key = (unsigned char *)key_and_salt;
    policy.window_size = 32767;
    srtp_t session = NULL;
    if (srtp_create(&session, &policy) != srtp_err_status_ok) return NULL;
    return session;
}

void reference_srtp_free(void *session) {
    if (session) srtp_dealloc((srtp_t)session);
}

int reference_srtp_unprotect_all(void *session, const uint8_t *packets, size_t stride, const int *lengths, int count,
                                 uint8_t *scratch) {
    int ok = 0;
    for (int i = 0; i < count; i++) {
        int length = lengths[i];
        memcpy(scratch, packets + (size_t)i * stride, (size_t)length);
        if (srtp_unprotect((srtp_t)session, scratch, &length) == srtp_err_status_ok) ok++;
    }
    return ok;
}

long reference_recvmmsg_loop(int fd, long count, int timestamps) {
    enum { batch = 64, slot = 2048 };
    static uint8_t buffer[batch * slot];
    static char controls[batch][CMSG_SPACE(sizeof(struct timespec))];
    struct mmsghdr messages[batch];
    struct iovec vectors[batch];
    if (timestamps) {
        int on = 1;
        setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
    }
    long received = 0;
    int64_t newest = 0;
    while (received < count) {
        memset(messages, 0, sizeof messages);
        for (int i = 0; i < batch; i++) {
            vectors[i].iov_base = buffer + i * slot;
            vectors[i].iov_len = slot;
            messages[i].msg_hdr.msg_iov = &vectors[i];
            messages[i].msg_hdr.msg_iovlen = 1;
            if (timestamps) {
                messages[i].msg_hdr.msg_control = controls[i];
                messages[i].msg_hdr.msg_controllen = sizeof controls[i];
            }
        }
        int got = recvmmsg(fd, messages, batch, MSG_WAITFORONE, NULL);
        if (got <= 0) break;
        if (timestamps) {
            for (int i = 0; i < got; i++) {
                for (struct cmsghdr *c = CMSG_FIRSTHDR(&messages[i].msg_hdr); c; c = CMSG_NXTHDR(&messages[i].msg_hdr, c)) {
                    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
                        struct timespec stamp;
                        memcpy(&stamp, CMSG_DATA(c), sizeof stamp);
                        newest = (int64_t)stamp.tv_sec * 1000000000 + stamp.tv_nsec;
                    }
                }
            }
        }
        received += got;
    }
    return newest < 0 ? -1 : received;
}
