#define _GNU_SOURCE
#include "csocket.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <netinet/in.h>
#include <netinet/udp.h>

#ifndef UDP_GRO
#define UDP_GRO 104
#endif

int playout_enable_timestamps(int fd) {
    int on = 1;
    return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) == 0 ? 0 : -errno;
}

int playout_enable_gro(int fd) {
    int on = 1;
    return setsockopt(fd, IPPROTO_UDP, UDP_GRO, &on, sizeof on) == 0 ? 0 : -errno;
}

typedef union {
    char bytes[CMSG_SPACE(sizeof(struct timespec)) + CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
} playout_control;

struct playout_receiver {
    unsigned count;
    /// Messages whose name and control lengths the last call changed (they are reset before the next).
    unsigned dirty;
    size_t slot_size;
    uint8_t *slots;
    /// `count * overflow_stride` bytes mapped with MAP_NORESERVE, or NULL; datagram i's overflow
    /// starts `slot_size` bytes into its part, leaving room to join the slot's bytes in front.
    uint8_t *overflow;
    size_t overflow_stride;
    size_t overflow_length;
    struct mmsghdr messages[PLAYOUT_MAX_BATCH];
    struct iovec vectors[PLAYOUT_MAX_BATCH][2];
    playout_control controls[PLAYOUT_MAX_BATCH];
    struct sockaddr_storage sources[PLAYOUT_MAX_BATCH];
};

playout_receiver *playout_receiver_create(size_t slot_size, size_t max_datagram_size, unsigned count) {
    if (count == 0) count = 1;
    if (count > PLAYOUT_MAX_BATCH) count = PLAYOUT_MAX_BATCH;
    if (max_datagram_size < slot_size) slot_size = max_datagram_size;
    playout_receiver *receiver = calloc(1, sizeof *receiver);
    if (receiver == NULL) return NULL;
    receiver->count = count;
    receiver->slot_size = slot_size;
    // Page-aligned: the kernel copies each datagram from its buffer with `rep movsb`, which slows
    // down by ≈ 30 % when the destination sits a few dozen bytes after the source modulo 4 KiB
    // (4K aliasing: loads look like they depend on the copy's own earlier stores). Loopback
    // datagrams start near the beginning of their page; a malloc'ed buffer (page offset 0x10 or
    // 0x40) hit exactly that, a page-aligned one does not.
    if (posix_memalign((void **)&receiver->slots, 4096, slot_size * count) != 0) {
        free(receiver);
        return NULL;
    }
    memset(receiver->slots, 0, slot_size * count);  // fault the slots in now, not on the first batch
    if (max_datagram_size > slot_size) {
        size_t page = 4096;
        receiver->overflow_stride = (max_datagram_size + page - 1) / page * page;
        receiver->overflow_length = receiver->overflow_stride * count;
        void *mapped = mmap(NULL, receiver->overflow_length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (mapped == MAP_FAILED) {
            free(receiver->slots);
            free(receiver);
            return NULL;
        }
        receiver->overflow = mapped;
    }
    for (unsigned i = 0; i < count; i++) {
        struct msghdr *header = &receiver->messages[i].msg_hdr;
        receiver->vectors[i][0].iov_base = receiver->slots + i * slot_size;
        receiver->vectors[i][0].iov_len = slot_size;
        header->msg_iov = receiver->vectors[i];
        header->msg_iovlen = 1;
        if (receiver->overflow != NULL) {
            receiver->vectors[i][1].iov_base = receiver->overflow + i * receiver->overflow_stride + slot_size;
            receiver->vectors[i][1].iov_len = max_datagram_size - slot_size;
            header->msg_iovlen = 2;
        }
        header->msg_name = &receiver->sources[i];
        header->msg_namelen = sizeof receiver->sources[i];
        header->msg_control = receiver->controls[i].bytes;
        header->msg_controllen = sizeof receiver->controls[i].bytes;
    }
    return receiver;
}

void playout_receiver_destroy(playout_receiver *receiver) {
    if (receiver == NULL) return;
    if (receiver->overflow != NULL) munmap(receiver->overflow, receiver->overflow_length);
    free(receiver->slots);
    free(receiver);
}

uint8_t *playout_receiver_slots(const playout_receiver *receiver) {
    return receiver->slots;
}

static inline int64_t nanoseconds(clockid_t clock) {
    struct timespec now;
    clock_gettime(clock, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

/// From a message's control data: the kernel's SO_TIMESTAMPNS receive time (CLOCK_REALTIME, ns;
/// -1 when none) and, with UDP_GRO, the size of the datagrams joined in it (0 when none).
static inline int64_t read_control(struct msghdr *header, uint16_t *segment_size) {
    int64_t stamp_ns = -1;
    *segment_size = 0;
    if (header->msg_controllen < sizeof(struct cmsghdr)) return -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(header); c != NULL; c = CMSG_NXTHDR(header, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS && c->cmsg_len >= CMSG_LEN(sizeof(struct timespec))) {
            struct timespec stamp;
            memcpy(&stamp, CMSG_DATA(c), sizeof stamp);
            stamp_ns = (int64_t)stamp.tv_sec * 1000000000 + stamp.tv_nsec;
        } else if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_GRO && c->cmsg_len >= CMSG_LEN(sizeof(int))) {
            int size;
            memcpy(&size, CMSG_DATA(c), sizeof size);
            if (size > 0 && size <= 65535) *segment_size = (uint16_t)size;
        }
    }
    return stamp_ns;
}

int playout_receiver_receive(playout_receiver *receiver, int fd, playout_datagram_info *infos) {
    for (unsigned i = 0; i < receiver->dirty; i++) {
        receiver->messages[i].msg_hdr.msg_namelen = sizeof receiver->sources[i];
        receiver->messages[i].msg_hdr.msg_controllen = sizeof receiver->controls[i].bytes;
    }
    receiver->dirty = 0;
    int received = recvmmsg(fd, receiver->messages, receiver->count, MSG_DONTWAIT, NULL);
    if (received < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -errno;
    receiver->dirty = (unsigned)received;
    // Kernel receive times are on CLOCK_REALTIME: map them onto the monotonic clock with one
    // offset sampled now, as ages (clamped to 0…10 s, so a wall-clock step cannot date a datagram
    // in the future or far in the past).
    int64_t monotonic_now = nanoseconds(CLOCK_MONOTONIC);
    int64_t realtime_now = nanoseconds(CLOCK_REALTIME);
    for (int i = 0; i < received; i++) {
        struct msghdr *header = &receiver->messages[i].msg_hdr;
        infos[i].length = receiver->messages[i].msg_len;
        infos[i].truncated = (header->msg_flags & MSG_TRUNC) != 0;
        int64_t kernel = read_control(header, &infos[i].segment_size);
        int64_t age = 0;
        if (kernel >= 0) {
            age = realtime_now - kernel;
            if (age < 0) age = 0;
            if (age > 10000000000LL) age = 10000000000LL;
        }
        infos[i].arrival_ns = monotonic_now - age;
    }
    return received;
}

uint8_t *playout_receiver_join(playout_receiver *receiver, unsigned index, size_t length) {
    uint8_t *slot = receiver->slots + index * receiver->slot_size;
    if (length <= receiver->slot_size || receiver->overflow == NULL) return slot;
    uint8_t *area = receiver->overflow + index * receiver->overflow_stride;
    memcpy(area, slot, receiver->slot_size);
    return area;
}

const struct sockaddr_storage *playout_receiver_source(const playout_receiver *receiver, unsigned index, socklen_t *length) {
    *length = receiver->messages[index].msg_hdr.msg_namelen;
    return &receiver->sources[index];
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

int playout_epoll_create(void) {
    int fd = epoll_create1(EPOLL_CLOEXEC);
    return fd >= 0 ? fd : -errno;
}

int playout_epoll_add(int epoll_fd, int fd, uint64_t token) {
    struct epoll_event event = {.events = EPOLLIN, .data.u64 = token};
    if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event) == 0) return 0;
    if (errno != EEXIST) return -errno;
    return epoll_ctl(epoll_fd, EPOLL_CTL_MOD, fd, &event) == 0 ? 0 : -errno;
}

int playout_epoll_remove(int epoll_fd, int fd) {
    struct epoll_event unused = {0};  // kernels before 2.6.9 wanted one
    return epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, &unused) == 0 ? 0 : -errno;
}

int playout_epoll_wait(int epoll_fd, uint64_t *tokens, int capacity, int timeout_ms) {
    struct epoll_event events[PLAYOUT_EPOLL_MAX_EVENTS];
    if (capacity > PLAYOUT_EPOLL_MAX_EVENTS) capacity = PLAYOUT_EPOLL_MAX_EVENTS;
    if (capacity < 1) return -EINVAL;
    int ready = epoll_wait(epoll_fd, events, capacity, timeout_ms);
    if (ready < 0) return -errno;
    for (int i = 0; i < ready; i++) tokens[i] = events[i].data.u64;
    return ready;
}
