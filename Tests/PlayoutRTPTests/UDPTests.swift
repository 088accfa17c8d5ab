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

    @Test("a datagram larger than the slot is cut and counted")
    func truncated() throws {
        let receiver = try UDPReceiver(bindingTo: SocketAddress(host: "127.0.0.1", port: 0), configuration: .init(maxDatagramSize: 100))
        try UDPSender(to: receiver.localAddress).send([UInt8](repeating: 7, count: 500))
        var truncated = false
        try receiver.receive(timeout: .seconds(2)) { truncated = $0.isTruncated && $0.bytes.count == 100 }
        #expect(truncated)
        #expect(receiver.statistics.datagramsTruncated == 1)
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
