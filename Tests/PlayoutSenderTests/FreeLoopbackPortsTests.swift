import Foundation
import Playout
import PlayoutCore
import PlayoutRTP
import PlayoutSender
import Testing

@Suite("free loopback ports")
struct FreeLoopbackPortsTests {
    @Test("four consecutive ports from an even one, all bindable on 127.0.0.1 and on 0.0.0.0", arguments: 0..<5)
    func fourPorts(round: Int) throws {
        let ports = try SocketAddress.freeLoopbackPorts(count: 4)
        #expect(ports.count == 4)
        #expect(ports.lowerBound % 2 == 0)
        #expect(SocketAddress.freeLoopbackPortRange.contains(ports.lowerBound) && SocketAddress.freeLoopbackPortRange.contains(ports.upperBound))
        do {
            let loopback = try ports.map { try UDPReceiver(bindingTo: SocketAddress(host: "127.0.0.1", port: $0)) }
            #expect(loopback.map(\.localAddress.port) == Array(ports))
        }
        let wildcard = try ports.map { try UDPReceiver(bindingTo: SocketAddress(host: "0.0.0.0", port: $0)) }
        #expect(wildcard.count == 4)
    }

    @Test("ports held by someone else are never handed out")
    func skipsHeldPorts() throws {
        // Hold a whole block of the range, then ask many times: no answer overlaps it.
        let held = try SocketAddress.freeLoopbackPorts(count: 64)
        let holders = held.compactMap { try? UDPReceiver(bindingTo: SocketAddress(host: "127.0.0.1", port: $0)) }
        #expect(holders.count == 64)
        for _ in 0..<200 {
            let ports = try SocketAddress.freeLoopbackPorts(count: 4)
            #expect(!ports.overlaps(held), "\(ports) overlaps the held \(held)")
        }
    }

    @Test("a count outside 1…64 is a clear error", arguments: [0, -1, 65, Int.max, Int.min])
    func badCount(count: Int) {
        let error = #expect(throws: PlayoutError.self) { try SocketAddress.freeLoopbackPorts(count: count) }
        #expect(error?.message.contains("count must be from 1 to 64") == true)
    }

    @Test("the publisher's destination: 127.0.0.1 and a port the publisher accepts")
    func publisherDestination() throws {
        let destination = try Publisher.freeLoopbackDestination()
        #expect(destination.host == "127.0.0.1")
        #expect(destination.port % 2 == 0)
        #expect(Publisher.Options.destinationPorts.contains(destination.port))
        try Publisher.Options(destination: destination).validate()
    }

    @Test("the publisher refuses port 0 and ports whose PORT+3 passes 65535, naming the API", arguments: [UInt16(0), 65_533, 65_534, 65_535])
    func publisherRefusesPort(port: UInt16) throws {
        let options = Publisher.Options(destination: try SocketAddress(host: "127.0.0.1", port: port), sendsAudio: false)
        let error = #expect(throws: PlayoutError.self) { try Publisher(options: options) }
        #expect(error?.code == .invalidAddress)
        #expect(error?.message.hasPrefix("Publisher.Options.destination 127.0.0.1:\(port): ") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("from 1 to 65532") == true)
        #expect(error?.message.contains("--") == false)
    }

    @Test("the edges of the range are accepted", arguments: [UInt16(1), 65_532])
    func publisherEdges(port: UInt16) throws {
        try Publisher.Options(destination: try SocketAddress(host: "127.0.0.1", port: port)).validate()
    }
}
