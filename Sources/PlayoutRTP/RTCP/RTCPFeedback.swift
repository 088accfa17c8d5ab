/// An RTCP feedback message (RFC 4585 §6.1): transport-layer (`RTPFB`, packet type 205) or
/// payload-specific (`PSFB`, 206), identified by its format (FMT) — what a real-time receiver sends
/// its sender: generic NACK, picture loss, full intra request, and bandwidth limits (TMMBR/TMMBN,
/// REMB).
///
/// ```swift
/// let nack = RTCPFeedback(senderSSRC: 1, mediaSSRC: 0x1234, message: .nack([100, 101, 117]))
/// let bytes = RTCPPacket.serializeCompound([.receiverReport(report), .feedback(nack)])
/// ```
public struct RTCPFeedback: Equatable, Sendable {
    /// The transport-layer feedback packet type (RFC 4585 §6.1).
    public static let transportLayerType: UInt8 = 205
    /// The payload-specific feedback packet type.
    public static let payloadSpecificType: UInt8 = 206
    /// The most NACK items, FIR or TMMBR entries, or REMB SSRCs written in one message: keeps a
    /// message within one MTU.
    public static let maximumItems = 255

    /// The SSRC of the receiver sending the feedback.
    public var senderSSRC: UInt32
    /// The SSRC of the media source the feedback is about (0 for FIR and REMB, whose entries
    /// name their sources).
    public var mediaSSRC: UInt32
    /// What is asked or told.
    public var message: Message

    /// One TMMBR/TMMBN entry (RFC 5104 §4.2.1.1): a source's maximum total media bit rate and the
    /// per-packet overhead it was measured with.
    public struct BitrateEntry: Equatable, Sendable {
        /// The media source.
        public var ssrc: UInt32
        /// The maximum total media bit rate, bits per second (exponent and 17-bit mantissa on the
        /// wire: exact up to 131,071 bit/s, else rounded down to 17 significant bits).
        public var bitrate: UInt64
        /// Measured per-packet overhead in bytes (9 bits: 0…511).
        public var overhead: UInt16

        public init(ssrc: UInt32, bitrate: UInt64, overhead: UInt16 = 0) {
            self.ssrc = ssrc
            self.bitrate = bitrate
            self.overhead = overhead
        }
    }

    /// The message and its feedback control information.
    public enum Message: Equatable, Sendable {
        /// Generic NACK (RTPFB, FMT 1; RFC 4585 §6.2.1): the sequence numbers reported lost, in the
        /// order written (on the wire as PID + bitmask of the 16 following).
        case nack([UInt16])
        /// Temporary maximum media stream bit rate request (RTPFB, FMT 3; RFC 5104 §4.2.1).
        case temporaryMaximumBitrateRequest([BitrateEntry])
        /// Its notification (RTPFB, FMT 4; RFC 5104 §4.2.2).
        case temporaryMaximumBitrateNotification([BitrateEntry])
        /// Picture loss indication (PSFB, FMT 1; RFC 4585 §6.3.1): no information beyond the SSRCs.
        case pictureLoss
        /// Full intra request (PSFB, FMT 4; RFC 5104 §4.3.1): per source, a command sequence number
        /// that the sender uses to tell a new request from a repeated one.
        case fullIntraRequest([(ssrc: UInt32, sequenceNumber: UInt8)])
        /// Receiver estimated maximum bitrate (PSFB, FMT 15, application layer "REMB";
        /// draft-alvestrand-rmcat-remb): the bits per second the receiver asks for, over `ssrcs`.
        case receiverEstimatedMaximumBitrate(bitrate: UInt64, ssrcs: [UInt32])
        /// Any other feedback message, skipped: its type, format and FCI length in bytes.
        case other(packetType: UInt8, format: UInt8, informationLength: Int)

        public static func == (lhs: Message, rhs: Message) -> Bool {
            switch (lhs, rhs) {
            case (.nack(let a), .nack(let b)): a == b
            case (.temporaryMaximumBitrateRequest(let a), .temporaryMaximumBitrateRequest(let b)): a == b
            case (.temporaryMaximumBitrateNotification(let a), .temporaryMaximumBitrateNotification(let b)): a == b
            case (.pictureLoss, .pictureLoss): true
            case (.fullIntraRequest(let a), .fullIntraRequest(let b)):
                a.count == b.count && zip(a, b).allSatisfy { $0.ssrc == $1.ssrc && $0.sequenceNumber == $1.sequenceNumber }
            case (.receiverEstimatedMaximumBitrate(let a, let s), .receiverEstimatedMaximumBitrate(let b, let t)): a == b && s == t
            case (.other(let a, let f, let n), .other(let b, let g, let m)): a == b && f == g && n == m
            default: false
            }
        }

        /// The packet type and FMT the message is written with.
        var typeAndFormat: (type: UInt8, format: UInt8) {
            switch self {
            case .nack: (RTCPFeedback.transportLayerType, 1)
            case .temporaryMaximumBitrateRequest: (RTCPFeedback.transportLayerType, 3)
            case .temporaryMaximumBitrateNotification: (RTCPFeedback.transportLayerType, 4)
            case .pictureLoss: (RTCPFeedback.payloadSpecificType, 1)
            case .fullIntraRequest: (RTCPFeedback.payloadSpecificType, 4)
            case .receiverEstimatedMaximumBitrate: (RTCPFeedback.payloadSpecificType, 15)
            case .other(let type, let format, _): (type, format & 0x1F)
            }
        }
    }

    /// A feedback message from `senderSSRC` about `mediaSSRC`.
    public init(senderSSRC: UInt32, mediaSSRC: UInt32, message: Message) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.message = message
    }

    /// The ASCII identifier that starts a REMB message's FCI.
    static let rembIdentifier: UInt32 = 0x5245_4D42  // "REMB"

    /// Parses the body (after the 4-byte header) of a feedback packet of `type` with format
    /// `format`; `fail` builds the error for a malformed one.
    static func parse(type: UInt8, format: UInt8, body: UnsafeRawBufferPointer, fail: (String) -> RTCPParseError) throws(RTCPParseError) -> RTCPFeedback {
        guard body.count >= 8 else { throw fail("a feedback message needs 8 bytes of SSRCs, has \(body.count)") }
        let sender = body.loadBigEndian(UInt32.self, at: 0)
        let media = body.loadBigEndian(UInt32.self, at: 4)
        let information = UnsafeRawBufferPointer(rebasing: body[8...])
        func entries(of size: Int, _ name: String) throws(RTCPParseError) -> Int {
            guard information.count % size == 0 else { throw fail("\(name) information of \(information.count) bytes is not a whole number of \(size)-byte entries") }
            return information.count / size
        }
        let message: Message
        switch (type, format) {
        case (transportLayerType, 1):
            var lost: [UInt16] = []
            for index in 0..<(try entries(of: 4, "NACK")) {
                let packetID = information.loadBigEndian(UInt16.self, at: 4 * index)
                let bitmask = information.loadBigEndian(UInt16.self, at: 4 * index + 2)
                lost.append(packetID)
                for bit in 0..<16 where bitmask & (1 << bit) != 0 {
                    lost.append(packetID &+ UInt16(bit + 1))
                }
            }
            message = .nack(lost)
        case (transportLayerType, 3), (transportLayerType, 4):
            let bitrates = (0..<(try entries(of: 8, "TMMBR"))).map { index in
                let word = information.loadBigEndian(UInt32.self, at: 8 * index + 4)
                let exponent = word >> 26
                let mantissa = UInt64((word >> 9) & 0x1_FFFF)
                return BitrateEntry(
                    ssrc: information.loadBigEndian(UInt32.self, at: 8 * index),
                    bitrate: Self.value(mantissa: mantissa, exponent: exponent),
                    overhead: UInt16(word & 0x1FF)
                )
            }
            message = format == 3 ? .temporaryMaximumBitrateRequest(bitrates) : .temporaryMaximumBitrateNotification(bitrates)
        case (payloadSpecificType, 1):
            message = .pictureLoss
        case (payloadSpecificType, 4):
            message = .fullIntraRequest((0..<(try entries(of: 8, "FIR"))).map { index in
                (information.loadBigEndian(UInt32.self, at: 8 * index), information[8 * index + 4])
            })
        case (payloadSpecificType, 15) where information.count >= 4 && information.loadBigEndian(UInt32.self, at: 0) == rembIdentifier:
            guard information.count >= 8 else { throw fail("a REMB message needs 8 bytes of information, has \(information.count)") }
            let word = information.loadBigEndian(UInt32.self, at: 4)
            let count = Int(word >> 24)
            guard information.count >= 8 + 4 * count else { throw fail("REMB names \(count) SSRCs in \(information.count - 8) bytes") }
            let exponent = (word >> 18) & 0x3F
            let mantissa = UInt64(word & 0x3_FFFF)
            message = .receiverEstimatedMaximumBitrate(
                bitrate: Self.value(mantissa: mantissa, exponent: exponent),
                ssrcs: (0..<count).map { information.loadBigEndian(UInt32.self, at: 8 + 4 * $0) }
            )
        default:
            message = .other(packetType: type, format: format, informationLength: information.count)
        }
        return RTCPFeedback(senderSSRC: sender, mediaSSRC: media, message: message)
    }

    /// The packet's FMT and body (after the 4-byte header), in wire format. Lists longer than
    /// ``maximumItems`` are cut there (NACK: the first items; a NACK's sequence numbers are packed
    /// into PID + bitmask pairs in the order given).
    func serializedBody() -> (format: UInt8, body: [UInt8]) {
        var body: [UInt8] = []
        func append32(_ value: UInt32) {
            body += [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
        }
        append32(senderSSRC)
        append32(mediaSSRC)
        switch message {
        case .nack(let lost):
            var pairs: [(packetID: UInt16, bitmask: UInt16)] = []
            for sequence in lost {
                if let last = pairs.last {
                    let distance = sequence &- last.packetID
                    if distance >= 1, distance <= 16 {
                        pairs[pairs.count - 1].bitmask |= 1 << (distance - 1)
                        continue
                    }
                    if distance == 0 { continue }
                }
                guard pairs.count < Self.maximumItems else { break }
                pairs.append((sequence, 0))
            }
            for pair in pairs { append32(UInt32(pair.packetID) << 16 | UInt32(pair.bitmask)) }
        case .temporaryMaximumBitrateRequest(let entries), .temporaryMaximumBitrateNotification(let entries):
            for entry in entries.prefix(Self.maximumItems) {
                append32(entry.ssrc)
                let (exponent, mantissa) = Self.exponentMantissa(entry.bitrate, mantissaBits: 17)
                append32(exponent << 26 | mantissa << 9 | UInt32(min(entry.overhead, 511)))
            }
        case .pictureLoss:
            break
        case .fullIntraRequest(let entries):
            for entry in entries.prefix(Self.maximumItems) {
                append32(entry.ssrc)
                append32(UInt32(entry.sequenceNumber) << 24)
            }
        case .receiverEstimatedMaximumBitrate(let bitrate, let ssrcs):
            append32(Self.rembIdentifier)
            let listed = ssrcs.prefix(Self.maximumItems)
            let (exponent, mantissa) = Self.exponentMantissa(bitrate, mantissaBits: 18)
            append32(UInt32(listed.count) << 24 | exponent << 18 | mantissa)
            listed.forEach(append32)
        case .other(_, _, let length):
            body += [UInt8](repeating: 0, count: max(0, length) & ~3)
        }
        return (message.typeAndFormat.format, body)
    }

    /// `mantissa << exponent`, saturating at `UInt64.max` when it does not fit 64 bits.
    static func value(mantissa: UInt64, exponent: UInt32) -> UInt64 {
        guard mantissa != 0 else { return 0 }
        guard exponent < 64, mantissa.leadingZeroBitCount >= exponent else { return .max }
        return mantissa << exponent
    }

    /// `value` as `mantissa << exponent` with a `mantissaBits`-bit mantissa, rounded down (RFC 5104
    /// §4.2.1.1: a receiver must not ask for more than it means).
    static func exponentMantissa(_ value: UInt64, mantissaBits: Int) -> (exponent: UInt32, mantissa: UInt32) {
        var exponent: UInt32 = 0
        var mantissa = value
        while mantissa >= 1 << mantissaBits {
            mantissa >>= 1
            exponent += 1
        }
        return (min(exponent, 63), UInt32(mantissa))
    }
}
