import PlayoutCore
import PlayoutJitter
import Testing

@Suite("Sender clock: RTCP sender reports put audio and video on one timeline")
struct SenderClockTests {
    /// NTP (UQ32.32) for `seconds` since 1900.
    func ntp(_ seconds: Double) -> UInt64 {
        UInt64(seconds * 4_294_967_296)
    }

    @Test("audio and video with different clock rates and random bases map to the same wall clock")
    func lipSync() {
        var video = SenderClock(clockRate: 90_000)
        var audio = SenderClock(clockRate: 48_000)
        #expect(video.mediaTime(for: 1) == nil, "nothing before a sender report")
        // Both reports describe the same instant, 3,900,000,000 s after 1900.
        video.update(ntpTimestamp: ntp(3_900_000_000), rtpTimestamp: 4_294_000_000)  // near the wrap
        audio.update(ntpTimestamp: ntp(3_900_000_000), rtpTimestamp: 123_456)
        #expect(video.isSynchronized && audio.isSynchronized)
        // One second later on each clock: video wrapped past 2^32.
        let videoTime = video.mediaTime(for: RTPTimestamp(rawValue: 4_294_000_000 &+ 90_000))
        let audioTime = audio.mediaTime(for: RTPTimestamp(rawValue: 123_456 + 48_000))
        #expect(videoTime == audioTime)
        #expect(videoTime == .seconds(3_900_000_001))
        // Timestamps before the report work too.
        #expect(audio.mediaTime(for: RTPTimestamp(rawValue: 123_456 - 24_000)) == .milliseconds(3_900_000_000_000 - 500))
        // Shared timeline: the same media instant renders at the same local instant.
        var timeline = PlayoutTimeline()
        timeline.observe(mediaTime: videoTime!, arrival: MonotonicInstant(nanoseconds: 5_000_000_000))
        #expect(timeline.localTime(for: videoTime!) == timeline.localTime(for: audioTime!))
    }

    @Test("NTP fractions convert exactly")
    func ntpConversion() {
        var clock = SenderClock(clockRate: 1_000)
        clock.update(ntpTimestamp: 1 << 31, rtpTimestamp: 0)  // 0.5 s after 1900
        #expect(clock.mediaTime(for: 0) == .milliseconds(500))
        #expect(clock.mediaTime(for: 250) == .milliseconds(750))
    }
}
