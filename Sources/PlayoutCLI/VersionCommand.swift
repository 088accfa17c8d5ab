import ArgumentParser
import Playout

/// `playout version`: Playout's version and the linked FFmpeg and libsrtp2 versions.
struct VersionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "version",
        abstract: "Print Playout's version and the linked FFmpeg and libsrtp2 versions."
    )

    func run() throws {
        print(LinkedLibraries.report)
    }
}
