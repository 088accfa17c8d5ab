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
/// fan-out's send path. Each datagram is written straight into its slot (``append(to:_:)``);
/// when the batch is full, or on ``flush()``, all of them leave with one call. The slots, the
/// message headers and the address copies are allocated once: sending allocates nothing.
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
    private var count = 0

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
    public init(socket descriptor: Int32, capacity: Int = DatagramBatch.defaultCapacity, slotSize: Int = DatagramBatch.defaultSlotSize) {
        self.descriptor = descriptor
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
        for index in 0..<self.capacity {
            vectors[index].iov_base = slots.baseAddress! + index * self.slotSize
            var message = msghdr()
            message.msg_name = UnsafeMutableRawPointer(names + index)
            message.msg_iov = vectors + index
            message.msg_iovlen = 1
            (messages + index * messageStride).storeBytes(of: message, as: msghdr.self)
        }
    }

    deinit {
        slots.deallocate()
        names.deallocate()
        vectors.deallocate()
        messages.deallocate()
    }

    /// Datagrams waiting for the next call.
    public var pending: Int { count }

    /// Writes one datagram for `destination` into the next slot: `write` gets the slot
    /// (``slotSize`` bytes) and returns the datagram's length (0 or less: nothing is sent). A
    /// full batch is sent first. Returns the length written.
    @discardableResult
    public func append(to destination: DatagramDestination, _ write: (UnsafeMutableRawBufferPointer) -> Int) -> Int {
        if count == capacity { flush() }
        let slot = UnsafeMutableRawBufferPointer(rebasing: slots[count * slotSize..<(count + 1) * slotSize])
        let length = min(write(slot), slotSize)
        guard length > 0 else { return 0 }
        names[count] = destination.storage
        vectors[count].iov_len = length
        let message = messages + count * messageStride
        message.storeBytes(of: destination.length, toByteOffset: MemoryLayout<msghdr>.offset(of: \msghdr.msg_namelen)!, as: socklen_t.self)
        count += 1
        return length
    }

    /// Copies `bytes` into the next slot for `destination` (cut to ``slotSize``).
    public func append(_ bytes: UnsafeRawBufferPointer, to destination: DatagramDestination) {
        append(to: destination) { slot in
            let length = min(bytes.count, slot.count)
            if length > 0, let source = bytes.baseAddress { slot.baseAddress!.copyMemory(from: source, byteCount: length) }
            return length
        }
    }

    /// Sends every datagram waiting, with as few system calls as the kernel allows. A datagram
    /// the kernel refuses is dropped and counted (``Statistics/datagramsFailed``); the rest still go.
    public func flush() {
        var first = 0
        while first < count {
            let sent: Int32
            if let sendMultiple = Self.sendMultiple.function {
                sent = sendMultiple(descriptor, messages + first * messageStride, UInt32(count - first), 0)
            } else {
                let name = UnsafeRawPointer(names + first).assumingMemoryBound(to: sockaddr.self)
                let length = (messages + first * messageStride).load(fromByteOffset: MemoryLayout<msghdr>.offset(of: \msghdr.msg_namelen)!, as: socklen_t.self)
                sent = sendto(descriptor, vectors[first].iov_base, vectors[first].iov_len, 0, name, length) < 0 ? -1 : 1
            }
            statistics.systemCalls += 1
            if sent <= 0 {
                let error = errno
                if error == EINTR { continue }
                // The first datagram is refused: drop it and go on with the rest.
                statistics.datagramsFailed += 1
                statistics.lastError = error
                first += 1
                continue
            }
            for index in first..<first + Int(sent) {
                statistics.bytesSent += vectors[index].iov_len
            }
            statistics.datagramsSent += Int(sent)
            first += Int(sent)
        }
        count = 0
    }
}
