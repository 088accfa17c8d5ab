import PlayoutSwarm
import PlayoutTesting
import Synchronization
import Testing

@Suite("SwarmStore")
struct SwarmStoreTests {
    static let time: Int64 = 1_790_000_000_123_456_789

    @Test("one line per viewer: measurement, escaped tags, every field (ints with i, state as a string, nil left out), time")
    func lineFormat() throws {
        var outcome = sampleOutcome(17, shard: 2, decoded: false)
        outcome.startupTime = 0.5
        outcome.renderedRatio = 0.995
        outcome.endToEndLatency = nil
        outcome.bitrate = 2_500_000
        outcome.jitterBufferDelay = 0.206
        let lines = try SwarmStore.lines([outcome], run: "nightly 42,a=b", at: Self.time)
        #expect(lines.count == 1)
        #expect(lines[0] == #"playout_swarm_viewer,outcome=ended,run=nightly\ 42\,a\=b,shard=2,viewer=17 state="ended",decoded=false,startupTime=0.5,renderedRatio=0.995,framesRendered=883i,freezeCount=2i,freezeRatio=0.005,jitterBufferDelay=0.206,bitrate=2500000.0,packetsLost=1i,nackCount=5i 1790000000123456789"#)
    }

    @Test("hostile run ids and states are escaped; impossible run ids are refused with what to write")
    func hostile() throws {
        let state = "failed: \"quoted\" a,b=c \\ end\nnext"
        let line = try #require(try SwarmStore.lines([sampleOutcome(1, state: state)], run: #"x' OR "run"<>'y"#, at: 1).first)
        #expect(line.hasPrefix(#"playout_swarm_viewer,outcome=failed:\ "quoted"\ a\,b\=c\ /\ end\ next,run=x'\ OR\ "run"<>'y,shard=0,viewer=1 "#))
        #expect(line.contains(#"state="failed: \"quoted\" a,b=c \\ end next","#))
        #expect(!line.contains("\n"))
        for run in ["", "a\nb", "tab\there", "back\\slash", String(repeating: "r", count: 201), "bell\u{7}", "c1\u{85}"] {
            #expect {
                _ = try SwarmStore.lines([sampleOutcome(0)], run: run, at: 1)
            } throws: { error in
                (error as? SwarmStoreError)?.code == .invalidRun && "\(error)".contains("--run nightly-42")
            }
        }
        #expect(try SwarmStore.lines([], run: "ok", at: 1).isEmpty)
        #expect(try SwarmStore.lines([sampleOutcome(0, state: "")], run: "ok", at: 1)[0].contains("state=\"unknown\""))
    }

    @Test("specs: influx and victoria, and what a bad one says")
    func specs() throws {
        let influx = try SwarmStoreSpec(parsing: "influx:http://127.0.0.1:8086/write?db=playout")
        #expect(influx.kind == .influx && influx.host == "127.0.0.1" && influx.port == 8086 && influx.database == "playout")
        #expect(try SwarmStoreSpec(parsing: "http://[::1]:8086/write?db=x").kind == .influx)
        let victoria = try SwarmStoreSpec(parsing: "victoria:http://localhost:8428")
        #expect(victoria.kind == .victoria && victoria.database == nil && victoria.port == 8428)
        #expect(try SwarmStoreSpec(parsing: "victoria:http://localhost:8428/write?db=lab").database == "lab")
        for bad in ["", "influx:", "influx:http://h:8086/write", "influx:https://h/write?db=a", "graphite:h:2003", "victoria:http://h:99999",
                    "influx:http://h/write?db=a&precision=s", "influx:http://h/write?db=a%0Ab", "jsonl:/tmp/x"] {
            #expect {
                _ = try SwarmStoreSpec(parsing: bad)
            } throws: { error in
                (error as? SwarmStoreError)?.code == .invalidSpec && "\(error)".contains("victoria:http://HOST:PORT")
            }
        }
    }

    @Test("a run read back: latest record per viewer kept, duplicates reported not counted, states counted, table and JSON")
    func runSummary() throws {
        var records: [(outcome: ViewerOutcome, time: Int64)] = []
        for viewer in 0..<10 { records.append((sampleOutcome(viewer, shard: viewer / 4), 100)) }
        // Shard 1 was retried: viewers 4…7 again, later; viewer 5 failed the first time.
        records[5].outcome.state = "failed: timed out"
        for viewer in 4..<8 { records.append((sampleOutcome(viewer, shard: 1), 200)) }
        records.append((sampleOutcome(9, shard: 2, state: "connecting"), 50))   // older than the first
        records[8].outcome.state = "failed: answer 503"
        let run = SwarmRun(run: "r1", source: "victoria:http://x:1", records: records)
        #expect(run.viewers.map(\.viewer) == Array(0..<10))
        #expect(run.duplicates == 5 && run.duplicatedViewers == [4, 5, 6, 7, 9])
        #expect(run.viewers[5].state == "ended" && run.viewers[9].state == "ended")
        #expect(run.viewersPerShard == [0: 4, 1: 4, 2: 2])
        #expect(run.failed == 1 && run.connecting == 0 && run.connected == 9)

        let table = run.table()
        #expect(table.contains("run r1 from victoria:http://x:1: 10 viewers in 3 shards (0: 4, 1: 4, 2: 2)"))
        #expect(table.contains("connected 9, connecting 0, failed 1, duplicates 5 (viewers 4, 5, 6, 7, 9)"))
        let header = try #require(table.split(separator: "\n").first { $0.hasPrefix("measure") })
        let headerColumns: [String] = ["measure", "viewers", "min", "p50", "p95", "p99", "max"]
        #expect(header.split(separator: " ").map(String.init) == headerColumns)
        // Start-up 0.40 … 0.49 s: in ms. Bitrate in kbit/s. Ratios in %.
        let startup = try #require(table.split(separator: "\n").first { $0.hasPrefix("startupTime ms") })
        let startupColumns: [String] = ["startupTime", "ms", "10", "400.0", "440.0", "490.0", "490.0", "490.0"]
        #expect(startup.split(separator: " ").map(String.init) == startupColumns)
        let bitrate = try #require(table.split(separator: "\n").first { $0.hasPrefix("bitrate kbit/s") })
        let bitrateColumns: [String] = ["2500.0", "2504.0", "2509.0", "2509.0", "2509.0"]
        #expect(Array(bitrate.split(separator: " ").map(String.init).suffix(5)) == bitrateColumns)
        let ratio = try #require(table.split(separator: "\n").first { $0.hasPrefix("renderedRatio %") })
        #expect(ratio.split(separator: " ").map(String.init).last == "100.00")

        let json = run.jsonLine()
        #expect(json.hasPrefix(#"{"type":"summary","run":"r1","viewers":10,"shards":{"0":4,"1":4,"2":2},"duplicates":5,"failed":1,"connecting":0,"connected":9,"unreadable":0,"startupTime":{"min":0.4,"p50":0.44,"p95":0.49,"p99":0.49,"max":0.49,"count":10},"#))
        #expect(json.contains(#""framesDecoded":{"min":"#) && json.contains(#""count":10}"#) && json.hasSuffix("}") && !json.contains("\n"))
    }

    // MARK: - Hostile servers

    /// A server that answers every request with `answer` and keeps the request lines it got.
    final class Scripted: Sendable {
        final class Log: Sendable {
            let requests = Mutex<[String]>([])
        }

        let server: ScriptedTCPServer
        let log = Log()

        init(_ answer: String) throws {
            let log = self.log
            server = try ScriptedTCPServer { connection in
                let request = String(decoding: connection.readRequest(), as: UTF8.self)
                log.requests.withLock { $0.append(request) }
                connection.write(answer)
            }
        }

        var port: UInt16 { server.port }
        var firstRequest: String { log.requests.withLock { $0.first ?? "" } }
    }

    static func http(_ status: String, _ body: String, headers: String = "") -> String {
        "HTTP/1.1 \(status)\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\(headers)\r\n\(body)"
    }

    static let hostileAnswers: [(name: String, answer: String, code: SwarmStoreError.Code, says: String)] = [
        ("truncated JSON", http("200 OK", #"{"results":[{"statement_id":0,"series":[{"name":"playout_swarm_viewer","columns":["time""#), .malformedAnswer, "not its JSON"),
        ("an HTML page", http("200 OK", "<html><body><h1>Welcome to nginx</h1></body></html>"), .malformedAnswer, "Welcome to nginx"),
        ("a 500", http("500 Internal Server Error", "engine on fire"), .refused, "HTTP 500: engine on fire"),
        ("a 404", http("404 Not Found", "404 page not found"), .refused, "is it VictoriaMetrics?"),
        ("a query error", http("200 OK", #"{"results":[{"statement_id":0,"error":"database not found: playout"}]}"#), .refused, "database not found: playout"),
        ("a top-level error", http("400 Bad Request", #"{"error":"error parsing query"}"#, headers: "X-Influxdb-Error: error parsing query\r\n"), .refused, "error parsing query"),
        ("a huge body", "HTTP/1.1 200 OK\r\nContent-Length: 900000000\r\n\r\n{\"results\":[", .answerTooLarge, "64 MiB"),
        ("not HTTP", "SSH-2.0-OpenSSH_9.2\r\n", .malformedAnswer, "HTTP"),
        ("a closed connection", "", .unreachable, "127.0.0.1"),
        ("deep nesting", http("200 OK", String(repeating: "[", count: 100_000)), .malformedAnswer, "not its JSON"),
        ("not an object", http("200 OK", "[1,2,3]"), .malformedAnswer, "not a JSON object"),
        ("series not an array", http("200 OK", #"{"results":[{"series":7}]}"#), .malformedAnswer, "not an array"),
    ]

    @Test("InfluxDB answers that are not its JSON are clear errors", arguments: 0..<hostileAnswers.count)
    func hostileInflux(_ index: Int) throws {
        let item = Self.hostileAnswers[index]
        let server = try Scripted(item.answer)
        defer { server.server.stop() }
        #expect {
            _ = try SwarmStore.readRun(from: "influx:http://127.0.0.1:\(server.port)/write?db=playout", run: "r")
        } throws: { error in
            let ok = (error as? SwarmStoreError)?.code == item.code && "\(error)".contains(item.says)
            if !ok { print("\(item.name): \(error)") }
            return ok
        }
    }

    @Test("VictoriaMetrics export that is not JSON Lines of series is a clear error")
    func hostileVictoria() throws {
        for (answer, says) in [
            (Self.http("200 OK", "{\"metric\":{\"__name__\":\"playout_swarm_viewer_bitrate\"},\"values\":[1],\"timestamps\":[1"), "line 1"),
            (Self.http("200 OK", "<!DOCTYPE html><title>502 Bad Gateway</title>"), "502 Bad Gateway"),
            (Self.http("200 OK", "{\"metric\":{}}\n"), "not an exported series"),
            (Self.http("503 Service Unavailable", "too many requests"), "HTTP 503: too many requests"),
        ] {
            let server = try Scripted(answer)
            defer { server.server.stop() }
            #expect {
                _ = try SwarmStore.readRun(from: "victoria:http://127.0.0.1:\(server.port)", run: "r")
            } throws: { error in
                "\(error)".contains(says) && "\(error)".contains("VictoriaMetrics")
            }
        }
    }

    @Test("the run id cannot change the InfluxQL query; rows without a needed field are counted, not read")
    func influxQuery() throws {
        let body = """
            {"results":[{"statement_id":0,"series":[{"name":"playout_swarm_viewer","columns":["time","bitrate","decoded","endToEndLatency","framesDecoded","framesRendered","freezeCount","freezeRatio","jitterBufferDelay","nackCount","outcome","packetsLost","renderedRatio","run","shard","startupTime","state","viewer"],"values":[\
            [1790000000000000000,2500000,true,0.25,900,900,0,0,0.2,1,"ended",0,1,"x' OR 1=1 --","1",0.5,"ended","4"],\
            [1790000000000000000,2500000,false,null,null,880,1,0.01,0.2,0,"ended",0,0.99,"x' OR 1=1 --","1",0.6,"ended","5"],\
            [1790000000000000000,null,false,null,null,880,1,0.01,0.2,0,"ended",0,0.99,"x' OR 1=1 --","1",0.6,"ended","6"],\
            [1790000000000000000,2500000,false,null,null,880,1,0.01,0.2,0,"ended",0,0.99,"another run","1",0.6,"ended","7"],\
            [1790000000000000000,2500000,false,null,null,880,1,0.01,0.2,0,"ended",0,0.99,"x' OR 1=1 --","1",0.6,"ended","-8"],\
            [1]]}]}]}
            """
        let server = try Scripted(Self.http("200 OK", body))
        defer { server.server.stop() }
        let run = try SwarmStore.readRun(from: "influx:http://127.0.0.1:\(server.port)/write?db=lab%20db", run: "x' OR 1=1 --")
        #expect(run.viewers.map(\.viewer) == [4, 5])
        #expect(run.unreadable == 4)
        #expect(run.viewers[0] == ViewerOutcome(viewer: 4, shard: 1, state: "ended", decoded: true, startupTime: 0.5, renderedRatio: 1, framesRendered: 900,
                                                freezeCount: 0, freezeRatio: 0, endToEndLatency: 0.25, jitterBufferDelay: 0.2, bitrate: 2_500_000,
                                                packetsLost: 0, nackCount: 1, framesDecoded: 900))
        #expect(run.viewers[1].framesDecoded == nil && run.viewers[1].endToEndLatency == nil)
        let request = server.firstRequest
        let target = String(request.split(separator: " ")[1])
        #expect(target.hasPrefix("/query?db=lab%20db&epoch=ns&q="))
        let query = target.split(separator: "q=", maxSplits: 1)[1].removingPercentEncodingForTest()
        #expect(query == #"SELECT * FROM playout_swarm_viewer WHERE "run" = 'x\' OR 1=1 --'"#)
    }

    @Test("writes: a refusal carries the server's reason, an unreachable server says so, a bad spec is refused before sending")
    func writeErrors() throws {
        let refusing = try Scripted(Self.http("400 Bad Request", #"{"error":"partial write: field type conflict"}"#,
                                              headers: "X-Influxdb-Error: partial write: field type conflict\r\n"))
        defer { refusing.server.stop() }
        let lines = try SwarmStore.lines([sampleOutcome(0)], run: "r", at: 1)
        #expect {
            try SwarmStore.write(lines, to: "influx:http://127.0.0.1:\(refusing.port)/write?db=playout")
        } throws: { error in
            (error as? SwarmStoreError)?.code == .refused && "\(error)".contains("HTTP 400") && "\(error)".contains("field type conflict")
        }
        let request = refusing.firstRequest
        #expect(request.hasPrefix("POST /write?db=playout&precision=ns HTTP/1.1\r\n"))
        #expect(request.hasSuffix(lines[0] + "\n"))

        let port = ScriptedTCPServer.unusedPort()
        #expect {
            try SwarmStore.write(lines, to: "influx:http://127.0.0.1:\(port)/write?db=playout")
        } throws: { error in
            (error as? SwarmStoreError)?.code == .unreachable && "\(error)".contains("127.0.0.1:\(port)")
        }
        #expect(throws: SwarmStoreError.self) { try SwarmStore.write(lines, to: "graphite:127.0.0.1:2003") }
    }
}

extension Substring {
    /// `%XX` escapes decoded (the test's own, to read back a request target).
    func removingPercentEncodingForTest() -> String {
        var bytes: [UInt8] = []
        var index = utf8.startIndex
        while index < utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%"), let high = utf8[utf8.index(after: index)...].first.flatMap({ UInt8(String(UnicodeScalar($0)), radix: 16) }),
               let low = utf8[utf8.index(index, offsetBy: 2)...].first.flatMap({ UInt8(String(UnicodeScalar($0)), radix: 16) }) {
                bytes.append(high << 4 | low)
                index = utf8.index(index, offsetBy: 3)
            } else {
                bytes.append(byte)
                index = utf8.index(after: index)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
