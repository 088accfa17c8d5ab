import PlayoutCore
import PlayoutRTP
import RealTimeTesting
import Testing

@testable import PlayoutWebRTC

/// Two agents over two real UDP sockets on 127.0.0.1, on the real clock.
@Suite("ICE over real UDP sockets on loopback", .realTime)
struct ICERealTimeTests {
    @Test("a controlling and a controlled agent connect over 127.0.0.1")
    func loopbackConnect() throws {
        let sockets = [
            try UDPReceiver(bindingTo: try SocketAddress(host: "127.0.0.1", port: 0)),
            try UDPReceiver(bindingTo: try SocketAddress(host: "127.0.0.1", port: 0)),
        ]
        var agents = [
            ICEAgent(configuration: .init(role: .controlling), credentials: .generate()),
            ICEAgent(configuration: .init(role: .controlled), credentials: .generate()),
        ]
        // Host candidates as a driver gathers them: loopback asked for, one socket per address.
        let addresses = try ICEHostInterfaces.addresses(.init(includeLoopback: true, interface: "lo", includeIPv6: false))
        #expect(addresses.contains { $0.host == "127.0.0.1" })
        for index in 0..<2 { agents[index].addLocalCandidate(.host(sockets[index].localAddress), socket: ICESocketID(0)) }
        agents[0].setRemote(credentials: agents[1].localCredentials, candidates: agents[1].localCandidates)
        agents[1].setRemote(credentials: agents[0].localCredentials, candidates: agents[0].localCandidates)
        let clock = MonotonicClock()
        let start = clock.now
        for index in 0..<2 { agents[index].start(now: start) }

        var connectedAt: MonotonicInstant?
        let deadline = start.advanced(by: .seconds(5))
        while clock.now < deadline {
            for index in 0..<2 {
                while let action = agents[index].poll(now: clock.now) {
                    if case .send(let transmit) = action {
                        try transmit.bytes.withUnsafeBytes { try sockets[index].send($0, to: transmit.destination) }
                    }
                    if case .failed(let error) = action { Issue.record("agent \(index) failed: \(error)") }
                }
            }
            if connectedAt == nil, agents.allSatisfy({ $0.state == .connected }) { connectedAt = clock.now }
            // Stay a little after connecting, so both sides see the nomination through.
            if let connectedAt, connectedAt.duration(to: clock.now) > .milliseconds(300) { break }
            for index in 0..<2 {
                let wait = agents[index].nextDeadline.map { max(.zero, min(clock.now.duration(to: $0), .milliseconds(5))) } ?? .milliseconds(5)
                try sockets[index].receive(timeout: wait) { datagram in
                    guard let source = datagram.source else { return }
                    agents[index].receive(datagram.bytes, from: source, on: ICESocketID(0), now: clock.now)
                }
            }
        }
        let connected = try #require(connectedAt)
        #expect(start.duration(to: connected) < .seconds(2))
        #expect(agents[0].selectedPair?.remote.address == sockets[1].localAddress)
        #expect(agents[1].selectedPair?.remote.address == sockets[0].localAddress)
        #expect(agents[0].statistics.unauthenticatedDropped == 0 && agents[1].statistics.malformedDropped == 0)
    }
}
