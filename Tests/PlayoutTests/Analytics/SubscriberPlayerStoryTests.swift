import Playout
import PlayoutAnalytics
import Testing

@Suite("The subscriber's story for the adapters' bridges (sans-IO)")
struct SubscriberPlayerStoryTests {
    static let configured = EffectivePlayoutDelay(delay: .milliseconds(230), source: .configured)
    static let override = EffectivePlayoutDelay(delay: .seconds(1), source: .override)

    func sample(_ state: SubscriberState, delayPauses: Int = 0, width: Int = 320) -> SubscriberQoS {
        var video = TrackQoS(kind: .video, codec: .h264)
        video.frameWidth = width
        video.frameHeight = 180
        video.delayPauseCount = delayPauses
        video.bitrate = 250_000
        var audio = TrackQoS(kind: .audio, codec: .opus)
        audio.bitrate = 64_000  // no part of the rendition's bitrate
        return SubscriberQoS(elapsed: .seconds(1), state: state, playoutDelay: Self.configured, tracks: [.video: video, .audio: audio])
    }

    @Test("issue 28: the rendition's bitrate is the video's; the frames a viewer lost are the video's drops less the skips asked for")
    func numbers() {
        var video = TrackQoS(kind: .video, codec: .h264)
        video.bitrate = 280_000
        video.framesDropped = 166 - 84  // late, incomplete … and skipped
        video.framesSkipped = 52
        var audio = TrackQoS(kind: .audio, codec: .opus)
        audio.bitrate = 108_000
        audio.framesDropped = 84
        let sample = SubscriberQoS(elapsed: .seconds(1), state: .playing, playoutDelay: Self.configured, tracks: [.video: video, .audio: audio])
        #expect(sample.total.bitrate == 388_000 && sample.renditionBitrate == 280_000)
        #expect(sample.total.framesDropped == 166 && sample.videoFramesLost == 30)
        let audioOnly = SubscriberQoS(elapsed: .seconds(1), state: .playing, playoutDelay: Self.configured, tracks: [.audio: audio])
        #expect(audioOnly.renditionBitrate == 108_000 && audioOnly.videoFramesLost == 0)
    }

    @Test("load, start, first frame; a requested increase pauses until the sample that counts the delay pause; one warning per stall; the end waits for the final sample")
    func story() {
        var story = SubscriberPlayerStory()
        var steps: [SubscriberPlayerStory.Step] = []
        steps += story.playoutDelay(Self.configured)
        steps += story.state(.connecting)
        steps += story.state(.buffering)
        steps += story.state(.playing)
        steps += story.qos(sample(.playing))
        steps += story.playoutDelay(Self.override)
        steps += story.qos(sample(.playing))  // the pause goes on
        steps += story.qos(sample(.playing, delayPauses: 1))
        steps += story.playoutDelay(Self.configured)  // a decrease after the pause: nothing more
        steps += story.state(.buffering)
        steps += story.state(.stalled)
        steps += story.state(.buffering)
        steps += story.state(.stalled)  // the same stall: no second warning
        steps += story.state(.playing)
        steps += story.state(.ended)  // told with the final sample
        let final = sample(.ended, delayPauses: 1)
        steps += story.qos(final)
        steps += story.qos(final)
        #expect(steps.filter { if case .sample = $0 { false } else { true } } == [
            .load, .start, .firstFrame, .renditionChange(bitrate: 250_000, width: 320, height: 180), .pause, .resume, .bufferStart,
            .stallWarning("stalled: nothing rendered for the stall timeout"), .bufferEnd, .ended(final),
        ])
    }

    @Test("a decrease that arrives while the delay pause is under way ends it; a failure ends with the reason and the final sample")
    func decreaseEndsPause() {
        var story = SubscriberPlayerStory()
        _ = story.playoutDelay(Self.configured)
        _ = story.state(.connecting)
        _ = story.state(.playing)
        #expect(story.playoutDelay(Self.override) == [.pause])
        #expect(story.playoutDelay(Self.configured) == [.resume])
        let failed = sample(.failed(reason: "wrong key"))
        #expect(story.qos(failed).last == .failed(reason: "wrong key", failed))
        #expect(story.state(.playing).isEmpty)
    }
}
