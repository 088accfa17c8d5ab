// libFuzzer harness for STUN (RFC 8489) and the ICE agent's receive path, listed in `fuzzHarnesses`.
import PlayoutCore
import PlayoutRTP
import PlayoutWebRTC

/// STUN parsing: what parses serializes and parses back to the same message (and, with uniform
/// padding, to the same bytes); integrity and fingerprint checks never crash; the classifier
/// agrees with the parser on what it accepts; an ICE agent takes the datagram and stays bounded.
public func fuzzSTUN(_ bytes: UnsafeRawBufferPointer) {
    let looksLike = STUNMessage.looksLikeSTUN(bytes)
    _ = STUNMessage.verifyFingerprint(bytes)
    _ = STUNMessage.verifyIntegrity(bytes, key: Array("VOkJxbRl1RmTxUk/WvJxBt".utf8))
    if let message = try? STUNMessage(parsing: bytes) {
        precondition(bytes.count <= STUNMessage.maximumSize)
        if bytes[0] <= 3 { precondition(looksLike, "a parsed message with a first byte 0–3 must be classified as STUN") }
        let encoded = message.encoded()
        guard let again = try? STUNMessage(parsing: encoded) else { preconditionFailure("a parsed STUN message must serialize to something parseable") }
        precondition(again == message, "a parsed STUN message must parse back the same")
        precondition(again.encoded() == encoded, "serialization must be stable")
        let key = Array("fuzz-password-0123456789".utf8)
        let protected = message.encoded(integrityKey: key, fingerprint: true)
        if protected.count <= STUNMessage.maximumSize {
            precondition(STUNMessage.verifyIntegrity(protected, key: key) && STUNMessage.verifyFingerprint(protected))
        }
    }

    // The agent: a controlling agent mid-checks takes the datagram from its peer.
    // RFC 5769's request is addressed to "evtj" with this password: the seed reaches the answer path.
    let local = ICECredentials(ufrag: "evtj", password: "VOkJxbRl1RmTxUk/WvJxBt")
    let peer = ICECredentials(ufrag: "h6vY", password: "fuzz-password-0123456789")
    guard let host = try? SocketAddress(host: "10.0.0.1", port: 5000), let remote = try? SocketAddress(host: "10.0.0.2", port: 6000) else { return }
    var agent = ICEAgent(configuration: .init(seed: 1), credentials: local)
    agent.addLocalCandidate(.host(host), socket: ICESocketID(0))
    agent.setRemote(credentials: peer, candidates: [.host(remote)])
    agent.start(now: .zero)
    while agent.poll(now: .zero) != nil {}
    agent.receive(bytes, from: remote, on: ICESocketID(0), now: .zero.advanced(by: .milliseconds(1)))
    var actions = 0
    while agent.poll(now: .zero.advanced(by: .milliseconds(2))) != nil {
        actions += 1
        precondition(actions < 100, "one datagram must not make an agent act without end")
    }
    if let deadline = agent.nextDeadline {
        precondition(deadline > .zero.advanced(by: .milliseconds(2)), "a drained agent must not ask to wake in the past")
    }
}
