// libFuzzer harnesses for the telemetry backends' parsers and encoders (network input and
// user strings), listed in `fuzzHarnesses`.
import PlayoutTelemetry
import PlayoutTelemetryBackends
import PlayoutHTTP

/// The HTTP/1.1 response parser, fed in pieces whose size the first byte sets, then the end of
/// the stream: whatever it accepts stays within its limits.
public func fuzzHTTPResponse(_ bytes: UnsafeRawBufferPointer) {
    guard let first = bytes.first else { return }
    let limits = HTTPResponseParser.Limits(headerBytes: 1024, headerCount: 16, bodyBytes: 2048)
    var parser = HTTPResponseParser(limits: limits, expectsBody: first & 0x80 == 0)
    let step = Int(first & 0x3F) + 1
    var offset = 1
    var response: HTTPResponse?
    do {
        while offset < bytes.count, response == nil {
            let end = min(bytes.count, offset + step)
            if case .complete(let whole) = try parser.consume(UnsafeRawBufferPointer(rebasing: bytes[offset..<end])) { response = whole }
            offset = end
        }
        if response == nil { response = try parser.endOfStream() }
    } catch {
        return
    }
    guard let response else { return }
    precondition((100...599).contains(response.status), "a parsed status is a valid code")
    precondition(response.body.count <= limits.bodyBytes, "the body stays within its limit")
    precondition(response.headers.count <= limits.headerCount, "the headers stay within their limit")
}

/// The request head parser of the /metrics endpoint: a request it accepts has a path.
public func fuzzHTTPRequestHead(_ bytes: UnsafeRawBufferPointer) {
    if case .request(let head) = HTTPRequestHead.parse(Array(bytes), limit: 512) {
        precondition(head.path.hasPrefix("/") || head.path == "*", "a request target is a path")
        precondition(!head.method.isEmpty)
    }
}

/// The input as text in every place a user string reaches a line: the line is one line, with
/// exactly two separating spaces (before the fields and before the timestamp).
public func fuzzInfluxLine(_ bytes: UnsafeRawBufferPointer) {
    let text = String(decoding: bytes, as: UTF8.self)
    let record = TelemetryRecord(sessionId: text, seq: 1, monotonic: .zero, wallTimeNanoseconds: 1, kind: .event, name: text,
                                 fields: [TelemetryField(text, .string(text)), TelemetryField("n", .int(1))],
                                 tags: [TelemetryField(text, .string(text))])
    let line = Array(InfluxLineProtocol().line(for: record).utf8)
    precondition(!line.contains(10) && !line.contains(13), "a point is one line")
    var separators = 0
    var escaped = false
    var inString = false
    var afterEquals = false
    for byte in line {
        if escaped { escaped = false; continue }
        switch byte {
        case UInt8(ascii: "\\"): escaped = true
        case UInt8(ascii: "\"") where inString: inString = false
        case UInt8(ascii: "\"") where afterEquals && separators == 1: inString = true
        case UInt8(ascii: " ") where !inString: separators += 1
        default: break
        }
        afterEquals = byte == UInt8(ascii: "=")
    }
    precondition(separators == 2 && !inString, "measurement+tags, fields and timestamp are separated by exactly two spaces")
}

/// The input as text in every place a user string reaches a Graphite line: every line has a
/// path of safe characters, a value and a timestamp.
public func fuzzGraphite(_ bytes: UnsafeRawBufferPointer) {
    let text = String(decoding: bytes, as: UTF8.self)
    let records = [
        TelemetryRecord(sessionId: text, seq: 0, monotonic: .zero, wallTimeNanoseconds: 1, kind: .event, name: text, tags: [TelemetryField(text, .string(text))]),
        TelemetryRecord(sessionId: text, seq: 1, monotonic: .zero, wallTimeNanoseconds: 1, kind: .heartbeat, name: "heartbeat",
                        fields: [TelemetryField(text, .double(0.5))], tags: [TelemetryField(text, .string(text))]),
    ]
    let lines = String(decoding: GraphitePlaintext(prefix: text).encode(records).lines, as: UTF8.self)
    for line in lines.split(separator: "\n", omittingEmptySubsequences: false).dropLast() {
        let parts = line.split(separator: " ", omittingEmptySubsequences: false)
        precondition(parts.count == 3, "path value timestamp")
        precondition(parts[0].unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0) })
    }
}
