import PlayoutCore
import PlayoutRTP
import PlayoutSender
import Testing

/// The fan-out's send path on real loopback sockets: datagrams to many destinations in one
/// `sendmmsg`, a viewer's datagrams joined into one segmented (UDP GSO) message where their sizes
/// allow, and every datagram arriving whole, alone and in order.
@Suite("Datagram batch: sendmmsg and UDP segmentation on loopback")
struct DatagramBatchTests {
    /// Receives everything waiting on `receiver` (loopback delivers inside the send call).
    static func drain(_ receiver: UDPReceiver) throws -> [[UInt8]] {
        var datagrams: [[UInt8]] = []
        while try receiver.receive(timeout: .milliseconds(200), { datagrams.append(Array($0.bytes)) }) > 0 {
            if datagrams.count >= 1_000 { break }
        }
        return datagrams
    }

    static func bytes(_ length: Int, _ tag: UInt8) -> [UInt8] {
        (0..<length).map { UInt8(truncatingIfNeeded: $0) ^ tag }
    }

    /// With the receivers' `receiveOffload` (UDP_GRO), loopback hands each segmented message over
    /// whole and the receiver splits it: the same datagrams arrive, in fewer receives.
    @Test("joined runs (equal sizes, a shorter last one) and single datagrams to three receivers arrive whole, one by one, in order", arguments: [true, false], [true, false])
    func segmented(segmenting: Bool, receiveOffload: Bool) throws {
        let configuration = UDPReceiver.Configuration(receiveOffload: receiveOffload)
        let receivers = try (0..<3).map { _ in try UDPReceiver(bindingTo: SocketAddress(host: "127.0.0.1", port: 0), configuration: configuration) }
        let destinations = try receivers.map { try DatagramDestination($0.localAddress) }
        let sender = try UDPReceiver(bindingTo: SocketAddress(host: "127.0.0.1", port: 0))
        let batch = DatagramBatch(socket: sender.fileDescriptor, capacity: 16, segmenting: segmenting)
        // Per receiver: what is sent, and whether each joins the one before.
        let plan: [[(length: Int, joining: Bool)]] = [
            [(1_200, false), (1_200, true), (1_200, true), (700, true), (1_200, true), (1_300, true)],  // a short one ends a run
            [(300, false)],
            [(1_000, false), (1_000, true), (1_000, false), (1_000, true), (1_000, true)],
        ]
        var expected: [[[UInt8]]] = [[], [], []]
        for round in 0..<3 {  // more datagrams than the batch holds: it sends as it fills
            for (index, datagrams) in plan.enumerated() {
                for (number, datagram) in datagrams.enumerated() {
                    let payload = Self.bytes(datagram.length, UInt8(truncatingIfNeeded: round * 16 + number))
                    expected[index].append(payload)
                    batch.append(to: destinations[index], joining: datagram.joining) { slot in
                        slot.copyBytes(from: payload)
                        return payload.count
                    }
                }
            }
        }
        batch.flush()
        #expect(batch.pending == 0)
        for (index, receiver) in receivers.enumerated() {
            #expect(try Self.drain(receiver) == expected[index], "receiver \(index)")
            #expect(receiver.statistics.datagramsReceived == expected[index].count)
        }
        // Joined on arrival exactly when the sender segmented and the receiver takes joined buffers.
        let joined = receivers.reduce(0) { $0 + $1.statistics.joinedBuffers }
        if segmenting && receiveOffload {
            #expect(joined > 0 && receivers[1].statistics.joinedBuffers == 0, "\(receivers.map(\.statistics))")
        } else {
            #expect(joined == 0)
        }
        let total = expected.reduce(0) { $0 + $1.count }
        #expect(batch.statistics.datagramsSent == total)
        #expect(batch.statistics.datagramsFailed == 0)
        #expect(batch.statistics.bytesSent == expected.joined().reduce(0) { $0 + $1.count })
        if segmenting {
            #expect(batch.statistics.segmentedMessages > 0)
        } else {
            #expect(batch.statistics.segmentedMessages == 0)
        }
    }

    @Test("a write that returns nothing sends nothing")
    func nothingAndBadAddress() throws {
        let sender = try UDPReceiver(bindingTo: SocketAddress(host: "127.0.0.1", port: 0))
        let receiver = try UDPReceiver(bindingTo: SocketAddress(host: "127.0.0.1", port: 0))
        let batch = DatagramBatch(socket: sender.fileDescriptor)
        #expect(batch.append(to: try DatagramDestination(receiver.localAddress)) { _ in 0 } == 0)
        #expect(batch.pending == 0)
        batch.flush()
        #expect(batch.statistics.systemCalls == 0)
        #expect(try receiver.receive(timeout: .zero) { _ in } == 0)
    }
}
