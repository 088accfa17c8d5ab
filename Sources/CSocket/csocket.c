#define _GNU_SOURCE
#include "csocket.h"

#include <errno.h>
#include <string.h>
#include <time.h>
#include <sys/uio.h>

int playout_enable_timestamps(int fd) {
    int on = 1;
    return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) == 0 ? 0 : -errno;
}

int playout_receive_batch(int fd, uint8_t *buffer, size_t slot_size, playout_datagram_info *infos, unsigned count) {
    if (count > PLAYOUT_MAX_BATCH) count = PLAYOUT_MAX_BATCH;
    struct mmsghdr messages[PLAYOUT_MAX_BATCH];
    struct iovec vectors[PLAYOUT_MAX_BATCH];
    union {
        char bytes[CMSG_SPACE(sizeof(struct timespec))];
        struct cmsghdr align;
    } controls[PLAYOUT_MAX_BATCH];
    memset(messages, 0, sizeof(struct mmsghdr) * count);
    for (unsigned i = 0; i < count; i++) {
        vectors[i].iov_base = buffer + i * slot_size;
        vectors[i].iov_len = slot_size;
        messages[i].msg_hdr.msg_iov = &vectors[i];
        messages[i].msg_hdr.msg_iovlen = 1;
        messages[i].msg_hdr.msg_name = &infos[i].source;
        messages[i].msg_hdr.msg_namelen = sizeof(struct sockaddr_storage);
        messages[i].msg_hdr.msg_control = controls[i].bytes;
        messages[i].msg_hdr.msg_controllen = sizeof controls[i].bytes;
    }
    int received = recvmmsg(fd, messages, count, MSG_DONTWAIT, NULL);
    if (received < 0) {
        return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -errno;
    }
    for (int i = 0; i < received; i++) {
        infos[i].length = messages[i].msg_len;
        infos[i].truncated = (messages[i].msg_hdr.msg_flags & MSG_TRUNC) != 0;
        infos[i].source_length = messages[i].msg_hdr.msg_namelen;
        infos[i].kernel_realtime_ns = -1;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&messages[i].msg_hdr); c != NULL; c = CMSG_NXTHDR(&messages[i].msg_hdr, c)) {
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
                struct timespec stamp;
                memcpy(&stamp, CMSG_DATA(c), sizeof stamp);
                infos[i].kernel_realtime_ns = (int64_t)stamp.tv_sec * 1000000000 + stamp.tv_nsec;
            }
        }
    }
    return received;
}

int playout_send_batch(int fd, const uint8_t *buffer, size_t slot_size, const size_t *lengths, unsigned count,
                       const struct sockaddr *destination, socklen_t destination_length) {
    if (count > PLAYOUT_MAX_BATCH) count = PLAYOUT_MAX_BATCH;
    struct mmsghdr messages[PLAYOUT_MAX_BATCH];
    struct iovec vectors[PLAYOUT_MAX_BATCH];
    memset(messages, 0, sizeof(struct mmsghdr) * count);
    for (unsigned i = 0; i < count; i++) {
        vectors[i].iov_base = (void *)(buffer + i * slot_size);
        vectors[i].iov_len = lengths[i];
        messages[i].msg_hdr.msg_iov = &vectors[i];
        messages[i].msg_hdr.msg_iovlen = 1;
        messages[i].msg_hdr.msg_name = (void *)destination;
        messages[i].msg_hdr.msg_namelen = destination_length;
    }
    int sent = sendmmsg(fd, messages, count, 0);
    return sent < 0 ? -errno : sent;
}
