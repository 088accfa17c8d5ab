#if canImport(Glibc)
import Glibc
#endif
import Playout
public import PlayoutCore
public import PlayoutRTP

extension SocketAddress {
    /// The ports ``freeLoopbackPorts(count:)`` draws from: 20000…32767, below Linux's default
    /// ephemeral range (32768…60999), so that a socket the kernel numbers itself (a sender's
    /// source port, a bind to port 0) does not take one of them between the check and their use.
    public static let freeLoopbackPortRange: ClosedRange<UInt16> = 20_000...32_767

    /// `count` consecutive UDP ports, the first one even, that are all free on 127.0.0.1 at the
    /// time of the call — free on every IPv4 address in fact, so a receiver bound to 127.0.0.1
    /// and one bound to 0.0.0.0 (as ``Subscriber`` binds) can both take them. Each candidate is
    /// checked by binding all its ports and releasing them.
    ///
    /// Another process may still take a port between this call and its use; the ports come from
    /// ``freeLoopbackPortRange``, away from the ones the kernel hands out by itself, and at
    /// random, so two tests running at once rarely pick the same ones.
    ///
    /// ```swift
    /// let ports = try SocketAddress.freeLoopbackPorts(count: 2)   // e.g. 24318...24319
    /// let receiver = try UDPReceiver(bindingTo: SocketAddress(host: "127.0.0.1", port: ports.lowerBound))
    /// ```
    ///
    /// - Parameter count: How many ports, 1…64.
    /// - Returns: The ports, `first...first + count - 1`, with `first` even.
    /// - Throws: ``PlayoutError`` with code `invalidOption` for a count outside 1…64, or
    ///   `addressInUse` when no free run was found in 256 tries.
    public static func freeLoopbackPorts(count: Int) throws(PlayoutError) -> ClosedRange<UInt16> {
        guard (1...64).contains(count) else {
            throw PlayoutError(.invalidOption, "SocketAddress.freeLoopbackPorts(count: \(count)): count must be from 1 to 64")
        }
        let range = freeLoopbackPortRange
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<256 {
            let first = UInt16.random(in: range.lowerBound...(range.upperBound - UInt16(count) + 1), using: &generator) & ~1
            let ports = first...(first + UInt16(count - 1))
            if allBindable(ports), handedOut.withLock({ $0.claim(ports) }) { return ports }
        }
        throw PlayoutError(
            .addressInUse,
            "found no \(count) consecutive free UDP ports in \(range.lowerBound)…\(range.upperBound) on 127.0.0.1 in 256 tries: stop programs holding ports there"
        )
    }

    /// The ports this process was given lately: two callers in one process (tests running at
    /// once) never get the same port, even before either has bound it.
    private static let handedOut = LockedValue(RecentPorts())

    /// The last ports handed out, oldest forgotten first.
    private struct RecentPorts {
        /// How many ports are remembered: far fewer than the range holds, more than any run
        /// uses at once.
        static let capacity = 4_096
        var order: [UInt16] = []
        var ports: Set<UInt16> = []

        /// Remembers `range` unless one of its ports was handed out lately.
        mutating func claim(_ range: ClosedRange<UInt16>) -> Bool {
            guard ports.isDisjoint(with: range) else { return false }
            for port in range { order.append(port); ports.insert(port) }
            if order.count > Self.capacity {
                let forgotten = order.count - Self.capacity
                ports.subtract(order.prefix(forgotten))
                order.removeFirst(forgotten)
            }
            return true
        }
    }

    /// Remembers `ports` as handed out unless one of them was lately (see ``freeLoopbackPorts(count:)``).
    static func claimLoopbackPorts(_ ports: ClosedRange<UInt16>) -> Bool {
        handedOut.withLock { $0.claim(ports) }
    }

    /// Whether UDP `port` can be bound on 0.0.0.0 now; releases it.
    static func bindable(_ port: UInt16) -> Bool {
        allBindable(port...port)
    }

    /// Whether every port of `ports` can be bound on 0.0.0.0 (UDP) at once; releases them.
    private static func allBindable(_ ports: ClosedRange<UInt16>) -> Bool {
        var descriptors: [Int32] = []
        defer { for descriptor in descriptors { close(descriptor) } }
        for port in ports {
            let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard descriptor >= 0 else { return false }
            descriptors.append(descriptor)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = INADDR_ANY
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else { return false }
        }
        return true
    }
}

extension Publisher {
    /// A destination on 127.0.0.1 whose four ports a ``Publisher`` sends to — PORT (video),
    /// PORT+1 (its RTCP), PORT+2 (audio), PORT+3 (its RTCP), PORT even — are all free now, for
    /// a publisher and a subscriber on one machine (tests, demos).
    ///
    /// ```swift
    /// let publisher = try Publisher(options: .init(destination: try Publisher.freeLoopbackDestination()))
    /// let subscriber = try Subscriber(sessionDescription: publisher.sessionDescription)
    /// ```
    ///
    /// - Throws: ``PlayoutError`` as ``SocketAddress/freeLoopbackPorts(count:)``.
    public static func freeLoopbackDestination() throws(PlayoutError) -> SocketAddress {
        let ports = try SocketAddress.freeLoopbackPorts(count: 4)
        return try SocketAddress(host: "127.0.0.1", port: ports.lowerBound)
    }

    /// A destination on 127.0.0.1 for a publisher that fans out to `fanout` viewers
    /// (``Options/fanout``): the `fanout × stride` ports from it (stride 4 with audio, 2 for video
    /// alone — viewer i at PORT + i × stride) are all free now, PORT even. For tests and demos
    /// of many viewers on one machine.
    ///
    /// - Parameter fanout: How many viewers, 1…3,000.
    /// - Throws: ``PlayoutError`` with code `invalidOption` for a count outside 1…3,000, or
    ///   `addressInUse` when no free run was found in 256 tries.
    public static func freeLoopbackDestination(fanout: Int, sendsAudio: Bool = true) throws(PlayoutError) -> SocketAddress {
        guard (1...3_000).contains(fanout) else {
            throw PlayoutError(.invalidOption, "Publisher.freeLoopbackDestination(fanout: \(fanout)): fanout must be from 1 to 3000")
        }
        let count = fanout * (sendsAudio ? 4 : 2)
        let range = SocketAddress.freeLoopbackPortRange
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<256 {
            let first = UInt16.random(in: range.lowerBound...(range.upperBound - UInt16(count) + 1), using: &generator) & ~1
            let ports = first...(first + UInt16(count - 1))
            // One port at a time: a large run would take more descriptors than a process may hold.
            if ports.allSatisfy({ SocketAddress.bindable($0) }), SocketAddress.claimLoopbackPorts(ports) {
                return try SocketAddress(host: "127.0.0.1", port: first)
            }
        }
        throw PlayoutError(.addressInUse, "found no \(count) consecutive free UDP ports in \(range.lowerBound)…\(range.upperBound) on 127.0.0.1 in 256 tries: stop programs holding ports there")
    }
}
