import Foundation
#if canImport(Glibc)
import Glibc
#endif
import PlayoutRTP
import PlayoutWebRTC
import RealTimeTesting
import Synchronization
import Testing

/// A WHEP server from Tests/WebRTCPeers run with Debian's Python: its JSON lines collected.
final class WHEPPeerProcess: Sendable {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("WebRTCPeers")
    let process: Process
    private let output = Output()

    /// What the peer printed: whole lines, and the start of the next.
    private final class Output: Sendable {
        let lines = Mutex<[String]>([])
        let pending = Mutex<[UInt8]>([])
    }

    init(script: String, arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [Self.directory.appendingPathComponent(script).path] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        self.process = process
        try process.run()
        // A thread of its own reads the peer's lines until it exits (end of file).
        let reader = Thread { [collected = output, handle = pipe.fileHandleForReading] in
            while true {
                let data = handle.availableData
                if data.isEmpty { return }
                let complete: [String] = collected.pending.withLock { buffer in
                    buffer.append(contentsOf: data)
                    var found: [String] = []
                    while let end = buffer.firstIndex(of: 0x0A) {
                        found.append(String(decoding: buffer[..<end], as: UTF8.self))
                        buffer.removeSubrange(...end)
                    }
                    return found
                }
                if !complete.isEmpty { collected.lines.withLock { $0 += complete } }
            }
        }
        reader.start()
    }

    /// The first JSON line whose `event` is `name` (and which `matches`), waiting up to `timeout`.
    func event(_ name: String, timeout: Duration = .seconds(20), matching matches: ([String: Any]) -> Bool = { _ in true }) -> [String: Any]? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            for line in output.lines.withLock({ $0 }) {
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { continue }
                if object["event"] as? String == name, matches(object) { return object }
            }
            guard process.isRunning else { return nil }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return nil
    }

    /// Ends the peer with SIGKILL: a child of the test process inherits its blocked SIGTERM.
    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

/// Our offer against two independent WebRTC stacks serving WHEP on loopback: the answer reads,
/// the DELETE reaches them. (The media path needs ICE and DTLS: see the integration tests.)
@Suite("WHEP against aiortc and GStreamer webrtcbin", .realTime)
struct WHEPPeerTests {
    static var offer: WHEPOffer {
        let fingerprint = try! DTLSFingerprint(algorithm: .sha256, digest: (0..<32).map { _ in UInt8.random(in: 0...255) })
        return WHEPOffer(
            iceUsernameFragment: "pLay", icePassword: "p1ayoutTestPassword0123",
            candidates: ["1 1 udp 2130706431 127.0.0.1 50000 typ host"],
            fingerprint: fingerprint
        )
    }

    @Test("POST our offer, read the answer, DELETE the session", arguments: [
        ("aiortc_whep.py", "vp8"), ("aiortc_whep.py", "h264"), ("gst_whep.py", "vp8"), ("gst_whep.py", "h264"),
    ])
    func offerAnswerDelete(script: String, video: String) throws {
        let peer = try WHEPPeerProcess(script: script, arguments: ["--port", "0", "--video", video, "--token", "peer-token"] + (script.hasPrefix("aiortc") ? ["--loopback"] : []))
        defer { peer.stop() }
        let ready = try #require(peer.event("ready"), "\(script) did not start: is python3-aiortc / gstreamer1.0-nice installed (make setup)?")
        let port = try #require(ready["port"] as? Int)
        let client = try WHEPClient(endpoint: WHEPURL("http://127.0.0.1:\(port)/whep"), token: "peer-token")
        let session = try client.open(offer: Self.offer.serialized())
        let answer = try WHEPAnswer(parsing: session.answer)

        #expect(answer.iceUsernameFragment.count >= 4)
        #expect(answer.icePassword.count >= 22)
        #expect(answer.fingerprint.algorithm == .sha256)
        #expect(answer.fingerprint.digest.count == 32)
        #expect(answer.setup == .active || answer.setup == .passive)
        #expect(!answer.candidates.isEmpty)
        #expect(answer.bundle == ["0", "1"])
        #expect(answer.media.map(\.mid) == ["0", "1"])
        #expect(answer.media.map(\.kind) == [.video, .audio])
        #expect(answer.media.allSatisfy { $0.direction == .sendonly && $0.rtcpMux && !$0.isRejected })
        let videoCodecs = answer.media[0].codecs.map { $0.name.uppercased() }
        #expect(!videoCodecs.isEmpty && videoCodecs.allSatisfy { $0 == video.uppercased() }, "\(videoCodecs)")
        if video == "h264" {
            #expect(answer.media[0].codecs.allSatisfy { $0.formatParameters?.packetizationMode == 1 || $0.formatParameters == nil })
        }
        #expect(answer.media[1].codecs.map { $0.name.lowercased() } == ["opus"])
        #expect(answer.media[1].codecs.first?.clockRate == 48_000)
        #expect(peer.event("created") != nil)

        let identifier = String(session.sessionURL.target.split(separator: "/").last ?? "")
        #expect(session.sessionURL.target == "/whep/\(identifier)")
        #expect(client.close() == .success(200))
        let deleted = peer.event("deleted", timeout: .seconds(10)) { $0["id"] as? String == identifier }
        #expect(deleted != nil, "the peer saw the DELETE")
    }

    @Test("a wrong token is refused by the peer with 401 and its problem title")
    func wrongToken() throws {
        let peer = try WHEPPeerProcess(script: "aiortc_whep.py", arguments: ["--port", "0", "--token", "right"])
        defer { peer.stop() }
        let port = try #require(peer.event("ready")?["port"] as? Int)
        let client = try WHEPClient(endpoint: WHEPURL("http://127.0.0.1:\(port)/whep"), token: "wrong")
        #expect { try client.open(offer: Self.offer.serialized()) } throws: { error in
            let error = error as! WHEPError
            return error.code == .httpStatus(401) && error.message.contains("missing or wrong bearer token")
        }
    }
}
