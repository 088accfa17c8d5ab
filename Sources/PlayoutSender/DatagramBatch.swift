#if canImport(Glibc)
import Glibc
#endif
public import PlayoutCore
public import PlayoutRTP

/// A destination resolved once into the socket address the kernel takes, so that sending to it
/// costs no parsing or allocation.
public struct DatagramDestination: Sendable, Hashable {
    /// The address, as given.
    public let address: SocketAddress
    fileprivate let storage: sockaddr_storage
    fileprivate let length: socklen_t

    /// Resolves `address` (an IPv4 or IPv6 literal).
    ///
    /// - Throws: ``PlayoutError`` with code `invalidAddress` when the host is not an IP literal.
    public init(_ address: SocketAddress) throws(PlayoutError) {
        self.address = address
        var storage = sockaddr_storage()
        var length = socklen_t(0)
        if address.isIPv6 {
            var value = sockaddr_in6()
            value.sin6_family = sa_family_t(AF_INET6)
            value.sin6_port = address.port.bigEndian
            guard inet_pton(AF_INET6, address.host, &value.sin6_addr) == 1 else {
                throw PlayoutError(.invalidAddress, "'\(address.host)' is not an IPv6 address")
            }
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: value, as: sockaddr_in6.self) }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        } else {
            var value = sockaddr_in()
            value.sin_family = sa_family_t(AF_INET)
            value.sin_port = address.port.bigEndian
            guard inet_pton(AF_INET, address.host, &value.sin_addr) == 1 else {
                throw PlayoutError(.invalidAddress, "'\(address.host)' is not an IPv4 address")
            }
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: value, as: sockaddr_in.self) }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
        }
        self.storage = storage
        self.length = length
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.address == rhs.address }
    public func hash(into hasher: inout Hasher) { hasher.combine(address) }
}

/// Datagrams to many destinations sent with one system call per batch (`sendmmsg(2)`): the
/// fan-out's send path. Each datagram is written straight into its slot (``append(to:joining:_:)``);
/// when the batch is full, or on ``flush()``, all of them leave with one call. Consecutive
/// datagrams to one destination can join one message with UDP generic segmentation offload
/// (`UDP_SEGMENT`, Linux 4.18+): the kernel routes and passes them down as one and splits them
/// into the same datagrams only at the end, which saves most of its per-datagram cost. The slots,
/// the message headers, the control blocks and the address copies are allocated once: sending
/// allocates nothing.
///
/// ```swift
/// let batch = DatagramBatch(socket: socket.fileDescriptor)
/// batch.append(to: destination) { slot in write(packet, into: slot) }   // returns the length
/// batch.flush()
/// ```
///
/// Not `Sendable`: one thread owns it (the publisher's).
public final class DatagramBatch {
    /// The default ``capacity``: 64 datagrams a call.
    public static let defaultCapacity = 64
    /// The default ``slotSize``: 2,048 bytes, an Ethernet datagram and an SRTP trailer.
    public static let defaultSlotSize = 2_048

    /// What it sent.
    public struct Statistics: Equatable, Sendable {
        /// Datagrams handed to the kernel (accepted by `sendmmsg`).
        public var datagramsSent = 0
        /// Their bytes.
        public var bytesSent = 0
        /// System calls made.
        public var systemCalls = 0
        /// Datagrams the kernel refused (e.g. `ENOBUFS`, an unreachable address): dropped, counted.
        public var datagramsFailed = 0
        /// The last error the kernel gave (errno), if any.
        public var lastError: Int32?
        /// Messages that carried several datagrams (segmentation offload).
        public var segmentedMessages = 0

        /// All zero.
        public init() {}
    }

    /// Datagrams per system call.
    public let capacity: Int
    /// The most bytes one datagram may have.
    public let slotSize: Int
    /// What it sent so far.
    public private(set) var statistics = Statistics()

    private let descriptor: Int32
    private let slots: UnsafeMutableRawBufferPointer
    private let names: UnsafeMutablePointer<sockaddr_storage>
    private let vectors: UnsafeMutablePointer<iovec>
    /// The `struct mmsghdr` array, laid out as C lays it out: a `msghdr`, then `msg_len`.
    private let messages: UnsafeMutableRawPointer
    private let messageStride: Int
    /// One `UDP_SEGMENT` control block per message.
    private let controls: UnsafeMutableRawPointer
    /// Datagrams (slots) written, and messages made of them.
    private var count = 0
    private var messageCount = 0
    /// The current message: its first slot, its segment size, whether its last segment was shorter.
    private var messageFirst = 0
    private var segmentSize = 0
    private var closedBySmallSegment = false
    /// Whether segmentation offload is used (off after the kernel refused it once).
    public private(set) var segmenting: Bool

    /// `SOL_UDP` and `UDP_SEGMENT` (linux/udp.h), and the most segments one message may have.
    private static let udpLevel: Int32 = 17
    private static let udpSegment: Int32 = 103
    private static let maximumSegments = 64
    /// `CMSG_LEN(2)` and `CMSG_SPACE(2)` on LP64.
    private static let controlLength = 18
    private static let controlSpace = 24

    /// `sendmmsg` as the C library exports it (Swift's Glibc module does not import it); nil
    /// where it is missing, and then each datagram is sent with `sendto`.
    private static let sendMultiple: SendMultiple = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "sendmmsg") else { return SendMultiple(function: nil) }
        return SendMultiple(function: unsafeBitCast(symbol, to: (@convention(c) (Int32, UnsafeMutableRawPointer?, UInt32, Int32) -> Int32).self))
    }()

    /// The C function, immutable once looked up.
    private struct SendMultiple: @unchecked Sendable {
        let function: (@convention(c) (Int32, UnsafeMutableRawPointer?, UInt32, Int32) -> Int32)?
    }

    /// A batch sending from socket `descriptor` (which the caller keeps open), `capacity`
    /// datagrams (1…256) of up to `slotSize` bytes a call.
    public init(socket descriptor: Int32, capacity: Int = DatagramBatch.defaultCapacity, slotSize: Int = DatagramBatch.defaultSlotSize, segmenting: Bool = true) {
        self.descriptor = descriptor
        self.segmenting = segmenting
        self.capacity = min(max(capacity, 1), 256)
        self.slotSize = max(slotSize, 64)
        slots = .allocate(byteCount: self.capacity * self.slotSize, alignment: 16)
        slots.initializeMemory(as: UInt8.self, repeating: 0)
        names = .allocate(capacity: self.capacity)
        names.initialize(repeating: sockaddr_storage(), count: self.capacity)
        vectors = .allocate(capacity: self.capacity)
        vectors.initialize(repeating: iovec(), count: self.capacity)
        let header = MemoryLayout<msghdr>.size + MemoryLayout<UInt32>.size
        let alignment = MemoryLayout<msghdr>.alignment
        messageStride = (header + alignment - 1) / alignment * alignment
        messages = .allocate(byteCount: messageStride * self.capacity, alignment: alignment)
        messages.initializeMemory(as: UInt8.self, repeating: 0, count: messageStride * self.capacity)
        controls = .allocate(byteCount: Self.controlSpace * self.capacity, alignment: 8)
        controls.initializeMemory(as: UInt8.self, repeating: 0, count: Self.controlSpace * self.capacity)
        for index in 0..<self.capacity {
            vectors[index].iov_base = slots.baseAddress! + index * self.slotSize
            let control = controls + index * Self.controlSpace
            control.storeBytes(of: UInt(Self.controlLength), as: UInt.self)
            control.storeBytes(of: Self.udpLevel, toByteOffset: 8, as: Int32.self)
            control.storeBytes(of: Self.udpSegment, toByteOffset: 12, as: Int32.self)
        }
    }

    deinit {
        slots.deallocate()
        names.deallocate()
        vectors.deallocate()
        messages.deallocate()
        controls.deallocate()
    }

    /// Datagrams waiting for the next call.
    public var pending: Int { count }

    /// Writes one datagram for `destination` into the next slot: `write` gets the slot
    /// (``slotSize`` bytes) and returns the datagram's length (0 or less: nothing is sent). A
    /// full batch is sent first. With `joining` — the previous datagram went to the same
    /// destination — it joins that one's message when segmentation offload allows (every
    /// datagram of a message as long as its first, but the last, which may be shorter); else it
    /// starts a message of its own. Returns the length written.
    @discardableResult
    public func append(to destination: DatagramDestination, joining: Bool = false, _ write: (UnsafeMutableRawBufferPointer) -> Int) -> Int {
        if count == capacity { flush() }
        let slot = UnsafeMutableRawBufferPointer(rebasing: slots[count * slotSize..<(count + 1) * slotSize])
        let length = min(write(slot), slotSize)
        guard length > 0 else { return 0 }
        vectors[count].iov_len = length
        let segments = count - messageFirst
        if segmenting, joining, messageCount > 0, !closedBySmallSegment, length <= segmentSize, segments < Self.maximumSegments,
           (segments + 1) * segmentSize <= 65_000
        {
            // Joins the current message: one more iovec, the segment size in its control block.
            let message = messages + (messageCount - 1) * messageStride
            message.storeBytes(of: segments + 1, toByteOffset: MemoryLayout<msghdr>.offset(of: \msghdr.msg_iovlen)!, as: Int.self)
            let control = controls + (messageCount - 1) * Self.controlSpace
            control.storeBytes(of: UInt16(segmentSize), toByteOffset: 16, as: UInt16.self)
            message.storeBytes(of: control, toByteOffset: MemoryLayout<msghdr>.offset(of: \msghdr.msg_control)!, as: UnsafeMutableRawPointer.self)
            message.storeBytes(of: Self.controlSpace, toByteOffset: MemoryLayout<msghdr>.offset(of: \msghdr.msg_controllen)!, as: Int.self)
            closedBySmallSegment = length < segmentSize
        } else {
            var header = msghdr()
            header.msg_name = UnsafeMutableRawPointer(names + messageCount)
            header.msg_namelen = destination.length
            header.msg_iov = vectors + count
            header.msg_iovlen = 1
            names[messageCount] = destination.storage
            (messages + messageCount * messageStride).storeBytes(of: header, as: msghdr.self)
            messageFirst = count
            messageCount += 1
            segmentSize = length
            closedBySmallSegment = false
        }
        count += 1
        return length
    }

    /// Copies `bytes` into the next slot for `destination` (cut to ``slotSize``).
    public func append(_ bytes: UnsafeRawBufferPointer, to destination: DatagramDestination) {
        append(to: destination, joining: false) { slot in
            let length = min(bytes.count, slot.count)
            if length > 0, let source = bytes.baseAddress { slot.baseAddress!.copyMemory(from: source, byteCount: length) }
            return length
        }
    }

    /// Sends every datagram waiting, with as few system calls as the kernel allows. A message
    /// the kernel refuses is dropped and counted (``Statistics/datagramsFailed``, each of its
    /// datagrams); the rest still go. A refused message of several datagrams turns segmentation
    /// offload off for the batches after it (a kernel without `UDP_SEGMENT`).
    public func flush() {
        var first = 0
        let iovlenOffset = MemoryLayout<msghdr>.offset(of: \msghdr.msg_iovlen)!
        while first < messageCount {
            let message = messages + first * messageStride
            let sent: Int32
            if let sendMultiple = Self.sendMultiple.function {
                sent = sendMultiple(descriptor, message, UInt32(messageCount - first), 0)
            } else {
                sent = sendmsg(descriptor, message.assumingMemoryBound(to: msghdr.self), 0) < 0 ? -1 : 1
            }
            statistics.systemCalls += 1
            if sent <= 0 {
                let error = errno
                if error == EINTR { continue }
                // The first message is refused: drop it and go on with the rest.
                let segments = message.load(fromByteOffset: iovlenOffset, as: Int.self)
                if segments > 1 { segmenting = false }
                statistics.datagramsFailed += segments
                statistics.lastError = error
                first += 1
                continue
            }
            for index in first..<first + Int(sent) {
                let header = (messages + index * messageStride).load(as: msghdr.self)
                let segments = Int(header.msg_iovlen)
                if segments > 1 { statistics.segmentedMessages += 1 }
                statistics.datagramsSent += segments
                for vector in 0..<segments { statistics.bytesSent += header.msg_iov![vector].iov_len }
            }
            first += Int(sent)
        }
        count = 0
        messageCount = 0
        messageFirst = 0
        closedBySmallSegment = false
    }
}
