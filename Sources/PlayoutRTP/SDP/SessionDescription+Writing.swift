extension SessionDescription {
    /// The description as SDP text with CRLF line endings, in RFC 8866 order, readable by
    /// `ffmpeg -protocol_whitelist file,udp,rtp -i file.sdp` and by ``init(parsing:)``.
    ///
    /// A media section's `c=` line and direction are written only where they differ from the
    /// session's (they are inherited back when parsed), and `a=rtpmap` only where
    /// ``MediaDescription/rtpMaps`` has one. For every description the parser produces,
    /// `SessionDescription(parsing: sdp.serialized()) == sdp`.
    ///
    /// - Complexity: O(n) in the size of the output.
    public func serialized() -> String {
        var lines: [String] = ["v=0"]
        if let origin {
            lines.append(
                "o=\(origin.username) \(origin.sessionID) \(origin.sessionVersion) "
                    + "\(origin.networkType) \(origin.addressType.rawValue) \(origin.address)"
            )
        }
        lines.append("s=\(sessionName)")
        let early: Set<Character> = ["v", "o", "s", "i", "u", "e", "p"]
        lines += otherFields.filter { early.contains($0.type) }.map(\.line)
        if let connection { lines.append("c=" + connection.formatted) }
        lines += bandwidths.map(\.line)
        lines += timing.map { "t=\($0.start) \($0.stop)" }
        lines += otherFields.filter { !early.contains($0.type) }.map(\.line)
        if direction != .sendrecv { lines.append("a=\(direction.rawValue)") }
        lines += extensionMaps.map(\.line)
        lines += attributes.map(\.line)
        for section in media {
            lines += section.lines(sessionConnection: connection, sessionDirection: direction)
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }
}

extension MediaDescription {
    func lines(sessionConnection: ConnectionData?, sessionDirection: SDPDirection) -> [String] {
        let port = portCount == 1 ? "\(port)" : "\(port)/\(portCount)"
        let formats = proto.isRTP ? payloadTypes.map { String($0) } : otherFormats
        var lines = ["m=" + ([kind.rawValue, port, proto.rawValue] + formats).joined(separator: " ")]
        lines += otherFields.filter { $0.type == "i" }.map(\.line)
        if let connection, connection != sessionConnection { lines.append("c=" + connection.formatted) }
        lines += bandwidths.map(\.line)
        lines += otherFields.filter { $0.type != "i" }.map(\.line)
        for map in rtpMaps {
            let channels = map.channels.map { "/\($0)" } ?? ""
            lines.append("a=rtpmap:\(map.payloadType) \(map.encodingName)/\(map.clockRate)\(channels)")
        }
        for parameters in formatParameters {
            let text = parameters.formatted
            lines.append("a=fmtp:\(parameters.payloadType)" + (text.isEmpty ? "" : " " + text))
        }
        lines += crypto.map { "a=crypto:" + $0.formatted }
        lines += extensionMaps.map(\.line)
        if let rtcp {
            lines.append("a=rtcp:\(rtcp.port)" + (rtcp.connection.map { " " + $0.formatted } ?? ""))
        }
        if rtcpMux { lines.append("a=rtcp-mux") }
        if direction != sessionDirection { lines.append("a=\(direction.rawValue)") }
        for source in ssrcAttributes {
            lines.append("a=ssrc:\(source.ssrc) \(source.name)" + (source.value.map { ":" + $0 } ?? ""))
        }
        if let control { lines.append("a=control:\(control)") }
        if let frameRate {
            let rounded = frameRate.rounded()
            let text = rounded == frameRate && abs(frameRate) < 1e15 ? String(Int64(rounded)) : String(frameRate)
            lines.append("a=framerate:\(text)")
        }
        if let packetTime { lines.append("a=ptime:" + SDPNumber.formatMilliseconds(packetTime)) }
        lines += attributes.map(\.line)
        return lines
    }
}

extension ConnectionData {
    /// The text after `c=`.
    var formatted: String {
        var text = "\(networkType) \(addressType.rawValue) \(address)"
        if let ttl { text += "/\(ttl)" }
        if let addressCount { text += "/\(addressCount)" }
        return text
    }
}

extension SDPField {
    var line: String { "\(type)=\(value)" }
}

extension SDPBandwidth {
    var line: String { "b=\(type):\(value)" }
}

extension SDPAttribute {
    var line: String { "a=\(name)" + (value.map { ":" + $0 } ?? "") }
}

extension ExtensionMap {
    var line: String {
        var text = "a=extmap:\(id)"
        if let direction { text += "/\(direction.rawValue)" }
        text += " \(uri)"
        if let extensionAttributes { text += " \(extensionAttributes)" }
        return text
    }
}
