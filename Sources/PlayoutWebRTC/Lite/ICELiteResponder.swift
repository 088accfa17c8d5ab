public import PlayoutCore
public import PlayoutRTP

/// The ICE-lite, controlled side of one session (RFC 8445 §2.5, §7.3), sans-IO: it answers the
/// peer's authenticated Binding requests and learns where media goes; it sends no checks of its
/// own.
///
/// A request is answered only when it is a Binding request whose FINGERPRINT matches, whose
/// USERNAME is `<our ufrag>:<peer ufrag>` and whose MESSAGE-INTEGRITY verifies with our password.
/// The success response carries XOR-MAPPED-ADDRESS (where the request came from), then
/// MESSAGE-INTEGRITY (our password) and FINGERPRINT. A request with USE-CANDIDATE nominates its
/// source: ``selectedAddress`` (where media and DTLS go). Every authenticated request refreshes
/// consent (RFC 7675): ``consentExpired(now:)`` says when none came for ``consentTimeout``.
/// Anything else — not STUN, malformed, not a request, unauthenticated, a wrong username, a
/// peer that is controlled as well — is counted in ``Statistics`` and dropped (the last answered
/// 487 Role Conflict; unknown comprehension-required attributes 420, both signed).
///
/// ```swift
/// var ice = ICELiteResponder(local: ICECredentials.generate(), remoteUsernameFragment: offer.iceUsernameFragment)
/// if let response = ice.receive(datagram, from: source, now: now) { socket.send(response, to: source) }
/// if let address = ice.selectedAddress { … send DTLS and media there … }
/// if ice.consentExpired(now: now) { … end the session … }
/// ```
public struct ICELiteResponder: Sendable {
    /// How long a session lives without an authenticated Binding request: 30 s (RFC 7675 §5.1).
    public static let consentTimeout: Duration = .seconds(30)
    /// The addresses that passed a check kept at most (the peer's candidates that reached us).
    public static let maximumValidatedAddresses = 8

    /// What the responder did with what it was given.
    public struct Statistics: Sendable, Hashable {
        /// Binding requests answered with a success response.
        public var requestsAnswered = 0
        /// Of those, requests with USE-CANDIDATE.
        public var nominations = 0
        /// Dropped: not a STUN message, or one that does not parse.
        public var droppedMalformed = 0
        /// Dropped: a response or indication, or another method than Binding.
        public var droppedNotRequest = 0
        /// Dropped: no FINGERPRINT, or one that does not match.
        public var droppedBadFingerprint = 0
        /// Dropped: no USERNAME, or not `<our ufrag>:<peer ufrag>`.
        public var droppedWrongUsername = 0
        /// Dropped: no MESSAGE-INTEGRITY, or one that does not verify with our password.
        public var droppedUnauthenticated = 0
        /// Answered 487: the peer said it is controlled too (a lite agent is always controlled).
        public var roleConflicts = 0
        /// Answered 420: comprehension-required attributes we do not know.
        public var unknownAttributes = 0
        /// Validated addresses forgotten because ``maximumValidatedAddresses`` were kept.
        public var addressesForgotten = 0

        /// Zeroed counters.
        public init() {}

        /// Everything dropped without an answer.
        public var dropped: Int {
            droppedMalformed + droppedNotRequest + droppedBadFingerprint + droppedWrongUsername + droppedUnauthenticated
        }
    }

    /// Our credentials (`a=ice-ufrag`/`a=ice-pwd` of the answer).
    public let local: ICECredentials
    /// The peer's username fragment (from its offer); nil accepts any peer ufrag.
    public let remoteUsernameFragment: String?
    /// Where media goes: the source of the latest authenticated request with USE-CANDIDATE.
    public private(set) var selectedAddress: SocketAddress?
    /// The sources of authenticated requests, oldest first (at most ``maximumValidatedAddresses``).
    public private(set) var validatedAddresses: [SocketAddress] = []
    /// When the latest authenticated request arrived.
    public private(set) var lastConsent: MonotonicInstant?
    /// The counters.
    public private(set) var statistics = Statistics()
    private let createdAt: MonotonicInstant
    private let key: [UInt8]

    /// A responder for one session, created at `now` (consent runs from then until the first
    /// request).
    public init(local: ICECredentials, remoteUsernameFragment: String?, now: MonotonicInstant = MonotonicInstant(nanoseconds: 0)) {
        self.local = local
        self.remoteUsernameFragment = remoteUsernameFragment
        createdAt = now
        key = Array(local.password.utf8)
    }

    /// The ufrag that starts the USERNAME of a request for the session (`<ufrag>:`): what a
    /// server with many sessions on one socket looks a request up by.
    public static func localUsernameFragment(ofRequest bytes: UnsafeRawBufferPointer) -> String? {
        guard let message = try? STUNMessage(parsing: bytes), let username = message.username,
              let colon = username.firstIndex(of: ":")
        else { return nil }
        return String(username[..<colon])
    }

    /// Whether `address` passed a check (is the selected or a validated address).
    public func isValidated(_ address: SocketAddress) -> Bool {
        let address = address.normalized
        return selectedAddress == address || validatedAddresses.contains(address)
    }

    /// Whether consent is gone at `now`: no authenticated request for ``consentTimeout`` (since
    /// the responder was created when none came yet).
    public func consentExpired(now: MonotonicInstant) -> Bool {
        (lastConsent ?? createdAt).advanced(by: Self.consentTimeout) <= now
    }

    /// When consent runs out if no request comes.
    public var consentDeadline: MonotonicInstant { (lastConsent ?? createdAt).advanced(by: Self.consentTimeout) }

    /// Takes one datagram (RFC 7983 says STUN) from `source`: returns the response to send back
    /// to `source`, or nil when it is dropped (counted).
    public mutating func receive(_ bytes: UnsafeRawBufferPointer, from source: SocketAddress, now: MonotonicInstant) -> [UInt8]? {
        guard let message = try? STUNMessage(parsing: bytes) else {
            statistics.droppedMalformed += 1
            return nil
        }
        guard message.messageClass == .request, message.method == .binding else {
            statistics.droppedNotRequest += 1
            return nil
        }
        guard message.hasFingerprint, STUNMessage.verifyFingerprint(bytes) else {
            statistics.droppedBadFingerprint += 1
            return nil
        }
        guard let username = message.username, let colon = username.firstIndex(of: ":"),
              username[..<colon] == local.ufrag,
              remoteUsernameFragment.map({ username[username.index(after: colon)...] == $0 }) ?? true
        else {
            statistics.droppedWrongUsername += 1
            return nil
        }
        guard message.hasMessageIntegrity, STUNMessage.verifyIntegrity(bytes, key: key) else {
            statistics.droppedUnauthenticated += 1
            return nil
        }
        // Authenticated: it proves the peer still wants the media (consent), whatever follows.
        lastConsent = now
        if !message.unknownComprehensionRequired.isEmpty {
            statistics.unknownAttributes += 1
            return error(to: message, code: 420, reason: "Unknown Attribute", extra: [.unknownAttributes(message.unknownComprehensionRequired)])
        }
        if message.iceControlled != nil {
            // Both controlled: a lite agent cannot take the controlling role (RFC 8445 §7.3.1.1).
            statistics.roleConflicts += 1
            return error(to: message, code: 487, reason: "Role Conflict", extra: [])
        }
        let address = source.normalized
        if !validatedAddresses.contains(address) {
            if validatedAddresses.count >= Self.maximumValidatedAddresses {
                validatedAddresses.removeFirst()
                statistics.addressesForgotten += 1
            }
            validatedAddresses.append(address)
        }
        if message.useCandidate {
            selectedAddress = address
            statistics.nominations += 1
        }
        statistics.requestsAnswered += 1
        var response = STUNMessage(class: .successResponse, transactionID: message.transactionID)
        response.attributes = [.xorMappedAddress(source)]
        return response.encoded(integrityKey: key, fingerprint: true)
    }

    /// ``receive(_:from:now:)-(UnsafeRawBufferPointer,_,_)`` for an array.
    public mutating func receive(_ bytes: [UInt8], from source: SocketAddress, now: MonotonicInstant) -> [UInt8]? {
        bytes.withUnsafeBytes { receive($0, from: source, now: now) }
    }

    private func error(to request: STUNMessage, code: Int, reason: String, extra: [STUNAttribute]) -> [UInt8] {
        var response = STUNMessage(class: .errorResponse, transactionID: request.transactionID)
        response.attributes = [.errorCode(code: code, reason: reason)] + extra
        return response.encoded(integrityKey: key, fingerprint: true)
    }
}
