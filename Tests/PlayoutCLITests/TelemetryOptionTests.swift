import ArgumentParser
import Playout
@testable import PlayoutCLI
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("--telemetry and --tag on subscribe and demo")
struct TelemetryOptionTests {
    static func destinations(_ arguments: [String]) throws -> [TelemetrySpec.Destination] {
        try SubscribeCommand.parse(["x.sdp"] + arguments).subscription.telemetry.map(\.destination)
    }

    static func message(_ arguments: [String]) -> String? {
        do {
            _ = try PlayoutCommand.parseAsRoot(arguments)
            return nil
        } catch {
            return PlayoutCommand.userMessage(for: error)
        }
    }

    @Test("every spec form of DESIGN.md parses into its typed destination")
    func forms() throws {
        let parsed = try Self.destinations([
            "--telemetry", "jsonl:run.jsonl",
            "--telemetry", "influx:http://127.0.0.1:8086/write?db=playout",
            "--telemetry", "influx:https://db.example:9999/api/v2/write?org=my%20org&bucket=b1&precision=ns",
            "--telemetry", "graphite:127.0.0.1:2003",
            "--telemetry", "graphite:[::1]:2003",
            "--telemetry", "prometheus:9464",
            "--telemetry", "prometheus:0.0.0.0:9464",
        ])
        #expect(parsed.count == 7)
        #expect(parsed[0] == .jsonl(path: "run.jsonl"))
        guard case .influx(let v1) = parsed[1], case .influx(let v2) = parsed[2] else {
            Issue.record("not influx: \(parsed)")
            return
        }
        #expect(v1.scheme == "http" && v1.host == "127.0.0.1" && v1.port == 8086)
        #expect(v1.api == .v1(database: "playout", retentionPolicy: nil))
        #expect(v2.scheme == "https" && v2.host == "db.example" && v2.port == 9999)
        #expect(v2.api == .v2(organization: "my org", bucket: "b1"))
        #expect(v2.query.map(\.name) == ["org", "bucket", "precision"])
        #expect(parsed[3] == .graphite(host: "127.0.0.1", port: 2003))
        #expect(parsed[4] == .graphite(host: "::1", port: 2003))
        #expect(parsed[5] == .prometheus(host: nil, port: 9464))
        #expect(parsed[6] == .prometheus(host: "0.0.0.0", port: 9464))
        #expect(try Self.destinations(["--telemetry", "influx:http://localhost/write?db=x&rp=week"])
            == [.influx(.init(scheme: "http", host: "localhost", port: 8086, api: .v1(database: "x", retentionPolicy: "week"),
                              query: [.init(name: "db", value: "x"), .init(name: "rp", value: "week")], url: "http://localhost/write?db=x&rp=week"))])
    }

    @Test("a spec that does not parse: the option, the value, and what to type", arguments: [
        (["--telemetry", "kafka:x"], "--telemetry kafka:x: 'kafka' is not a telemetry backend; use jsonl:PATH"),
        (["--telemetry", "run.jsonl"], "--telemetry run.jsonl: 'run.jsonl' is not a telemetry spec; use jsonl:PATH"),
        (["--telemetry", "jsonl:"], "--telemetry jsonl:: jsonl needs a path, e.g. jsonl:telemetry.jsonl"),
        (["--telemetry", "influx:ftp://x/write?db=a"], "influx needs an http:// or https:// URL"),
        (["--telemetry", "influx:http://127.0.0.1:8086/write"], "influx: the v1 API needs ?db=NAME"),
        (["--telemetry", "influx:http://127.0.0.1:8086/api/v2/write?org=o"], "influx: the v2 API needs ?org=O&bucket=B (the token comes from INFLUX_TOKEN)"),
        (["--telemetry", "influx:http://127.0.0.1:8086/query?db=a"], "influx: the path must be /write (v1) or /api/v2/write (v2), not /query"),
        (["--telemetry", "influx:http://127.0.0.1:99999/write?db=a"], "influx: '99999' is not a port (1 to 65535)"),
        (["--telemetry", "influx:http://127.0.0.1:8086/write?db=%zz"], "has a bad %-escape"),
        (["--telemetry", "influx:http://:8086/write?db=a"], "influx needs HOST:PORT"),
        (["--telemetry", "graphite:2003"], "--telemetry graphite:2003: graphite needs HOST:PORT, e.g. graphite:127.0.0.1:2003"),
        (["--telemetry", "graphite:host:0"], "graphite: '0' is not a port (1 to 65535)"),
        (["--telemetry", "graphite:::1:2003"], "graphite: write an IPv6 address in brackets"),
        (["--telemetry", "graphite:[::1:2003"], "graphite needs [IPv6]:PORT with the brackets closed"),
        (["--telemetry", "prometheus:metrics"], "prometheus: 'metrics' is not a port (1 to 65535), e.g. prometheus:9464"),
        (["--telemetry", "jsonl:x", "--tag", "run"], "--tag run: a tag is KEY=VALUE, e.g. --tag run=nightly-42"),
        (["--telemetry", "jsonl:x", "--tag", "=x"], "a tag needs a key before '='"),
        (["--telemetry", "jsonl:x", "--tag", "run="], "tag run needs a value after '='"),
        (["--telemetry", "jsonl:x", "--tag", "seq=1"], "seq is every record's own"),
        (["--telemetry", "jsonl:x", "--tag", "run=1", "--tag", "run=2"], "the key run is given twice"),
        (["--tag", "run=1"], "--tag needs --telemetry"),
    ])
    func refused(arguments: [String], expected: String) {
        for command in [["subscribe", "x.sdp"], ["demo"]] {
            let message = Self.message(command + arguments)
            #expect(message?.contains(expected) == true, "\(message ?? "parsed")")
        }
    }

    @Test("tags and specs reach the engine; a host tag is added unless given")
    func tags() throws {
        let path = "/tmp/playout-cli-telemetry-\(getpid()).jsonl"
        defer { unlink(path) }
        let options = try SubscribeCommand.parse(["x.sdp", "--telemetry", "jsonl:\(path)", "--tag", "run=r 1", "--tag", "viewer=v"]).subscription
        #expect(options.tag.map(\.field) == [TelemetryField("run", .string("r 1")), TelemetryField("viewer", .string("v"))])
        let instrument = try #require(try options.makeTelemetry())
        #expect(instrument.tags.prefix(2) == [TelemetryField("run", .string("r 1")), TelemetryField("viewer", .string("v"))])
        #expect(instrument.tags.dropFirst(2).map(\.name) == ["host"])
        let report = instrument.shutdown(timeout: .seconds(1))
        #expect(report.statistics.backends.map(\.name) == ["jsonl \(path)"])
        let explicit = try SubscribeCommand.parse(["x.sdp", "--telemetry", "jsonl:\(path)", "--tag", "host=h"]).subscription
        let second = try #require(try explicit.makeTelemetry())
        #expect(second.tags == [TelemetryField("host", .string("h"))])
        second.shutdown(timeout: .seconds(1))
        #expect(try SubscribeCommand.parse(["x.sdp"]).subscription.makeTelemetry() == nil)
    }

    @Test("a network backend is refused with a clear error until one is wired in; an unwritable file too")
    func unavailable() throws {
        let influx = try SubscribeCommand.parse(["x.sdp", "--telemetry", "influx:http://127.0.0.1:8086/write?db=a"]).subscription
        #expect(throws: PlayoutError(.invalidOption, "--telemetry influx:http://127.0.0.1:8086/write?db=a: this build of playout has no network telemetry backends yet; use jsonl:PATH")) {
            try influx.makeTelemetry()
        }
        let file = try SubscribeCommand.parse(["x.sdp", "--telemetry", "jsonl:/nonexistent/dir/x.jsonl"]).subscription
        #expect(throws: PlayoutError(.invalidOption, "--telemetry jsonl:/nonexistent/dir/x.jsonl: cannot write /nonexistent/dir/x.jsonl: No such file or directory")) {
            try file.makeTelemetry()
        }
    }

    @Test("help shows both options")
    func help() {
        for command in [SubscribeCommand.self, DemoCommand.self] as [any ParsableCommand.Type] {
            let help = PlayoutCommand.helpMessage(for: command, columns: 10_000)
            #expect(help.contains("--telemetry <spec>"))
            #expect(help.contains("--tag <key=value>"))
        }
    }
}
