/// A parsed SDP session description (RFC 8866), as written by `ffmpeg -sdp_file`, GStreamer or by
/// hand, and read by ``init(parsing:)``.
///
/// What a subscriber needs is typed: the connection address, the media sections with their
/// payload types, `a=rtpmap`, `a=fmtp`, `a=crypto`, `a=extmap`, `a=rtcp`… Everything else is kept
/// verbatim (``attributes``, ``otherFields``) so that ``serialized()`` loses nothing a reader
/// might want.
///
/// ```swift
/// let sdp = try SessionDescription(parsing: text)
/// for media in sdp.media {
///     let codec = media.rtpMap(for: media.payloadTypes[0])   // e.g. H264/90000
///     let port = media.port                                   // e.g. 5004
/// }
/// ```
///
/// Inheritance is resolved while parsing: a media section without its own `c=` line gets the
/// session's connection, and one without a direction attribute gets the session's direction.
/// The writer leaves out what equals the session-level value, so
/// `SessionDescription(parsing: x.serialized()) == x` for every description the parser produces.
public struct SessionDescription: Sendable, Equatable {
    /// The `o=` line; `nil` when the text had none (hand-written SDPs for ffplay often omit it).
    public var origin: SDPOrigin?
    /// The `s=` line; `"-"` when the text had none.
    public var sessionName: String
    /// The session-level `c=` line.
    public var connection: ConnectionData?
    /// The session-level `b=` lines, in order.
    public var bandwidths: [SDPBandwidth]
    /// The `t=` lines; `[SDPTiming(start: 0, stop: 0)]` (unbounded) when the text had none.
    public var timing: [SDPTiming]
    /// The session-level direction attribute (`a=sendrecv` when none was given).
    public var direction: SDPDirection
    /// Session-level `a=extmap` lines (RFC 8285), which apply to every media section.
    public var extensionMaps: [ExtensionMap]
    /// The other session-level `a=` lines, verbatim and in order (e.g. `a=tool:…`, `a=ts-refclk:…`).
    public var attributes: [SDPAttribute]
    /// Session-level lines this type does not model (`i=`, `u=`, `e=`, `p=`, `r=`, `z=`, `k=`,
    /// unknown letters), kept in order: first those that belong before `c=`, then the others.
    public var otherFields: [SDPField]
    /// The media sections (`m=` lines and what follows each), in order.
    public var media: [MediaDescription]

    /// Creates a session description; the defaults are what ffmpeg writes for a stream.
    public init(
        origin: SDPOrigin? = SDPOrigin(),
        sessionName: String = "-",
        connection: ConnectionData? = nil,
        bandwidths: [SDPBandwidth] = [],
        timing: [SDPTiming] = [SDPTiming()],
        direction: SDPDirection = .sendrecv,
        extensionMaps: [ExtensionMap] = [],
        attributes: [SDPAttribute] = [],
        otherFields: [SDPField] = [],
        media: [MediaDescription] = []
    ) {
        self.origin = origin
        self.sessionName = sessionName
        self.connection = connection
        self.bandwidths = bandwidths
        self.timing = timing
        self.direction = direction
        self.extensionMaps = extensionMaps
        self.attributes = attributes
        self.otherFields = otherFields
        self.media = media
    }

    /// The value of the first session-level attribute called `name` (compared case-insensitively)
    /// among ``attributes``; `""` for a flag attribute; `nil` when there is none.
    public func attribute(_ name: String) -> String? {
        attributes.first { $0.name.lowercased() == name.lowercased() }.map { $0.value ?? "" }
    }
}

/// The `o=` line: who created the session and which version of it this is.
public struct SDPOrigin: Sendable, Equatable {
    /// The user name, `-` when there is none.
    public var username: String
    /// The session id, as written (digits; writers use anything from `0` to 64-bit random numbers).
    public var sessionID: String
    /// The session version, as written.
    public var sessionVersion: String
    /// The network type, `IN`.
    public var networkType: String
    /// The address family of ``address``.
    public var addressType: SDPAddressType
    /// The creator's address or host name.
    public var address: String

    /// Creates an origin; the defaults are ffmpeg's (`o=- 0 0 IN IP4 127.0.0.1`).
    public init(
        username: String = "-",
        sessionID: String = "0",
        sessionVersion: String = "0",
        networkType: String = "IN",
        addressType: SDPAddressType = .ip4,
        address: String = "127.0.0.1"
    ) {
        self.username = username
        self.sessionID = sessionID
        self.sessionVersion = sessionVersion
        self.networkType = networkType
        self.addressType = addressType
        self.address = address
    }
}

/// The address family in `c=` and `o=` lines.
public enum SDPAddressType: String, Sendable, Equatable, CaseIterable {
    /// IPv4, written `IP4`.
    case ip4 = "IP4"
    /// IPv6, written `IP6`.
    case ip6 = "IP6"
}

/// A `c=` line (or the address part of `a=rtcp`): where the media goes.
///
/// `c=IN IP4 239.1.1.1/127` is an IPv4 multicast group with TTL 127; `c=IN IP4 239.1.1.1/127/3`
/// adds a count of 3 consecutive groups; IPv6 multicast has no TTL: `c=IN IP6 ff15::101/3`.
public struct ConnectionData: Sendable, Equatable {
    /// The network type, `IN`.
    public var networkType: String
    /// The address family.
    public var addressType: SDPAddressType
    /// The address (or host name), without TTL and count.
    public var address: String
    /// The multicast TTL (IPv4 multicast only).
    public var ttl: UInt8?
    /// The number of consecutive multicast addresses, when given.
    public var addressCount: UInt32?

    /// Creates connection data.
    public init(
        networkType: String = "IN",
        addressType: SDPAddressType = .ip4,
        address: String,
        ttl: UInt8? = nil,
        addressCount: UInt32? = nil
    ) {
        self.networkType = networkType
        self.addressType = addressType
        self.address = address
        self.ttl = ttl
        self.addressCount = addressCount
    }

    /// Whether ``address`` is a multicast address (IPv4 224.0.0.0/4 or IPv6 ff00::/8).
    public var isMulticast: Bool {
        switch addressType {
        case .ip4:
            guard let first = address.split(separator: ".").first, let octet = UInt8(first) else { return false }
            return (224...239).contains(octet)
        case .ip6:
            return address.lowercased().hasPrefix("ff")
        }
    }
}

/// A `b=` line: a bandwidth limit.
public struct SDPBandwidth: Sendable, Equatable {
    /// The bandwidth type, such as `AS` (application specific, kbit/s), `CT` (conference total,
    /// kbit/s) or `TIAS` (RFC 3890, bit/s). Kept as written.
    public var type: String
    /// The number as written: kbit/s for `AS` and `CT`, bit/s for `TIAS`.
    public var value: UInt64

    /// Creates a bandwidth line.
    public init(type: String, value: UInt64) {
        self.type = type
        self.value = value
    }

    /// The bandwidth in bits per second, for the types whose unit is known (`AS`, `CT`, `TIAS`,
    /// `RR`, `RS`).
    public var bitsPerSecond: UInt64? {
        switch type.uppercased() {
        case "AS", "CT": return value.multipliedReportingOverflow(by: 1000).overflow ? nil : value * 1000
        case "TIAS", "RR", "RS": return value
        default: return nil
        }
    }
}

/// A `t=` line: NTP start and stop times, `0 0` for an unbounded session.
public struct SDPTiming: Sendable, Equatable {
    /// The start time in NTP seconds, 0 for "now".
    public var start: UInt64
    /// The stop time in NTP seconds, 0 for "unbounded".
    public var stop: UInt64

    /// Creates a timing line; the default is `t=0 0`.
    public init(start: UInt64 = 0, stop: UInt64 = 0) {
        self.start = start
        self.stop = stop
    }
}

/// An `a=` line kept verbatim: `a=<name>` (a flag, ``value`` is `nil`) or `a=<name>:<value>`.
public struct SDPAttribute: Sendable, Equatable {
    /// The attribute name, before the first `:`.
    public var name: String
    /// The text after the first `:`, or `nil` for a flag attribute.
    public var value: String?

    /// Creates an attribute.
    public init(name: String, value: String? = nil) {
        self.name = name
        self.value = value
    }
}

/// A line of a type this parser does not model, kept verbatim: `<type>=<value>`.
public struct SDPField: Sendable, Equatable {
    /// The one-letter line type, e.g. `i`, `u`, `k`.
    public var type: Character
    /// The text after `=`.
    public var value: String

    /// Creates a field.
    public init(type: Character, value: String) {
        self.type = type
        self.value = value
    }
}

/// The direction attributes (RFC 8866 §6.7).
public enum SDPDirection: String, Sendable, Equatable, CaseIterable {
    /// `a=sendrecv`, the default.
    case sendrecv
    /// `a=sendonly`: the describer only sends.
    case sendonly
    /// `a=recvonly`: the describer only receives.
    case recvonly
    /// `a=inactive`: no media flows.
    case inactive
}
