#ifndef PLAYOUT_CSOCKET_H
#define PLAYOUT_CSOCKET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <netinet/in.h>

/// What the kernel told about one received datagram.
typedef struct {
    /// Bytes received (at most the slot size).
    size_t length;
    /// Non-zero when the datagram was larger than its slot and was cut.
    int truncated;
    /// The kernel's receive time (CLOCK_REALTIME, ns), or -1 when not available.
    int64_t kernel_realtime_ns;
    /// The sender's address.
    struct sockaddr_storage source;
    socklen_t source_length;
} playout_datagram_info;

/// The most datagrams one call receives.
#define PLAYOUT_MAX_BATCH 256

/// Receives up to `count` datagrams with one recvmmsg(2) call (MSG_DONTWAIT) into `buffer`, slot
/// i at `buffer + i * slot_size`. Returns the number received, 0 when none was waiting, or
/// -errno.
int playout_receive_batch(int fd, uint8_t *buffer, size_t slot_size, playout_datagram_info *infos, unsigned count);

/// Sends `count` datagrams (slot i at `buffer + i * slot_size`, `lengths[i]` bytes) to one
/// destination with one sendmmsg(2) call. Returns the number sent or -errno.
int playout_send_batch(int fd, const uint8_t *buffer, size_t slot_size, const size_t *lengths, unsigned count,
                       const struct sockaddr *destination, socklen_t destination_length);

/// Enables per-datagram kernel receive timestamps (SO_TIMESTAMPNS). Returns 0 or -errno.
int playout_enable_timestamps(int fd);

#endif
