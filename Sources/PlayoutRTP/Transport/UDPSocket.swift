internal import CSocket
public import Logging
public import PlayoutCore
#if canImport(Glibc)
import Glibc
import SwiftOverlayShims
#endif

/// Receives UDP datagrams in batches (`recvmmsg`), each with its arrival instant on the monotonic
/// clock, on IPv4 or IPv6, unicast or multicast.
///
/// The receiver owns its buffers, set up once and reused by every call: a slot of
/// ``Configuration/slotSize`` bytes per datagram of a batch, packed together, and behind them an
/// overflow area that large datagrams (up to ``Configuration/maxDatagramSize``, by default the
/// largest UDP payload) continue into — mapped, but committed only where a large datagram was
/// written. Datagrams are handed to the caller as contiguous views, valid during the callback.
/// Steady-state receiving allocates nothing, and the system-call state (messages, vectors,
/// control buffers) is only reset where the kernel changed it. Owned by one task (not
/// `Sendable`): confine, don't share.
///
/// ```swift
/// let receiver = try UDPReceiver(bindingTo: SocketAddress(parsing: "0.0.0.0:5004"))
/// try receiver.receive(timeout: .milliseconds(100)) { datagram in
///     let packet = try? RTPPacket(parsing: datagram.bytes)   // arrived at datagram.arrival
/// }
/// ```
public final class UDPReceiver {
    /// Receiver settings; the defaults suit a 50 Mbit/s stream.
    public struct Configuration: Equatable, Sendable {
        /// The default ``maxDatagramSize``: 65,535 bytes, the most a UDP datagram carries.
        public static let defaultMaxDatagramSize = 65_535
        /// The default ``slotSize``: 2,048 bytes, more than an Ethernet MTU's datagram.
        public static let defaultSlotSize = 2_048

        /// Datagrams fetched per system call (default 64, at most 256).
        public var batchSize: Int
        /// The largest datagram kept whole (default ``defaultMaxDatagramSize``); larger ones are
        /// cut, counted in ``Statistics/datagramsTruncated`` and warned about once.
        public var maxDatagramSize: Int
        /// The bytes of each datagram received into the densely packed slots (default
        /// ``defaultSlotSize``, at most ``maxDatagramSize``). Larger datagrams continue into the
        /// overflow area and cost one copy of this many bytes to be made contiguous.
        public var slotSize: Int
        /// The kernel's receive buffer (SO_RCVBUF), default 8 MiB (capped by `net.core.rmem_max`),
        /// so bursts are not dropped.
        public var receiveBufferSize: Int
        /// Whether each datagram's arrival is the kernel's receive timestamp (SO_TIMESTAMPNS,
        /// default) — exact even when datagrams queue up — or the time the batch was read, which
        /// saves the kernel ≈ 100 ns per datagram but dates queued datagrams late.
        public var kernelTimestamps: Bool
        /// Whether the kernel may hand over a run of same-sized datagrams from one sender — a
        /// sender's UDP GSO batch, or what the network card's GRO joined — as one buffer
        /// (`UDP_GRO`), which the receiver splits back into its datagrams: one receive and one
        /// copy for the run instead of one per datagram, and on loopback no splitting in the
        /// kernel at all (default; only with a ``maxDatagramSize`` of 65,535 bytes, as a joined
        /// buffer may be that long). The datagrams, their bytes and arrival are the same.
        public var receiveOffload: Bool

        public init(
            batchSize: Int = 64, maxDatagramSize: Int = Self.defaultMaxDatagramSize, slotSize: Int = Self.defaultSlotSize,
            receiveBufferSize: Int = 8 << 20, kernelTimestamps: Bool = true, receiveOffload: Bool = true
        ) {
            self.batchSize = min(max(batchSize, 1), Int(PLAYOUT_MAX_BATCH))
            self.maxDatagramSize = min(max(maxDatagramSize, 64), Self.defaultMaxDatagramSize)
            self.slotSize = min(max(slotSize, 64), self.maxDatagramSize)
            self.receiveBufferSize = receiveBufferSize
            self.kernelTimestamps = kernelTimestamps
            self.receiveOffload = receiveOffload
        }
    }

    /// One received datagram: a view into the receiver's buffers, valid during the callback.
    public struct Datagram {
        public let bytes: UnsafeRawBufferPointer
        /// When it arrived: the kernel's receive timestamp mapped to the monotonic clock (or the
        /// time of the system call when the kernel gave none).
        public let arrival: MonotonicInstant
        /// Whether it was larger than ``Configuration/maxDatagramSize`` and was cut.
        public let isTruncated: Bool
        let state: OpaquePointer
        let index: UInt32

        /// The same bytes, writable: SRTP decrypts in place in the receive buffer.
        public var mutableBytes: UnsafeMutableRawBufferPointer {
            UnsafeMutableRawBufferPointer(mutating: bytes)
        }

        /// The sender's address (allocates a string: for diagnostics, not per packet).
        public var source: SocketAddress? {
            var length = socklen_t(0)
            return playout_receiver_source(state, index, &length).map { SocketAddress(storage: $0.pointee) } ?? nil
        }
    }

    /// Counters since creation.
    public struct Statistics: Equatable, Sendable {
        public var datagramsReceived = 0
        public var bytesReceived = 0
        /// Datagrams larger than ``Configuration/maxDatagramSize``, cut to it.
        public var datagramsTruncated = 0
        /// Datagrams larger than ``Configuration/slotSize`` (kept whole through the overflow area).
        public var datagramsLarge = 0
        /// System calls that returned at least one datagram.
        public var batches = 0
        /// Buffers in which the kernel handed over several datagrams at once
        /// (``Configuration/receiveOffload``); their datagrams count in ``datagramsReceived``.
        public var joinedBuffers = 0
    }

    public let configuration: Configuration
    /// The address actually bound (with the port the kernel chose when binding port 0).
    public let localAddress: SocketAddress
    public private(set) var statistics = Statistics()

    private let descriptor: Int32
    /// The socket, for waiting on several receivers with one `poll` (receive with a zero timeout
    /// once it is readable).
    public var fileDescriptor: Int32 { descriptor }
    private let state: OpaquePointer
    private let slots: UnsafeMutablePointer<UInt8>
    private let slotSize: Int
    private let infos: UnsafeMutablePointer<playout_datagram_info>
    private let logger: Logger
    private var warnedTruncation = false

    /// Binds `address`. For a multicast group, binds the group's port on every interface and
    /// joins the group (on `interfaceIndex`, 0 = the kernel's choice). `logger` gets the one
    /// warning about datagrams cut to ``Configuration/maxDatagramSize``.
    public init(
        bindingTo address: SocketAddress, configuration: Configuration = Configuration(), interfaceIndex: UInt32 = 0,
        logger: Logger = Logger(label: "playout.udp")
    ) throws(UDPError) {
        self.configuration = configuration
        self.logger = logger
        let family = address.isIPv6 ? AF_INET6 : AF_INET
        let descriptor = socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw UDPError.from(errno: errno, operation: "open a UDP socket for", address: address) }
        var ok = false
        defer { if !ok { close(descriptor) } }

        var size = Int32(clamping: configuration.receiveBufferSize)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        if configuration.kernelTimestamps { _ = playout_enable_timestamps(descriptor) }
        // A kernel without UDP_GRO (before 5.0) hands over every datagram on its own, as before.
        if configuration.receiveOffload, configuration.maxDatagramSize >= Configuration.defaultMaxDatagramSize { _ = playout_enable_gro(descriptor) }
        let multicast = address.isMulticast
        if multicast {
            var on: Int32 = 1
            _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        }
        if address.isIPv6 {
            var on: Int32 = 1  // IPv6 only, so an IPv4 receiver can share the port number
            _ = setsockopt(descriptor, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &on, socklen_t(MemoryLayout<Int32>.size))
        }

        var storage = sockaddr_storage()
        // A multicast receiver binds the wildcard address with the group's port.
        let bindHost = multicast ? (address.isIPv6 ? "::" : "0.0.0.0") : address.host
        guard let length = SocketAddress.fill(&storage, host: bindHost, port: address.port) else {
            throw UDPError(.invalidAddress, "'\(address.host)' is not an IPv4 or IPv6 address")
        }
        let bound = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard bound == 0 else { throw UDPError.from(errno: errno, operation: "bind", address: address) }
        if multicast {
            try Self.join(descriptor, group: address, interfaceIndex: interfaceIndex)
        }

        var actual = sockaddr_storage()
        var actualLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &actualLength) }
        }
        let boundPort = SocketAddress(storage: actual)?.port ?? address.port
        localAddress = (try? SocketAddress(host: address.host, port: boundPort)) ?? address

        guard let state = playout_receiver_create(configuration.slotSize, configuration.maxDatagramSize, UInt32(configuration.batchSize)) else {
            throw UDPError.from(errno: ENOMEM, operation: "allocate receive buffers for", address: address)
        }
        self.descriptor = descriptor
        self.state = state
        slots = playout_receiver_slots(state)
        slotSize = configuration.slotSize
        infos = .allocate(capacity: configuration.batchSize)
        infos.initialize(repeating: playout_datagram_info(), count: configuration.batchSize)
        ok = true
    }

    deinit {
        close(descriptor)
        playout_receiver_destroy(state)
        infos.deallocate()
    }

    private static func join(_ descriptor: Int32, group: SocketAddress, interfaceIndex: UInt32) throws(UDPError) {
        var storage = sockaddr_storage()
        _ = SocketAddress.fill(&storage, host: group.host, port: group.port)
        let result: Int32 = withUnsafeBytes(of: storage) { raw in
            if group.isIPv6 {
                var request = ipv6_mreq()
                request.ipv6mr_multiaddr = raw.load(as: sockaddr_in6.self).sin6_addr
                request.ipv6mr_interface = interfaceIndex
                return setsockopt(descriptor, Int32(IPPROTO_IPV6), IPV6_ADD_MEMBERSHIP, &request, socklen_t(MemoryLayout<ipv6_mreq>.size))
            }
            var request = ip_mreqn()
            request.imr_multiaddr = raw.load(as: sockaddr_in.self).sin_addr
            request.imr_ifindex = Int32(interfaceIndex)
            return setsockopt(descriptor, Int32(IPPROTO_IP), IP_ADD_MEMBERSHIP, &request, socklen_t(MemoryLayout<ip_mreqn>.size))
        }
        guard result == 0 else { throw UDPError.from(errno: errno, operation: "join multicast group", address: group) }
    }

    /// Waits up to `timeout` (nil: forever, zero: not at all) for datagrams, receives one batch
    /// and calls `body` with each, in arrival order (a buffer the kernel joined split back into
    /// its datagrams). Returns how many were received (0 on timeout).
    @discardableResult
    public func receive(timeout: Duration?, _ body: (Datagram) throws -> Void) throws -> Int {
        // Try first: under load datagrams are already queued and the wait is a wasted system call.
        var received = playout_receiver_receive(state, descriptor, infos)
        if received == 0 {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let milliseconds = timeout.map { Int32(clamping: max(0, ($0.nanoseconds + 999_999) / 1_000_000)) } ?? -1
            let ready = poll(&poller, 1, milliseconds)
            if ready < 0 {
                if errno == EINTR { return 0 }
                throw UDPError.from(errno: errno, operation: "wait for datagrams on", address: localAddress)
            }
            guard ready > 0 else { return 0 }
            received = playout_receiver_receive(state, descriptor, infos)
        }
        if received < 0 { throw UDPError.from(errno: -received, operation: "receive on", address: localAddress) }
        guard received > 0 else { return 0 }
        let count = Int(received)
        var datagrams = 0
        var bytes = 0
        var truncated = 0
        var large = 0
        var joined = 0
        defer {
            statistics.batches += 1
            statistics.datagramsReceived += datagrams
            statistics.bytesReceived += bytes
            if large > 0 { statistics.datagramsLarge += large }
            if joined > 0 { statistics.joinedBuffers += joined }
            if truncated > 0 { countTruncated(truncated) }
        }
        let slot = slotSize
        for index in 0..<count {
            let info = infos[index]
            let length = Int(info.length)
            var start = slots + index * slot
            if length > slot {
                start = playout_receiver_join(state, UInt32(index), length)
                large += 1
            }
            bytes += length
            if info.truncated != 0 { truncated += 1 }
            // A joined buffer: datagrams of `segment` bytes, the last one possibly shorter.
            let segment = info.segment_size > 0 && Int(info.segment_size) < length ? Int(info.segment_size) : length
            if segment < length { joined += 1 }
            var offset = 0
            while offset < length {
                let end = min(offset + segment, length)
                datagrams += 1
                try body(Datagram(
                    bytes: UnsafeRawBufferPointer(start: start + offset, count: end - offset),
                    arrival: MonotonicInstant(nanoseconds: info.arrival_ns),
                    isTruncated: info.truncated != 0 && end == length,
                    state: state,
                    index: UInt32(index)
                ))
                offset = end
            }
        }
        return datagrams
    }

    /// Sends one datagram from this socket's bound address to `destination` — symmetric RTCP
    /// (RFC 4961): a receiver's reports and feedback leave from the port its sender's RTCP
    /// arrives on, and a sender's reports from the port it takes feedback on. Safe while another
    /// thread receives on the socket.
    public func send(_ bytes: UnsafeRawBufferPointer, to destination: SocketAddress) throws(UDPError) {
        var storage = sockaddr_storage()
        guard let length = SocketAddress.fill(&storage, host: destination.host, port: destination.port) else {
            throw UDPError(.invalidAddress, "'\(destination.host)' is not an IPv4 or IPv6 address")
        }
        let sent = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(descriptor, bytes.baseAddress, bytes.count, 0, $0, length)
            }
        }
        if sent < 0 { throw UDPError.from(errno: errno, operation: "send to", address: destination) }
    }

    private func countTruncated(_ count: Int) {
        statistics.datagramsTruncated += count
        guard !warnedTruncation else { return }
        warnedTruncation = true
        logger.warning(
            "datagrams larger than \(configuration.maxDatagramSize) bytes arrive on \(localAddress) and are cut (counted in datagramsTruncated; this is said once): raise maxDatagramSize"
        )
    }
}

/// Sends UDP datagrams to one destination, singly or in batches (`sendmmsg`). For the test
/// publisher. Owned by one task.
public final class UDPSender {
    /// Where datagrams go.
    public let destination: SocketAddress
    private let descriptor: Int32
    private var storage = sockaddr_storage()
    private let storageLength: socklen_t

    /// Opens a socket for sending to `destination`. Multicast datagrams get `multicastTTL` hops
    /// (default 1: this link only; 0: this host only) and leave through `multicastInterfaceIndex`
    /// (0: the kernel's choice).
    public init(to destination: SocketAddress, multicastTTL: Int32 = 1, multicastInterfaceIndex: UInt32 = 0) throws(UDPError) {
        self.destination = destination
        let descriptor = socket(destination.isIPv6 ? AF_INET6 : AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw UDPError.from(errno: errno, operation: "open a UDP socket for", address: destination) }
        guard let length = SocketAddress.fill(&storage, host: destination.host, port: destination.port) else {
            close(descriptor)
            throw UDPError(.invalidAddress, "'\(destination.host)' is not an IPv4 or IPv6 address")
        }
        if destination.isMulticast {
            var ttl = multicastTTL
            if destination.isIPv6 {
                _ = setsockopt(descriptor, Int32(IPPROTO_IPV6), IPV6_MULTICAST_HOPS, &ttl, socklen_t(MemoryLayout<Int32>.size))
                var index = multicastInterfaceIndex
                if index != 0 {
                    _ = setsockopt(descriptor, Int32(IPPROTO_IPV6), IPV6_MULTICAST_IF, &index, socklen_t(MemoryLayout<UInt32>.size))
                }
            } else {
                _ = setsockopt(descriptor, Int32(IPPROTO_IP), IP_MULTICAST_TTL, &ttl, socklen_t(MemoryLayout<Int32>.size))
                if multicastInterfaceIndex != 0 {
                    var request = ip_mreqn()
                    request.imr_ifindex = Int32(multicastInterfaceIndex)
                    _ = setsockopt(descriptor, Int32(IPPROTO_IP), IP_MULTICAST_IF, &request, socklen_t(MemoryLayout<ip_mreqn>.size))
                }
            }
        }
        var size: Int32 = 4 << 20
        _ = setsockopt(descriptor, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        self.descriptor = descriptor
        storageLength = length
    }

    deinit {
        close(descriptor)
    }

    /// Sends one datagram.
    public func send(_ bytes: UnsafeRawBufferPointer) throws(UDPError) {
        let sent = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(descriptor, bytes.baseAddress, bytes.count, 0, $0, storageLength)
            }
        }
        if sent < 0 { throw UDPError.from(errno: errno, operation: "send to", address: destination) }
    }

    /// Sends one datagram (convenience).
    public func send(_ bytes: [UInt8]) throws(UDPError) {
        let result: Result<Void, UDPError> = bytes.withUnsafeBytes { raw in
            Result { () throws(UDPError) in try send(raw) }
        }
        try result.get()
    }

    /// Sends `lengths.count` datagrams laid out in `buffer` at multiples of `slotSize`, with as
    /// few system calls as the kernel allows. Returns how many were sent.
    @discardableResult
    public func send(batch buffer: UnsafeRawBufferPointer, slotSize: Int, lengths: [Int]) throws(UDPError) -> Int {
        precondition(lengths.count * slotSize <= buffer.count || lengths.isEmpty, "the batch does not fit the buffer")
        var sent = 0
        while sent < lengths.count {
            let count = min(lengths.count - sent, 256)
            let result: Int32 = lengths[sent..<sent + count].map { Int($0) }.withUnsafeBufferPointer { sizes in
                withUnsafePointer(to: &storage) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                        playout_send_batch(
                            descriptor, buffer.baseAddress!.assumingMemoryBound(to: UInt8.self) + sent * slotSize, slotSize,
                            sizes.baseAddress, UInt32(count), address, storageLength
                        )
                    }
                }
            }
            if result < 0 { throw UDPError.from(errno: -result, operation: "send to", address: destination) }
            sent += Int(result)
        }
        return sent
    }
}
