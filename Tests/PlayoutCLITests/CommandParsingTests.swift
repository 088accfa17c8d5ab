import ArgumentParser
@testable import PlayoutCLI
import Testing

@Suite("playout command line")
struct CommandParsingTests {
    @Test("`playout version` parses to the version command")
    func versionCommand() throws {
        let command = try PlayoutCommand.parseAsRoot(["version"])
        #expect(command is VersionCommand)
    }

    @Test("an unknown subcommand is an error that names it")
    func unknownSubcommand() {
        #expect(throws: (any Error).self) { try PlayoutCommand.parseAsRoot(["frobnicate"]) }
        let message = PlayoutCommand.message(for: CleanExit.helpRequest())
        #expect(message.isEmpty || message.contains("playout"))
    }

    @Test("help lists the subcommands and the log-level variable")
    func help() {
        let help = PlayoutCommand.helpMessage()
        #expect(help.contains("version"))
        #expect(help.contains("PLAYOUT_LOG_LEVEL"))
    }

    @Test("fixed-point text as printf's %.Nf writes it", arguments: [
        (2.345, 1, "2.3"), (2.35, 0, "2"), (0.04, 1, "0.0"), (-0.04, 1, "0.0"), (-1.5, 2, "-1.50"),
        (1_234.5678, 2, "1234.57"), (0.001, 3, "0.001"), (Double.nan, 1, "nan"), (-Double.infinity, 1, "-inf"),
    ])
    func fixedPoint(value: Double, digits: Int, expected: String) {
        #expect(fixed(value, digits) == expected)
    }
}
