import Glibc
import PlayoutCore
import PlayoutRTP
import Testing

@Suite("UDP transport")
struct UDPTests {
    /// Sends `count` numbered datagrams of `size` bytes to `receiver` in batches and receives them.
    func roundTrip(host: String, count: Int, size: Int = 1_200) throws {
        let receiver = try UDPReceiver(bindingTo: SocketAddress(host: host, port: 0))
        #expect(receiver.localAddress.port != 0)
        let sender = try UDPSender(to: receiver.localAddress)
        let slot = 2_048
        var batch = [UInt8](repeating: 0, count: slot * count)
        for index in 0..<count {
            for offset in 0..<size { batch[index * slot + offset] = UInt8(truncatingIfNeeded: index &+ offset) }
            batch[index * slot] = UInt8(index & 0xFF)
            batch[index * slot + 1] = UInt8(index >> 8)
        }
        let sent = try batch.withUnsafeBytes { try sender.send(batch: $0, slotSize: slot, lengths: Array(repeating: size, count: count)) }
        #expect(sent == count)
        let before = MonotonicClock().now
        var received: [Int] = []
        var previousArrival = MonotonicInstant.zero
        while received.count < count {
            let got = try receiver.receive(timeout: .seconds(2)) { datagram in
                #expect(datagram.bytes.count == size)
                #expect(!datagram.isTruncated)
                received.append(Int(datagram.bytes[0]) | Int(datagram.bytes[1]) << 8)
                #expect(datagram.arrival >= previousArrival, "arrival instants never go backwards")
                #expect(datagram.arrival <= MonotonicClock().now)
                #expect(before.duration(to: datagram.arrival) > .seconds(-5), "arrival is on the monotonic clock")
                previousArrival = datagram.arrival
            }
            if got == 0 { break }  // timed out: the expectation below reports it
        }
        #expect(received == Array(0..<count))
        #expect(receiver.statistics.datagramsReceived == count)
        #expect(receiver.statistics.batches < count, "datagrams arrive in batches")
    }

    @Test("IPv4 loopback: batched send and receive, in order, with arrival instants")
    func ipv4() throws {
        try roundTrip(host: "127.0.0.1", count: 1_000)
    }

    @Test("IPv6 loopback")
    func ipv6() throws {
        try roundTrip(host: "::1", count: 300)
    }

    @Test("datagrams of 1,500, 8,000 and 65,000 bytes arrive whole, in order, between small ones", arguments: ["127.0.0.1", "::1"])
    func largeDatagrams(host: String) throws {
        let receiver = try UDPReceiver(bindingTo: SocketAddress(host: host, port: 0))
        let sender = try UDPSender(to: receiver.localAddress)
        let sizes = [1_200, 1_500, 8_000, 100, 65_000, 2_048, 2_049, 12, 65_000, 1_200]
        func datagram(_ index: Int) -> [UInt8] {
            (0..<sizes[index]).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ index) }
        }
        for index in sizes.indices { try sender.send(datagram(index)) }
        var received: [[UInt8]] = []
        while received.count < sizes.count {
            let got = try receiver.receive(timeout: .seconds(2)) { datagram in
                #expect(!datagram.isTruncated)
                received.append(Array(datagram.bytes))
            }
            if got == 0 { break }
        }
        #expect(received.count == sizes.count)
        for (index, bytes) in received.enumerated() {
            #expect(bytes == datagram(index), "datagram \(index) of \(sizes[index]) bytes")
        }
        #expect(receiver.statistics.datagramsTruncated == 0)
        #expect(receiver.statistics.datagramsLarge == sizes.filter { $0 > UDPReceiver.Configuration.defaultSlotSize }.count)
        #expect(receiver.statistics.bytesReceived == sizes.reduce(0, +))
    }

    @Test("a large datagram's bytes are writable in place, as SRTP needs")
    func largeDatagramWritable() throws {
        let receiver = try UDPReceiver(bindingTo: SocketAddress(host: "127.0.0.1", port: 0))
        try UDPSender(to: receiver.localAddress).send([UInt8](repeating: 1, count: 9_000))
        var sum = 0
        try receiver.receive(timeout: .seconds(2)) { datagram in
            let bytes = datagram.mutableBytes
            for index in bytes.indices { bytes[index] &+= 1 }
            sum = bytes.reduce(0) { $0 + Int($1) }
        }
        #expect(sum == 18_000)
    }

    @Test("a datagram larger than the configured maximum is cut and counted", arguments: [100, 4_000])
    func truncated(maximum: Int) throws {
        let receiver = try UDPReceiver(bindingTo: SocketAddress(host: "127.0.0.1", port: 0), configuration: .init(maxDatagramSize: maximum))
        let sender = try UDPSender(to: receiver.localAddress)
        try sender.send([UInt8](repeating: 7, count: maximum * 2))
        try sender.send([UInt8](repeating: 8, count: maximum * 3))
        try sender.send([UInt8](repeating: 9, count: 50))
        var seen: [(truncated: Bool, count: Int, allSame: Bool)] = []
        while seen.count < 3 {
            let got = try receiver.receive(timeout: .seconds(2)) { datagram in
                seen.append((datagram.isTruncated, datagram.bytes.count, Set(datagram.bytes).count == 1))
            }
            if got == 0 { break }
        }
        #expect(seen.map(\.truncated) == [true, true, false])
        #expect(seen.map(\.count) == [maximum, maximum, 50])
        #expect(seen.allSatisfy { $0.allSame })
        #expect(receiver.statistics.datagramsTruncated == 2)
    }

    @Test("configuration limits: the largest UDP payload, slots no larger than the maximum")
    func configurationLimits() {
        let defaults = UDPReceiver.Configuration()
        #expect(defaults.maxDatagramSize == 65_535 && defaults.slotSize == 2_048)
        #expect(UDPReceiver.Configuration(maxDatagramSize: 1_000_000).maxDatagramSize == 65_535)
        #expect(UDPReceiver.Configuration(maxDatagramSize: 100).slotSize == 100)
        #expect(UDPReceiver.Configuration(batchSize: 10_000).batchSize == 256)
    }

    @Test("the sender's address is known for each datagram")
    func source() throws {
        let receiver = try UDPReceiver(bindingTo: SocketAddress(host: "127.0.0.1", port: 0))
        try UDPSender(to: receiver.localAddress).send([1, 2, 3])
        var source: SocketAddress?
        try receiver.receive(timeout: .seconds(2)) { source = $0.source }
        #expect(source?.host == "127.0.0.1")
        #expect(source?.port != 0)
    }

    @Test("multicast: join a group on the loopback interface and receive what is sent to it")
    func multicast() throws {
        let loopback = if_nametoindex("lo")
        // A free port: bind port 0, note what the kernel chose, release it.
        let port = try UDPReceiver(bindingTo: SocketAddress(host: "0.0.0.0", port: 0)).localAddress.port
        let group = try SocketAddress(host: "239.255.77.1", port: port)
        let receiver = try UDPReceiver(bindingTo: group, interfaceIndex: loopback)
        // TTL 0: the datagrams never leave this host.
        let sender = try UDPSender(to: group, multicastTTL: 0, multicastInterfaceIndex: loopback)
        try sender.send(Array("hello".utf8))
        var payload: [UInt8] = []
        try receiver.receive(timeout: .seconds(2)) { payload = Array($0.bytes) }
        #expect(payload == Array("hello".utf8))
        #expect(group.isMulticast)
        #expect(try SocketAddress(parsing: "[ff02::1]:5004").isMulticast)
        #expect(!(try SocketAddress(parsing: "127.0.0.1:5004").isMulticast))
    }

    @Test("a port in use is a clear error")
    func portInUse() throws {
        let first = try UDPReceiver(bindingTo: SocketAddress(host: "127.0.0.1", port: 0))
        #expect {
            _ = try UDPReceiver(bindingTo: first.localAddress)
        } throws: { error in
            guard let error = error as? UDPError else { return false }
            return error.code == .addressInUse && error.message.contains("already in use") && error.message.contains("\(first.localAddress.port)")
        }
    }

    @Test("an address that is not on this machine is a clear error")
    func addressNotAvailable() throws {
        #expect {
            // TEST-NET-1 (RFC 5737): never assigned to this machine; bind fails before any traffic.
            _ = try UDPReceiver(bindingTo: SocketAddress(host: "192.0.2.123", port: 0))
        } throws: { error in
            (error as? UDPError)?.code == .addressNotAvailable
        }
    }

    @Test("addresses parse from HOST:PORT and [IPv6]:PORT; bad ones say what to type", arguments: [
        ("127.0.0.1:5004", "127.0.0.1", UInt16(5004)), ("[::1]:6000", "::1", 6000), ("0.0.0.0:0", "0.0.0.0", 0),
    ])
    func parses(text: String, host: String, port: UInt16) throws {
        let address = try SocketAddress(parsing: text)
        #expect(address.host == host && address.port == port)
        #expect(address.description == text)
    }

    @Test("bad addresses", arguments: ["localhost:5004", "127.0.0.1", "127.0.0.1:70000", "::1:5004", "[::1]5004", "1.2.3.4.5:1", ""])
    func rejects(text: String) {
        #expect {
            _ = try SocketAddress(parsing: text)
        } throws: { error in
            (error as? UDPError)?.code == .invalidAddress
        }
    }
}
