/// Why ``SessionDescription/fannedOut(viewer:)`` cannot give a viewer's SDP.
public enum SDPFanoutError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The viewer number is below 0.
    case negativeViewer(Int)
    /// No media section has a port (none at all, or every one is disabled with port 0): there is
    /// nothing to move, so every viewer would share one port.
    case noMediaPort
    /// Viewer `viewer`'s ports would pass 65535: `port` is the highest one it would need (its last
    /// section's RTCP port).
    case portOutOfRange(viewer: Int, port: Int)
    /// An `a=crypto` line's suite is unknown or its key is not as long as the suite's: the
    /// viewer's key cannot be derived.
    case unusableCrypto(suite: String)

    public var description: String {
        switch self {
        case .negativeViewer(let viewer):
            return "viewer \(viewer): viewers are numbered from 0 (the SDP itself)"
        case .noMediaPort:
            return "the SDP has no media section with a port (m= line with a port above 0): there is nothing to fan out"
        case .portOutOfRange(let viewer, let port):
            return "viewer \(viewer) would need port \(port), above 65535: fan out to fewer viewers or start from a lower port"
        case .unusableCrypto(let suite):
            return "a=crypto with suite \(suite): unknown suite or a key of the wrong length, so a viewer's key cannot be derived"
        }
    }
}

extension SessionDescription {
    /// How far apart the port blocks of consecutive viewers of a fanned-out stream are: the
    /// span from the lowest port any media section uses to the highest (each section's RTP port
    /// and its RTCP port — `a=rtcp`, else the RTP port + 1 — over its `m=` port count), so that
    /// the RTP/RTCP pairs of every section of one viewer fit before the next viewer's. For the
    /// built-in publisher's SDP (video at P, audio at P+2) it is 4; for video alone, 2. Sections
    /// with port 0 (disabled) take no part; 0 when no section has a port.
    ///
    /// The rule both sides of `publish --fanout N` use (`Docs/Fanout.md`): **viewer i at the
    /// SDP's port + i × stride**, every section moved alike.
    ///
    /// - Complexity: O(*m*) for *m* media sections.
    public var fanoutStride: Int {
        guard let span = fanoutPortSpan else { return 0 }
        return span.upperBound - span.lowerBound + 1
    }

    /// The highest port the viewers `0..<viewers` of this SDP use together (viewer `viewers − 1`'s
    /// highest RTCP port); nil when no section has a port or `viewers` is below 1. Above 65535
    /// means that many viewers do not fit.
    public func highestFanoutPort(viewers: Int) -> Int? {
        guard viewers >= 1, let span = fanoutPortSpan else { return nil }
        let (product, overflow) = (viewers - 1).multipliedReportingOverflow(by: span.upperBound - span.lowerBound + 1)
        return overflow ? .max : span.upperBound + product
    }

    /// Viewer `viewer`'s SDP of a stream fanned out by `publish --fanout N`: every media
    /// section's port (and `a=rtcp` port) moved up by `viewer ×` ``fanoutStride``; every
    /// `a=ssrc` (and `a=ssrc-group`) SSRC moved up by `viewer` (modulo 2^32), which is the SSRC
    /// the publisher sends viewer `viewer` on each track; every `a=crypto` key replaced by the
    /// viewer's own (``SRTPKeyingMaterial/fannedOut(viewer:)``: the same master key, the master
    /// salt's first six bytes XORed with `viewer`), so each viewer's stream has its own SRTP
    /// keys and one viewer's packets do not authenticate in another's context. Viewer 0 is the
    /// SDP itself, unchanged.
    ///
    /// ```swift
    /// let viewer3 = try publisher.sessionDescription.fannedOut(viewer: 3)   // ports + 3 × 4
    /// let subscriber = try Subscriber(sessionDescription: viewer3, options: options)
    /// ```
    ///
    /// - Throws: ``SDPFanoutError/negativeViewer(_:)``, ``SDPFanoutError/noMediaPort`` (for a
    ///   viewer above 0), ``SDPFanoutError/portOutOfRange(viewer:port:)`` naming the viewer and
    ///   the highest port it would need, ``SDPFanoutError/unusableCrypto(suite:)``.
    /// - Complexity: O(size of the description).
    public func fannedOut(viewer: Int) throws(SDPFanoutError) -> SessionDescription {
        guard viewer >= 0 else { throw .negativeViewer(viewer) }
        guard viewer > 0 else { return self }
        guard let span = fanoutPortSpan else { throw .noMediaPort }
        let (offset, overflow) = viewer.multipliedReportingOverflow(by: span.upperBound - span.lowerBound + 1)
        guard !overflow, offset <= Int(UInt16.max) - span.upperBound else {
            throw .portOutOfRange(viewer: viewer, port: overflow ? .max : span.upperBound + offset)
        }
        var result = self
        let shift = UInt32(truncatingIfNeeded: viewer)
        for index in result.media.indices {
            var section = result.media[index]
            if section.port > 0 { section.port = UInt16(Int(section.port) + offset) }
            if let rtcp = section.rtcp, rtcp.port > 0 { section.rtcp?.port = UInt16(Int(rtcp.port) + offset) }
            for attribute in section.ssrcAttributes.indices { section.ssrcAttributes[attribute].ssrc &+= shift }
            section.attributes = Self.shiftingSSRCGroups(section.attributes, by: shift)
            for crypto in section.crypto.indices {
                let suite = section.crypto[crypto].suite
                for key in section.crypto[crypto].keys.indices {
                    let bytes = section.crypto[crypto].keys[key].keyAndSalt
                    guard let keyLength = suite.keyLength, bytes.count == suite.keyAndSaltLength else { throw .unusableCrypto(suite: suite.rawValue) }
                    section.crypto[crypto].keys[key].keyAndSalt = Array(bytes[..<keyLength]) + SRTPKeyingMaterial.fanoutSalt(Array(bytes[keyLength...]), viewer: viewer)
                }
            }
            result.media[index] = section
        }
        result.attributes = Self.shiftingSSRCGroups(result.attributes, by: shift)
        return result
    }

    /// The lowest and highest port the media sections use (nil: none has a port).
    private var fanoutPortSpan: ClosedRange<Int>? {
        var lowest = Int.max
        var highest = Int.min
        for section in media where section.port > 0 {
            let port = Int(section.port)
            let last = port + 2 * (max(Int(section.portCount), 1) - 1)
            let rtcp = section.rtcp.map { Int($0.port) }.flatMap { $0 > 0 ? $0 : nil }
            lowest = min(lowest, port, rtcp ?? port)
            highest = max(highest, rtcp.map { max(last, $0) } ?? last + 1)
        }
        return lowest <= highest ? lowest...highest : nil
    }

    /// `a=ssrc-group:SEMANTICS SSRC…` lines with every SSRC moved up by `shift`; other lines as
    /// they are (a group value that does not parse is kept).
    private static func shiftingSSRCGroups(_ attributes: [SDPAttribute], by shift: UInt32) -> [SDPAttribute] {
        attributes.map { attribute in
            guard attribute.name.lowercased() == "ssrc-group", let value = attribute.value else { return attribute }
            var words = value.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            guard words.count >= 2 else { return attribute }
            for index in words.indices.dropFirst() {
                guard let ssrc = UInt32(words[index]) else { return attribute }
                words[index] = String(ssrc &+ shift)
            }
            return SDPAttribute(name: attribute.name, value: words.joined(separator: " "))
        }
    }
}

extension SRTPKeyingMaterial {
    /// Viewer `viewer`'s keys of a stream fanned out by `publish --fanout N`: the same master
    /// key, with the master salt's first six bytes XORed with `viewer` (big-endian, 48 bits).
    /// Every SRTP session key derives from both (RFC 3711 §4.3), so each viewer's stream has keys
    /// of its own: a packet of one viewer's stream fails authentication in another's context.
    /// Those bytes lie outside the key-derivation label and index, so no viewer's session keys
    /// equal another's under a different label. Viewer 0 is the keys themselves.
    ///
    /// Not a secret between viewers: every viewer's keys follow from viewer 0's (a load test's
    /// isolation of streams, as an SFU gives each subscriber its own, not a security boundary).
    public func fannedOut(viewer: Int) -> SRTPKeyingMaterial {
        guard viewer > 0 else { return self }
        // The salt keeps its length, so the keys stay valid for the suite.
        return (try? SRTPKeyingMaterial(masterKey: masterKey, masterSalt: Self.fanoutSalt(masterSalt, viewer: viewer), suite: suite)) ?? self
    }

    /// `salt` with its first six bytes XORed with `viewer` (big-endian, 48 bits).
    static func fanoutSalt(_ salt: [UInt8], viewer: Int) -> [UInt8] {
        var salt = salt
        let value = UInt64(truncatingIfNeeded: viewer) & 0xFFFF_FFFF_FFFF
        for index in 0..<min(6, salt.count) {
            salt[index] ^= UInt8(truncatingIfNeeded: value >> UInt64(8 * (5 - index)))
        }
        return salt
    }
}
