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
}
