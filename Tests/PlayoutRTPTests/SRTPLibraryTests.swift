import PlayoutRTP
import Testing

@Suite("libsrtp2 link")
struct SRTPLibraryTests {
    @Test("srtp_init succeeds and is idempotent")
    func initializes() throws {
        try SRTPLibrary.initialize()
        try SRTPLibrary.initialize()
    }

    @Test("the linked libsrtp2 is version 2")
    func version() {
        #expect(SRTPLibrary.version.hasPrefix("libsrtp2 2."))
        #expect(SRTPLibrary.versionNumber >> 24 == 2)
    }
}
