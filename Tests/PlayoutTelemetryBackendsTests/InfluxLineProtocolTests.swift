@testable import PlayoutTelemetry
@testable import PlayoutTelemetryBackends
import PlayoutTesting
import Testing

private func record(_ kind: TelemetryRecord.Kind = .event, name: String = "play", session: String = "s1", seq: UInt64 = 7,
                    fields: [TelemetryField] = [], tags: [TelemetryField] = []) -> TelemetryRecord {
    TelemetryRecord(sessionId: session, seq: seq, monotonic: .seconds(1), wallTimeNanoseconds: 1_700_000_000_123_456_789,
                    kind: kind, name: name, fields: fields, tags: tags)
}

@Suite("InfluxLineProtocol")
struct InfluxLineProtocolTests {
    @Test("an event: measurement, sorted tags, seq first, typed fields, nanosecond timestamp")
    func event() {
        let line = InfluxLineProtocol(tags: [TelemetryField("host", .string("lab1"))]).line(for: record(
            fields: [TelemetryField("bitrate", .int(2_500_000)), TelemetryField("ratio", .double(0.25)),
                     TelemetryField("live", .bool(true)), TelemetryField("reason", .string("ok"))],
            tags: [TelemetryField("run", .string("r42"))]))
        #expect(line == #"playout_event,event=play,host=lab1,run=r42,session=s1 seq=7i,bitrate=2500000i,ratio=0.25,live=true,reason="ok" 1700000000123456789"#)
    }

    @Test("default tags (InfluxBackend's: the machine's host) go where neither the record nor the encoder's tags have one of that name")
    func defaultTags() throws {
        var encoder = InfluxLineProtocol()
        encoder.defaultTags = [TelemetryField("host", .string("m1"))]
        #expect(encoder.line(for: record()) == "playout_event,event=play,host=m1,session=s1 seq=7i 1700000000123456789")
        #expect(encoder.line(for: record(tags: [TelemetryField("host", .string("lab"))])) == "playout_event,event=play,host=lab,session=s1 seq=7i 1700000000123456789")
        let backend = try InfluxBackend(writeURL: "http://127.0.0.1:1/write?db=d", token: nil)
        #expect(backend.encoder.defaultTags == TelemetryField.hostDefaults && !TelemetryField.hostDefaults.isEmpty)
    }

    @Test("heartbeats have no name tag; metrics a metric tag; each kind has its measurement; keys in snake_case")
    func kinds() {
        let encoder = InfluxLineProtocol()
        #expect(encoder.line(for: record(.heartbeat, name: "heartbeat", fields: [TelemetryField("framesDropped", .int(0))]))
                == "playout_heartbeat,session=s1 seq=7i,frames_dropped=0i 1700000000123456789")
        #expect(encoder.line(for: record(.metric, name: "cpu", fields: [TelemetryField("value", .double(-1.5e-7))]))
                == "playout_metric,metric=cpu,session=s1 seq=7i,value=-1.5e-07 1700000000123456789")
    }

    @Test("hostile strings are escaped per the line protocol reference", arguments: [
        // (tag value, field key, string field value, expected tag, expected field key, expected string value)
        ("a b", "k", "v", #"a\ b"#, "k", #""v""#),
        ("a,b=c", "x,y=z w", "v", #"a\,b\=c"#, #"x\,y\=z\ w"#, #""v""#),
        (#"say "hi""#, "k", #"say "hi""#, #"say\ "hi""#, "k", #""say \"hi\"""#),
        (#"C:\dir"#, "k", #"C:\dir"#, #"C:\dir"#, "k", #""C:\\dir""#),
        (#"ends\"#, #"k\"#, #"ends\"#, "ends_", "k_", #""ends\\""#),
        (#"a\ b"#, "k", "v", #"a\\\ b"#, "k", #""v""#),
        (#"a\\b"#, "k", "v", #"a\\\b"#, "k", #""v""#),
        ("line\nbreak\r\ttab", "k\n", "multi\nline\r", #"line\nbreak\r\ttab"#, #"k\n"#, #""multi\nline\r""#),
        ("ünï cödé 🎬", "clé", "ñ", #"ünï\ cödé\ 🎬"#, "clé", #""ñ""#),
    ])
    func hostile(tag: String, fieldKey: String, value: String, expectedTag: String, expectedKey: String, expectedValue: String) {
        let line = InfluxLineProtocol().line(for: record(fields: [TelemetryField(fieldKey, .string(value))], tags: [TelemetryField("t", .string(tag))]))
        #expect(line == "playout_event,event=play,session=s1,t=\(expectedTag) seq=7i,\(expectedKey)=\(expectedValue) 1700000000123456789")
    }

    @Test("names and sessions are escaped too")
    func hostileIdentity() {
        let line = InfluxLineProtocol().line(for: record(name: "my event,x=1", session: "id 1"))
        #expect(line == #"playout_event,event=my\ event\,x\=1,session=id\ 1 seq=7i 1700000000123456789"#)
    }

    @Test("repeated and reserved keys get a _ appended; empty tags and non-finite numbers are left out")
    func collisions() {
        let line = InfluxLineProtocol(tags: [TelemetryField("run", .string("b"))]).line(for: record(
            fields: [TelemetryField("seq", .int(1)), TelemetryField("time", .int(2)), TelemetryField("session", .int(3)),
                     TelemetryField("nan", .double(.nan)), TelemetryField("inf", .double(.infinity)), TelemetryField("", .int(4))],
            tags: [TelemetryField("name", .string("user")), TelemetryField("run", .string("a")), TelemetryField("empty", .string(""))]))
        #expect(line == "playout_event,event=play,name=user,run=a,run_=b,session=s1 seq=7i,seq_=1i,time_=2i,session_=3i 1700000000123456789")
    }

    @Test("integers keep their full range and the i suffix; doubles keep their precision")
    func numbers() {
        let line = InfluxLineProtocol().line(for: record(fields: [
            TelemetryField("min", .int(.min)), TelemetryField("max", .int(.max)), TelemetryField("third", .double(1.0 / 3)),
            TelemetryField("whole", .double(2)), TelemetryField("no", .bool(false)),
        ]))
        #expect(line == "playout_event,event=play,session=s1 seq=7i,min=-9223372036854775808i,max=9223372036854775807i,third=0.3333333333333333,whole=2.0,no=false 1700000000123456789")
    }

    @Test("a batch is one line per record, each ending with a newline")
    func batch() {
        let body = String(decoding: InfluxLineProtocol().encode([record(seq: 0), record(seq: 1)]), as: UTF8.self)
        #expect(body == "playout_event,event=play,session=s1 seq=0i 1700000000123456789\nplayout_event,event=play,session=s1 seq=1i 1700000000123456789\n")
    }

    @Test("random strings round-trip through a line protocol reader (InfluxDB 2 / VictoriaMetrics rules)")
    func randomStrings() throws {
        var generator = SeededRandomNumberGenerator(seed: 7)
        let alphabet = Array(#" ,="\ab€"#)
        for _ in 0..<3000 {
            func text() -> String {
                String((0..<Int(generator.next() % 10) + 1).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] })
            }
            let (key, tag, value) = ("k" + text(), text(), text())
            let line = InfluxLineProtocol().line(for: record(fields: [TelemetryField(key, .string(value))], tags: [TelemetryField("t", .string(tag))]))
            let point = try #require(LineReader.read(line), "\(line)")
            #expect(point.measurement == "playout_event")
            // A trailing backslash of a key or tag value is written as `_` (InfluxDB 1.x cannot read one).
            func trailing(_ text: String) -> String { text.hasSuffix("\\") ? text.dropLast() + "_" : text }
            #expect(point.tags == ["event": "play", "session": "s1", "t": trailing(tag)], "\(line)")
            #expect(point.fields == ["seq": "7i", trailing(key): value], "\(line)")
            #expect(point.timestamp == "1700000000123456789")
        }
    }

    static let schema = TelemetrySchema(
        trackFields: [
            .init("framesRendered", .counter, help: "Frames rendered."), .init("bitrate", .gauge, .bitsPerSecond, help: "Rate."),
            .init("ssrc", .identity, help: "Source."),
        ],
        sessionFields: [.init("playoutDelay", .gauge, .seconds, help: "Delay.")], derivedFields: ["framesRendered", "framesPerSecond"])

    @Test("issue 28: a heartbeat is one session point and one point per track tagged with its kind and SSRC; totals left out; units in keys; identities as tags")
    func schemaHeartbeat() {
        let encoder = InfluxLineProtocol(schema: Self.schema)
        let line = encoder.line(for: record(.heartbeat, name: "heartbeat", fields: [
            TelemetryField("playoutDelay", .double(0.23)), TelemetryField("state", .string("playing")), TelemetryField("framesRendered", .int(80)),
            TelemetryField("framesPerSecond", .double(30)), TelemetryField("player_name", .string("web 1")),
            TelemetryField("video.framesRendered", .int(30)), TelemetryField("video.bitrate", .double(1e6)), TelemetryField("video.ssrc", .int(1234)),
            TelemetryField("audio.framesRendered", .int(50)), TelemetryField("timeSincePlay", .double(2)),
        ]))
        #expect(line == """
            playout_heartbeat,player=web\\ 1,session=s1 seq=7i,playout_delay_seconds=0.23,state="playing",time_since_play=2.0 1700000000123456789
            playout_track,kind=video,player=web\\ 1,session=s1,ssrc=1234 seq=7i,frames_rendered=30i,bitrate_bits_per_second=1000000.0 1700000000123456789
            playout_track,kind=audio,player=web\\ 1,session=s1 seq=7i,frames_rendered=50i 1700000000123456789
            """)
        // viewend's KPIs carry their units.
        #expect(encoder.line(for: record(.event, name: "viewend", fields: [TelemetryField("playing_time", .double(9.5)), TelemetryField("rebuffer_count", .int(0))]))
                == "playout_event,event=viewend,session=s1 seq=7i,playing_time_seconds=9.5,rebuffers=0i 1700000000123456789")
    }
}

/// A reader of one line of line protocol with the unescaping rules of InfluxDB 2 and
/// VictoriaMetrics: in keys and tag values a backslash before `,`, `=`, space or another backslash
/// stands for that character, and is kept before anything else; in string fields `\"` and `\\`.
enum LineReader {
    struct Point {
        var measurement = ""
        var tags: [String: String] = [:]
        var fields: [String: String] = [:]
        var timestamp = ""
    }

    static func read(_ line: String) -> Point? {
        var characters = Array(line)[...]
        var point = Point()
        func element(until stops: Set<Character>) -> (String, Character?) {
            var text = ""
            while let character = characters.popFirst() {
                if character == "\\" {
                    guard let next = characters.first else { text.append(character); break }
                    if [",", "=", " ", "\\"].contains(next) {
                        text.append(next)
                        characters.removeFirst()
                    } else {
                        text.append(character)
                    }
                    continue
                }
                if stops.contains(character) { return (text, character) }
                text.append(character)
            }
            return (text, nil)
        }
        var (measurement, stop) = element(until: [",", " "])
        point.measurement = measurement
        while stop == "," {
            let (key, equals) = element(until: ["="])
            guard equals == "=" else { return nil }
            let (value, next) = element(until: [",", " "])
            point.tags[key] = value
            stop = next
        }
        guard stop == " " else { return nil }
        repeat {
            let (key, equals) = element(until: ["="])
            guard equals == "=" else { return nil }
            if characters.first == "\"" {
                characters.removeFirst()
                var value = ""
                var closed = false
                while let character = characters.popFirst() {
                    if character == "\\", let next = characters.first, next == "\"" || next == "\\" {
                        value.append(next)
                        characters.removeFirst()
                    } else if character == "\"" {
                        closed = true
                        break
                    } else {
                        value.append(character)
                    }
                }
                guard closed else { return nil }
                point.fields[key] = value
                stop = characters.popFirst()
            } else {
                var value = ""
                stop = nil
                while let character = characters.popFirst() {
                    if character == "," || character == " " { stop = character; break }
                    value.append(character)
                }
                point.fields[key] = value
            }
        } while stop == ","
        guard stop == " " else { return nil }
        point.timestamp = String(characters)
        return point.timestamp.allSatisfy(\.isNumber) && !point.timestamp.isEmpty ? point : nil
    }
}
