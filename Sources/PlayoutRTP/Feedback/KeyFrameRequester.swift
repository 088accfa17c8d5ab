public import PlayoutCore

/// Decides when a receiver asks for a key frame — PLI (RFC 4585 §6.3.1) or FIR (RFC 5104 §4.3.1),
/// whichever the sender accepts, PLI preferred — sans-IO. Decoding waits for a key frame at the
/// start and after a loss the sender could not repair; asking again before an answer could have
/// come only loads the sender, so requests are at least max(round-trip time, 100 ms) apart. A
/// FIR carries a command sequence number that grows with each new request (a repeat keeps it).
///
/// ```swift
/// var requester = KeyFrameRequester(mode: .pictureLoss)
/// if let request = requester.poll(waitingForKeyFrame: true, now: now, roundTripTime: rtt) { send(request) }
/// ```
public struct KeyFrameRequester: Sendable {
    /// What the sender accepts (from its SDP's `a=rtcp-fb`).
    public enum Mode: Sendable, Equatable {
        /// `nack pli`.
        case pictureLoss
        /// `ccm fir` (when the sender does not accept PLI).
        case fullIntraRequest
        /// Neither: never ask.
        case none
    }

    /// One request to send.
    public enum Request: Sendable, Equatable {
        /// A picture loss indication.
        case pictureLoss
        /// A full intra request with its command sequence number.
        case fullIntraRequest(sequenceNumber: UInt8)
    }

    /// The least time between two requests (100 ms; the round-trip time when longer).
    public static let minimumInterval: Duration = .milliseconds(100)

    /// What the sender accepts.
    public let mode: Mode
    /// PLIs asked for (W3C `pliCount`).
    public private(set) var pliCount = 0
    /// FIRs asked for (W3C `firCount`).
    public private(set) var firCount = 0
    private var lastRequest: MonotonicInstant?
    private var firSequenceNumber: UInt8 = 0
    /// Whether the last request is still unanswered (a FIR repeat keeps its number).
    private var outstanding = false

    /// A requester for a sender that accepts `mode`.
    public init(mode: Mode) {
        self.mode = mode
    }

    /// The mode a media section's `a=rtcp-fb` lines allow for `payloadType`.
    public static func mode(for media: MediaDescription, payloadType: UInt8) -> Mode {
        if media.acceptsFeedback(.pictureLoss(nil), payloadType: payloadType) { return .pictureLoss }
        if media.acceptsFeedback(.fullIntraRequest(nil), payloadType: payloadType) { return .fullIntraRequest }
        return .none
    }

    /// What to send at `now`: a request when decoding waits for a key frame and the last request
    /// is at least max(`roundTripTime`, 100 ms) old; nil otherwise. When decoding no longer
    /// waits, the next request starts a new FIR command.
    public mutating func poll(waitingForKeyFrame: Bool, now: MonotonicInstant, roundTripTime: Duration?) -> Request? {
        guard waitingForKeyFrame else {
            outstanding = false
            return nil
        }
        guard mode != .none else { return nil }
        let interval = max(roundTripTime ?? .zero, Self.minimumInterval)
        if let last = lastRequest, now < last.advanced(by: interval) { return nil }
        lastRequest = now
        switch mode {
        case .pictureLoss:
            pliCount += 1
            outstanding = true
            return .pictureLoss
        case .fullIntraRequest:
            if !outstanding { firSequenceNumber &+= 1 }
            outstanding = true
            firCount += 1
            return .fullIntraRequest(sequenceNumber: firSequenceNumber)
        case .none:
            return nil
        }
    }

    /// When a request may go out again (nil: none sent yet).
    public func nextAllowed(roundTripTime: Duration?) -> MonotonicInstant? {
        lastRequest.map { $0.advanced(by: max(roundTripTime ?? .zero, Self.minimumInterval)) }
    }
}
