import Playout
import Testing

@Suite("Linked libraries")
struct LinkedLibrariesTests {
    @Test("the report names FFmpeg's libraries and libsrtp2 with versions")
    func report() {
        let names = LinkedLibraries.all.map(\.name)
        #expect(names == ["libavformat", "libavcodec", "libavutil", "libswscale", "libswresample", "libsrtp2"])
        #expect(LinkedLibraries.all.allSatisfy { $0.version.split(separator: ".").count == 3 })
        let report = LinkedLibraries.report
        #expect(report.hasPrefix("playout \(PlayoutVersion.current)\nffmpeg "))
        #expect(report.contains("libsrtp2 2."))
    }
}
