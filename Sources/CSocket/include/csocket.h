#ifndef PLAYOUT_CSOCKET_H
#define PLAYOUT_CSOCKET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <netinet/in.h>

/// What the kernel told about one received datagram (16 bytes, so a batch's infos share few cache
/// lines).
typedef struct {
    /// Bytes received (at most the receiver's largest datagram size).
    uint32_t length;
    /// Non-zero when the datagram was larger than the receiver's largest datagram size and was cut.
    uint16_t truncated;
    /// With UDP_GRO (playout_enable_gro): the size of each datagram the kernel joined into this
    /// buffer (the last may be shorter), or 0 for one datagram.
    uint16_t segment_size;
    /// When it arrived, in nanoseconds on CLOCK_MONOTONIC: the kernel's receive timestamp mapped
    /// onto the monotonic clock, or the time of the system call when the kernel gave none.
    int64_t arrival_ns;
} playout_datagram_info;

/// The most datagrams one call receives.
#define PLAYOUT_MAX_BATCH 256

/// A batched receiver's memory and system-call state, set up once and reused by every call: the
/// datagram slots, an overflow area for large datagrams, and one mmsghdr, two iovecs (the slot,
/// then the overflow), a control buffer and a source address per datagram. Only what the kernel
/// changed is reset between calls. Opaque: create with playout_receiver_create.
typedef struct playout_receiver playout_receiver;

/// Sets up a receiver of up to `count` (at most PLAYOUT_MAX_BATCH) datagrams per call, each up to
/// `max_datagram_size` bytes. Datagram i is received into slot i (`slot_size` bytes, the slots
/// packed together, so that small datagrams stay dense in the cache); when `max_datagram_size`
/// is larger, the rest of a large datagram lands in datagram i's part of an overflow area that is
/// mapped but committed only where written. Returns NULL when memory runs out.
playout_receiver *playout_receiver_create(size_t slot_size, size_t max_datagram_size, unsigned count);
void playout_receiver_destroy(playout_receiver *receiver);

/// The first slot; slot i is at `slots + i * slot_size`.
uint8_t *playout_receiver_slots(const playout_receiver *receiver);

/// Receives up to the set-up count of datagrams from `fd` with one recvmmsg(2) call
/// (MSG_DONTWAIT) and fills `infos[0..<n]`. Returns n, 0 when none was waiting, or -errno.
int playout_receiver_receive(playout_receiver *receiver, int fd, playout_datagram_info *infos);

/// The contiguous bytes of datagram `index` of the last call, `length` bytes long: its slot when
/// it fitted there, else its overflow area with the slot's part copied in front of the rest.
uint8_t *playout_receiver_join(playout_receiver *receiver, unsigned index, size_t length);

/// The source address of datagram `index` of the last call; its length in `*length`.
const struct sockaddr_storage *playout_receiver_source(const playout_receiver *receiver, unsigned index, socklen_t *length);

/// Sends `count` datagrams (slot i at `buffer + i * slot_size`, `lengths[i]` bytes) to one
/// destination with one sendmmsg(2) call. Returns the number sent or -errno.
int playout_send_batch(int fd, const uint8_t *buffer, size_t slot_size, const size_t *lengths, unsigned count,
                       const struct sockaddr *destination, socklen_t destination_length);

/// Enables per-datagram kernel receive timestamps (SO_TIMESTAMPNS). Returns 0 or -errno.
int playout_enable_timestamps(int fd);

/// Lets the kernel hand over a run of datagrams of one size from one sender (a sender's UDP GSO
/// batch, or what GRO joined) as one buffer, with its datagram size in `segment_size` (UDP_GRO,
/// Linux 5.0). Only for a receiver whose largest datagram size is 65,535 bytes: a joined buffer is
/// up to that long. Returns 0 or -errno.
int playout_enable_gro(int fd);

/// The most events one playout_epoll_wait returns.
#define PLAYOUT_EPOLL_MAX_EVENTS 256

/// An epoll instance (close-on-exec), for a thread that waits on many sockets at once: a wait
/// costs what is ready, not how many are watched. Returns its descriptor or -errno.
int playout_epoll_create(void);

/// Watches `fd` for input (level-triggered); its events carry `token`. Watching it again
/// replaces the token. Returns 0 or -errno.
int playout_epoll_add(int epoll_fd, int fd, uint64_t token);

/// Stops watching `fd`, which must still be open. Returns 0 or -errno.
int playout_epoll_remove(int epoll_fd, int fd);

/// Waits up to `timeout_ms` (-1: forever) and writes the tokens of up to `capacity` (at most
/// PLAYOUT_EPOLL_MAX_EVENTS) ready descriptors to `tokens`. Returns how many, or -errno.
int playout_epoll_wait(int epoll_fd, uint64_t *tokens, int capacity, int timeout_ms);

#endif
