import PlayoutCore
import PlayoutWebRTC

/// DTLS-SRTP's receive side: the input cut into datagrams (2-byte big-endian length, then the
/// datagram; a short tail is one more datagram), each classified by the RFC 7983 demultiplexer
/// and fed to a server-role endpoint, polled dry each time; the clock then moves on by the
/// datagram's first byte in milliseconds, so timers fire too. Invariants: every datagram is counted once by
/// each; the endpoint sends only datagrams within its MTU made of whole records; it never
/// connects (no real client is on the other end); and its queue stays bounded.
public func fuzzDTLS(_ bytes: UnsafeRawBufferPointer) {
    guard let certificate = try? DTLSCertificate.shared(),
          let endpoint = try? DTLSEndpoint(role: .server, certificate: certificate, remoteFingerprint: certificate.fingerprint)
    else { preconditionFailure("a DTLS endpoint can be created") }
    var demux = DatagramDemultiplexer()
    var now = MonotonicInstant.zero
    var offset = 0
    var count = 0
    while offset < bytes.count {
        var length = bytes.count - offset
        var start = offset
        if length >= 2 {
            length = min(Int(bytes[offset]) << 8 | Int(bytes[offset + 1]), bytes.count - offset - 2)
            start = offset + 2
        }
        let datagram = UnsafeRawBufferPointer(rebasing: bytes[start..<start + length])
        offset = start + length
        count += 1
        _ = demux.classify(datagram)
        // Everything goes to the endpoint, not only what the demultiplexer calls DTLS: its own
        // checks must hold on their own.
        endpoint.receive(datagram, now: now)
        var actions = 0
        while let action = endpoint.poll(now: now) {
            actions += 1
            precondition(actions <= DTLSEndpoint.Configuration.defaultMaximumPendingActions + 64, "the action queue is bounded")
            switch action {
            case .send(let out):
                precondition(!out.isEmpty && out.count <= DTLSEndpoint.Configuration.defaultMTU, "sent datagrams fit the MTU")
                let kind = out.withUnsafeBytes { DatagramDemultiplexer.kind(of: $0) }
                precondition(kind == .dtls, "what the endpoint sends classifies as DTLS")
            case .connected:
                preconditionFailure("no handshake can complete against random input")
            case .failed, .closed:
                break
            }
        }
        if let first = datagram.first { now = now.advanced(by: .milliseconds(Int64(first))) }
        if length == 0 && offset >= bytes.count { break }
    }
    let statistics = endpoint.statistics
    precondition(demux.statistics.total == count && statistics.datagramsReceived == count, "every datagram counted once")
    precondition(
        statistics.datagramsProcessed + statistics.datagramsDroppedMalformed + statistics.datagramsDroppedOversized
            + statistics.datagramsDroppedAfterEnd == count,
        "every datagram processed or dropped for one reason"
    )
    endpoint.close(now: now)
    while endpoint.poll(now: now) != nil {}
}
