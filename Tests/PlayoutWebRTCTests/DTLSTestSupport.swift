import PlayoutCore
import PlayoutRTP
import PlayoutWebRTC

/// A seeded random stream (PlayoutCore's SplitMix64): hostile input that is the same on every run.
typealias SeededRandom = SeededRandomNumberGenerator

extension SeededRandomNumberGenerator {
    mutating func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255, using: &self) } }
}

/// Two endpoints joined by a lossy, instant link on a manual timeline: the test decides which
/// datagrams are lost; time only moves to the next deadline when nothing else is to do.
struct DTLSLink {
    /// Which endpoint sent a datagram.
    enum Side: Hashable { case a, b }

    /// One datagram sent, with its instant and its index among that side's datagrams.
    struct Sent {
        let side: Side
        let index: Int
        let at: MonotonicInstant
        let bytes: [UInt8]
        let dropped: Bool
    }

    let a: DTLSEndpoint
    let b: DTLSEndpoint
    var now = MonotonicInstant.zero
    var sent: [Sent] = []
    var eventsA: [DTLSEndpoint.Action] = []
    var eventsB: [DTLSEndpoint.Action] = []
    /// Decides whether a datagram is lost (side, index of that side's datagram, bytes).
    var drop: (Side, Int, [UInt8]) -> Bool = { _, _, _ in false }
    /// Extra datagrams delivered to an endpoint before each real one (hostile traffic).
    var inject: (Side, Int) -> [[UInt8]] = { _, _ in [] }

    init(a: DTLSEndpoint, b: DTLSEndpoint) {
        self.a = a
        self.b = b
    }

    private func endpoint(_ side: Side) -> DTLSEndpoint { side == .a ? a : b }

    /// Drains both endpoints, delivering what is not dropped; advances to the next deadline when
    /// both are idle; stops when `done` holds, both are quiet with no deadline, or at `limit`.
    mutating func run(limit: Duration = .seconds(60), until done: (DTLSLink) -> Bool = { $0.bothConnected }) {
        let end = MonotonicInstant.zero.advanced(by: limit)
        while now <= end {
            var moved = false
            for side in [Side.a, .b] {
                let from = endpoint(side)
                let to = endpoint(side == .a ? .b : .a)
                while let action = from.poll(now: now) {
                    moved = true
                    switch action {
                    case .send(let bytes):
                        let index = sent.filter { $0.side == side }.count
                        let lost = drop(side, index, bytes)
                        sent.append(Sent(side: side, index: index, at: now, bytes: bytes, dropped: lost))
                        if !lost {
                            for extra in inject(side, index) { to.receive(extra, now: now) }
                            to.receive(bytes, now: now)
                        }
                    default:
                        if side == .a { eventsA.append(action) } else { eventsB.append(action) }
                    }
                }
            }
            // Only once both queues are drained: an endpoint may have connected on the other's
            // datagram with its `.connected` still queued.
            if !moved, done(self) { return }
            if !moved {
                let deadlines = [a.nextDeadline, b.nextDeadline].compactMap { $0 }
                guard let next = deadlines.min() else { return }
                now = max(now, next)
            }
        }
    }

    var bothConnected: Bool { a.state == .connected && b.state == .connected }

    func sends(of side: Side) -> [Sent] { sent.filter { $0.side == side } }

    static func keys(_ events: [DTLSEndpoint.Action]) -> DTLSSRTPKeys? {
        for case .connected(let keys) in events { return keys }
        return nil
    }

    static func failure(_ events: [DTLSEndpoint.Action]) -> DTLSError? {
        for case .failed(let error) in events { return error }
        return nil
    }
}

/// A pair of fresh certificates and endpoints: `a` plays `roleA`, `b` the other role, each
/// expecting the other's real fingerprint unless told otherwise.
func makeEndpoints(
    roleA: DTLSEndpoint.Role,
    profilesA: [DTLSSRTPProfile] = DTLSSRTPProfile.defaultOffer,
    profilesB: [DTLSSRTPProfile] = DTLSSRTPProfile.defaultOffer,
    expectedByA: DTLSFingerprint? = nil,
    configuration: DTLSEndpoint.Configuration = DTLSEndpoint.Configuration()
) throws -> (DTLSEndpoint, DTLSEndpoint, DTLSCertificate, DTLSCertificate) {
    let certificateA = try DTLSCertificate()
    let certificateB = try DTLSCertificate()
    var configurationA = configuration
    configurationA.srtpProfiles = profilesA
    var configurationB = configuration
    configurationB.srtpProfiles = profilesB
    let a = try DTLSEndpoint(
        role: roleA, certificate: certificateA, remoteFingerprint: expectedByA ?? certificateB.fingerprint, configuration: configurationA
    )
    let b = try DTLSEndpoint(
        role: roleA == .client ? .server : .client, certificate: certificateB, remoteFingerprint: certificateA.fingerprint,
        configuration: configurationB
    )
    return (a, b, certificateA, certificateB)
}

/// A minimal RTP packet: version 2, the given payload type, sequence number and SSRC, then `payload`.
func rtpPacket(sequence: UInt16, ssrc: UInt32 = 0x1234_5678, payloadType: UInt8 = 96, payload: [UInt8]) -> [UInt8] {
    [0x80, payloadType, UInt8(sequence >> 8), UInt8(sequence & 0xFF), 0, 0, 0x10, 0x00,
     UInt8(ssrc >> 24), UInt8((ssrc >> 16) & 0xFF), UInt8((ssrc >> 8) & 0xFF), UInt8(ssrc & 0xFF)] + payload
}

/// A minimal RTCP receiver report (no report blocks) from `ssrc`.
func rtcpReceiverReport(ssrc: UInt32 = 0xCAFE_BABE) -> [UInt8] {
    [0x80, 201, 0x00, 0x01, UInt8(ssrc >> 24), UInt8((ssrc >> 16) & 0xFF), UInt8((ssrc >> 8) & 0xFF), UInt8(ssrc & 0xFF)]
}
