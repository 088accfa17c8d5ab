import Foundation
import PlayoutRTP
import Testing

@Suite("libsrtp2 link")
struct SRTPLibraryTests {
    @Test("srtp_init succeeds and is idempotent")
    func initializes() throws {
        try SRTPLibrary.initialize()
        try SRTPLibrary.initialize()
    }

    @Test("AES-CM-128 and HMAC-SHA1 run on libcrypto once libsrtp2 is initialized (after passing its self-tests)")
    func libcrypto() throws {
        try SRTPLibrary.initialize()
        #expect(SRTPLibrary.usesLibcrypto)
    }

    @Test("the libcrypto primitives give libcrypto's own AES-128-CTR key stream and HMAC-SHA1 tag at every length up to 3,000 bytes, across split calls")
    func primitivesMatchLibcrypto() {
        #expect(SRTPLibrary.primitiveMismatches(maximumLength: 3_000) == 0)
    }

    @Test("the linked libsrtp2 is version 2")
    func version() {
        #expect(SRTPLibrary.version.hasPrefix("libsrtp2 2."))
        #expect(SRTPLibrary.versionNumber >> 24 == 2)
    }

    @Test("on NSS (Debian's libsrtp2), the crypto module is loaded once and stays loaded after the last session is freed")
    func cryptoModuleStaysLoaded() throws {
        try SRTPLibrary.initialize()
        let nssLoaded = dlopen("libnss3.so", RTLD_NOW | RTLD_NOLOAD) != nil
        #expect(SRTPLibrary.keepsCryptoModuleLoaded == nssLoaded)
        guard nssLoaded else { return }  // libsrtp2 on OpenSSL: nothing to keep
        for _ in 0..<5 {
            _ = try SRTPSession(keyingMaterial: .random(for: .aesCM128HMACSHA1_80), direction: .inbound)
        }
        // Every session above is gone; NSS would have shut down and unloaded softokn without the
        // context Playout holds.
        #expect(dlopen("libsoftokn3.so", RTLD_NOW | RTLD_NOLOAD) != nil)
    }
}
