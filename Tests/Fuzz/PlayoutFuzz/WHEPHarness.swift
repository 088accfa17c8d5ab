// libFuzzer harness for the WHEP answer reader (listed in `fuzzHarnesses` as `sdp-answer`).
import PlayoutRTP
import PlayoutWebRTC

/// The SDP answer reader on any bytes (as UTF-8, invalid sequences repaired): it throws a typed
/// error or returns an answer whose invariants hold — ICE credentials and fingerprint of the
/// right shape, unique mids, only supported codecs kept, and the same answer read back from the
/// description written out again.
public func fuzzSDPAnswer(_ bytes: UnsafeRawBufferPointer) {
    let text = String(decoding: bytes, as: UTF8.self)
    guard let answer = try? WHEPAnswer(parsing: text) else { return }
    precondition((4...256).contains(answer.iceUsernameFragment.utf8.count) && (22...256).contains(answer.icePassword.utf8.count))
    precondition(answer.fingerprint.digest.count == answer.fingerprint.algorithm.digestLength)
    precondition(answer.media.count == answer.sessionDescription.media.count && answer.media.count <= 32)
    let mids = answer.media.compactMap(\.mid)
    precondition(Set(mids).count == mids.count, "mids are unique")
    precondition(answer.media.contains { !$0.isRejected && !$0.codecs.isEmpty })
    for media in answer.media {
        precondition(!media.isRejected || media.codecs.isEmpty)
        for codec in media.codecs {
            precondition(WHEPAnswer.supportedEncodings.contains(codec.name.lowercased()))
        }
    }
    let again = try? WHEPAnswer(parsing: answer.sessionDescription.serialized())
    precondition(again == answer, "an answer written out reads back the same")
}
