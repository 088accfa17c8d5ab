extension SRTPKeyingMaterial {
    /// The keying material of an SDP `a=crypto` line (RFC 4568 SDES): its suite and first inline
    /// key.
    ///
    /// - Throws: ``SRTPError`` when libsrtp2 does not know the suite or the key has the wrong length.
    public init(crypto: CryptoAttribute) throws(SRTPError) {
        let suite = try SRTPCryptoSuite(name: crypto.suite.rawValue)
        try self.init(concatenated: crypto.keyAndSalt, suite: suite)
    }
}
