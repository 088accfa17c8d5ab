import ArgumentParser
@testable import PlayoutCLI
import Testing

@Suite("playout swarm report: parsing")
struct SwarmReportCommandTests {
    @Test("--from and --run are required; --json is a flag")
    func parsing() throws {
        let command = try SwarmReportCommand.parse(["--from", "victoria:http://127.0.0.1:8428", "--run", "nightly-42", "--json"])
        #expect(command.from == "victoria:http://127.0.0.1:8428" && command.runID == "nightly-42" && command.json)
        #expect(try !SwarmReportCommand.parse(["--from", "influx:http://h:8086/write?db=p", "--run", "a b, c"]).json)
        #expect(throws: (any Error).self) { try SwarmReportCommand.parse(["--run", "x"]) }
        #expect(throws: (any Error).self) { try SwarmReportCommand.parse(["--from", "victoria:http://h:1"]) }
    }

    @Test("a spec or run id that cannot be one is refused with what to write", arguments: [
        (["--from", "graphite:h:2003", "--run", "x"], "victoria:http://HOST:PORT"),
        (["--from", "influx:http://h:8086/write", "--run", "x"], "db=NAME"),
        (["--from", "victoria:http://h:8428", "--run", "a\\b"], "--run nightly-42"),
        (["--from", "victoria:http://h:8428", "--run", ""], "--run nightly-42"),
    ])
    func refused(_ arguments: [String], _ says: String) {
        #expect {
            _ = try SwarmReportCommand.parse(arguments)
        } throws: { error in
            SwarmReportCommand.message(for: error).contains(says)
        }
    }
}
