import ArgumentParser
import Playout
import PlayoutTelemetryBackends
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
            "--telemetry", "influx:http://db.example:9999/api/v2/write?org=my%20org&bucket=b1&precision=ns",
            "--telemetry", "graphite:127.0.0.1:2003",
            "--telemetry", "graphite:[::1]:2003",
            "--telemetry", "prometheus:9464",
            "--telemetry", "prometheus:0.0.0.0:9464",
        ])
        #expect(parsed.count == 7)
        #expect(parsed[0] == .jsonl(path: "run.jsonl"))
        #expect(parsed[1] == .influx(writeURL: "http://127.0.0.1:8086/write?db=playout", api: .v1(database: "playout")))
        #expect(parsed[2] == .influx(writeURL: "http://db.example:9999/api/v2/write?org=my%20org&bucket=b1&precision=ns", api: .v2(organization: "my org", bucket: "b1")))
        #expect(parsed[3] == .graphite(host: "127.0.0.1", port: 2003))
        #expect(parsed[4] == .graphite(host: "::1", port: 2003))
        #expect(parsed[5] == .prometheus(host: PrometheusEndpoint.defaultHost, port: 9464))
        #expect(parsed[6] == .prometheus(host: "0.0.0.0", port: 9464))
    }

    @Test("a spec that does not parse: the option, the value, and what to type", arguments: [
        (["--telemetry", "kafka:x"], "--telemetry kafka:x: 'kafka' is not a telemetry backend; use jsonl:PATH"),
        (["--telemetry", "run.jsonl"], "--telemetry run.jsonl: 'run.jsonl' is not a telemetry spec; use jsonl:PATH"),
        (["--telemetry", "jsonl:"], "--telemetry jsonl:: jsonl needs a path, e.g. jsonl:telemetry.jsonl"),
        (["--telemetry", "influx:ftp://x/write?db=a"], "--telemetry influx:ftp://x/write?db=a: influx: 'ftp://x/write?db=a' is not an http:// URL"),
        (["--telemetry", "influx:https://x/write?db=a"], "uses https, which Playout does not speak"),
        (["--telemetry", "influx:http://127.0.0.1:8086/write"], "names no database (db=NAME)"),
        (["--telemetry", "influx:http://127.0.0.1:8086/api/v2/write?org=o"], "names no bucket (bucket=B)"),
        (["--telemetry", "influx:http://127.0.0.1:8086/query?db=a"], "is not a write URL: write http://HOST:PORT/write?db=NAME"),
        (["--telemetry", "influx:http://127.0.0.1:99999/write?db=a"], "influx: 'http://127.0.0.1:99999/write?db=a'"),
        (["--telemetry", "influx:http://127.0.0.1:8086/write?db=a&precision=s"], "asks for precision=s"),
        (["--telemetry", "influx:http://:8086/write?db=a"], "has no host"),
        (["--telemetry", "graphite:2003"], "--telemetry graphite:2003: graphite: '2003' is not HOST:PORT, e.g. graphite:127.0.0.1:2003"),
        (["--telemetry", "graphite:host:0"], "'host:0' is not HOST:PORT"),
        (["--telemetry", "graphite:::1:2003"], "'::1:2003' is not HOST:PORT"),
        (["--telemetry", "graphite:[::1:2003"], "'[::1:2003' is not HOST:PORT"),
        (["--telemetry", "prometheus:metrics"], "prometheus: 'metrics' is not HOST:PORT, e.g. prometheus:127.0.0.1:9464 or prometheus:9464"),
        (["--telemetry", "jsonl:x", "--tag", "run"], "--tag run: a tag is KEY=VALUE, e.g. --tag run=nightly-42"),
        (["--telemetry", "jsonl:x", "--tag", "=x"], "a tag needs a key before '='"),
        (["--telemetry", "jsonl:x", "--tag", "run="], "tag run needs a value after '='"),
        (["--telemetry", "jsonl:x", "--tag", "seq=1"], "seq is every record's own"),
        (["--telemetry", "jsonl:x", "--tag", "run=1", "--tag", "run=2"], "the key run is given twice"),
        (["--tag", "run=1"], "--tag needs --telemetry"),
        (["--telemetry-strict"], "--telemetry-strict needs --telemetry"),
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
        // Tests' stdout is not a terminal: the run writes JSON, and that stream is a backend too.
        #expect(options.writesJSON)
        #expect(report.statistics.backends.map(\.name) == ["jsonl \(path)", SubscriptionSession.standardOutputBackend])
        let explicit = try SubscribeCommand.parse(["x.sdp", "--telemetry", "jsonl:\(path)", "--tag", "host=h"]).subscription
        let second = try #require(try explicit.makeTelemetry())
        #expect(second.tags == [TelemetryField("host", .string("h"))])
        second.shutdown(timeout: .seconds(1))
        // No --telemetry: the engine carries the JSON stream alone, with no tags.
        let plain = try #require(try SubscribeCommand.parse(["x.sdp"]).subscription.makeTelemetry())
        #expect(plain.tags.isEmpty)
        #expect(plain.shutdown(timeout: .seconds(1)).statistics.backends.map(\.name) == [SubscriptionSession.standardOutputBackend])
    }

    @Test("network backends are built from their specs; a Prometheus port in use and an unwritable file are clear errors")
    func networkBackends() throws {
        let options = try SubscribeCommand.parse([
            "x.sdp", "--telemetry", "influx:http://127.0.0.1:8086/write?db=a", "--telemetry", "graphite:127.0.0.1:2003",
            "--telemetry", "prometheus:127.0.0.1:0",
        ]).subscription
        let instrument = try #require(try options.makeTelemetry())
        let names = instrument.shutdown(timeout: .milliseconds(200)).statistics.backends.map(\.name)
        #expect(names.count == 4 && names[0] == "influx 127.0.0.1:8086" && names[1].hasPrefix("graphite") && names[2].hasPrefix("prometheus :")
                && names[3] == SubscriptionSession.standardOutputBackend, "\(names)")
        // A port someone else holds.
        let held = try PrometheusEndpoint(host: "127.0.0.1", port: 0)
        defer { held.stop() }
        let clash = try SubscribeCommand.parse(["x.sdp", "--telemetry", "prometheus:127.0.0.1:\(held.port)"]).subscription
        do {
            _ = try clash.makeTelemetry()
            Issue.record("a port in use was accepted")
        } catch let error as PlayoutError {
            #expect(error.code == .invalidOption && error.message.hasPrefix("--telemetry prometheus:127.0.0.1:\(held.port): "), "\(error)")
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
