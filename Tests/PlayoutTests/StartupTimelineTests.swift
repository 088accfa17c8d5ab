@testable import Playout
import PlayoutCore
import Testing

/// The start-up steps: each recorded once, at its first instant, the tracks' earliest counting.
@Suite("Start-up timeline")
struct StartupTimelineTests {
    static let start = MonotonicInstant(nanoseconds: 1_000_000_000)

    static func at(_ milliseconds: Int64) -> MonotonicInstant { start.advanced(by: .milliseconds(milliseconds)) }

    @Test("steps record once, report their time since the start, in the order they happen")
    func recordOnce() {
        var timeline = StartupTimeline(start: Self.start)
        let offer = timeline.record(.offerSent, at: Self.at(1))
        let answer = timeline.record(.answerReceived, at: Self.at(40))
        let again = timeline.record(.answerReceived, at: Self.at(90))
        #expect(offer && answer && !again)
        #expect(timeline.elapsed(.answerReceived) == .milliseconds(40))
        #expect(timeline.elapsed(.iceConnected) == nil)
        #expect(timeline.reached.map(\.milestone) == [.offerSent, .answerReceived])
        #expect(StartupTimeline.Milestone.allCases.sorted() == StartupTimeline.Milestone.allCases)
    }

    @Test("the tracks' last steps: the earliest of any track; nothing new once the first frame is in")
    func tracks() {
        var timeline = StartupTimeline(start: Self.start)
        let audio = StartupTimeline.TrackMilestones(firstPacket: Self.at(50), firstKeyFrame: Self.at(50), firstFrame: nil)
        let video = StartupTimeline.TrackMilestones(firstPacket: Self.at(60), firstKeyFrame: Self.at(120), firstFrame: nil)
        let first = timeline.record([video, audio])
        #expect(first == [.firstPacket, .firstKeyFrame])
        #expect(timeline.elapsed(.firstKeyFrame) == .milliseconds(50))
        let again = timeline.record([video, audio])
        #expect(again.isEmpty)
        var shown = video
        shown.firstFrame = Self.at(300)
        let frame = timeline.record([shown, audio])
        let after = timeline.record([shown, audio])
        #expect(frame == [.firstFrame] && after.isEmpty)
    }

    @Test("a track's first packet is never later than its first key frame")
    func packetBeforeKeyFrame() {
        var timeline = StartupTimeline(start: Self.start)
        let video = StartupTimeline.TrackMilestones(firstPacket: Self.at(80), firstKeyFrame: Self.at(70), firstFrame: nil)
        let steps = timeline.record([video])
        #expect(steps == [.firstPacket, .firstKeyFrame])
        #expect(timeline.elapsed(.firstPacket) == .milliseconds(70) && timeline.elapsed(.firstKeyFrame) == .milliseconds(70))
        // Another track's earlier packet filed after a later one was taken (probation held it).
        var later = StartupTimeline(start: Self.start)
        _ = later.record([StartupTimeline.TrackMilestones(firstPacket: Self.at(90), firstKeyFrame: nil, firstFrame: nil)])
        _ = later.record([
            StartupTimeline.TrackMilestones(firstPacket: Self.at(90), firstKeyFrame: nil, firstFrame: nil),
            StartupTimeline.TrackMilestones(firstPacket: Self.at(60), firstKeyFrame: Self.at(60), firstFrame: nil),
        ])
        #expect(later.elapsed(.firstPacket) == .milliseconds(60) && later.elapsed(.firstKeyFrame) == .milliseconds(60))
    }

    @Test("the JSON stream's startup events: one per step, at the step's own time, never twice")
    func contractEvents() {
        var contract = SubscriberContractEvents()
        var timeline = StartupTimeline(start: Self.start)
        timeline.record(.offerSent, at: Self.at(2))
        timeline.record(.answerReceived, at: Self.at(30))
        let first = contract.startup(timeline)
        #expect(first.count == 2)
        timeline.record(.iceConnected, at: Self.at(70))
        let second = contract.startup(timeline)
        #expect(second.count == 1)
        guard case .action(let name, let fields) = second[0] else {
            Issue.record("not an action: \(second[0])")
            return
        }
        #expect(name == "startup")
        #expect(fields.contains { $0.name == "step" && $0.value == .string("ice_connected") })
        #expect(fields.contains { $0.name == "elapsed" && $0.value == .double(0.07) })
    }

    @Test("which sources are WHEP endpoints", arguments: [
        ("https://example.org/whep/live", false, true), ("http://127.0.0.1:8889/cam/WHEP", false, true), ("https://example.org/live.m3u8", false, false),
        ("https://whep.example.org/live.m3u8", false, false), ("https://example.org/play", true, true), ("rtsp://example.org/whep", true, false),
        ("stream.sdp", true, false), ("http://host", false, false),
    ])
    func endpoints(source: String, always: Bool, isEndpoint: Bool) {
        #expect(WHEPSourceOptions(always: always).isEndpoint(source) == isEndpoint)
    }
}
