import ArgumentParser
import Playout
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
        (1_234.5678, 2, "1234.57"), (0.001, 3, "0.001"), (Double.nan, 1, "nan"), (-Double.infinity, 1, "-inf"), (2.5, -1, "3"),
        (1e300, 2, "1e+300"),
    ])
    func fixedPoint(value: Double, digits: Int, expected: String) {
        #expect(fixed(value, digits) == expected)
    }

    @Test("hostile impairment options are a clear error, never a trap", arguments: [
        ["--loss", "1e400"], ["--loss=-2%"], ["--loss", "nan"], ["--reorder", "101%"], ["--duplicate", ""],
        ["--burst-loss", "10%"], ["--burst-loss", "10%/"], ["--burst-loss", "10%/nan"], ["--burst-loss", "10%/1e400"],
        ["--burst-loss", "10%/0"], ["--burst-loss", "10%/-3"], ["--burst-loss", "/8"], ["--burst-loss", "10%/8/2"],
        ["--bandwidth", "1e300"], ["--bandwidth", "0"], ["--bandwidth=-5M"], ["--bandwidth", "M"], ["--bandwidth", "nanM"],
        ["--bandwidth", "99999999999999999999G"],
    ])
    func hostileImpairment(arguments: [String]) throws {
        let options = try ImpairmentOptions.parse(arguments)
        #expect(throws: (any Error).self, "\(arguments)") { try options.configuration() }
    }

    @Test("hostile test-pattern options are a clear error", arguments: [
        ["--codec", "mpeg2"], ["--size", "1280"], ["--size", "x"], ["--size", "99999999999999999999x720"], ["--size", "1281x720"],
        ["--size", "100x100"], ["--fps", "0"], ["--fps", "1000"], ["--bitrate", "1"],
    ])
    func hostileVideo(arguments: [String]) throws {
        let options = try VideoOptions.parse(arguments)
        #expect(throws: ValidationError.self, "\(arguments)") { try options.settings() }
    }
}
