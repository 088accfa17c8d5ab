import PlayoutCore
import PlayoutRTP
import Testing

@Suite("Capture clock and NTP time")
struct CaptureClockTests {
    @Test("an abs-capture-time with a clock offset moves the capture onto the sender's clock")
    func absoluteCaptureTimeOffset() {
        let capture = AbsoluteCaptureTime(captureTimestamp: NTPTime.ntp(unixNanoseconds: 1_700_000_000_000_000_000), estimatedCaptureClockOffset: -(1 << 31))
        let clock = CaptureClock(absoluteCaptureTime: capture, rtpTimestamp: 7)
        #expect(clock.source == .absoluteCaptureTime)
        #expect(abs(clock.unixNanoseconds - (1_700_000_000_000_000_000 - 500_000_000)) <= 1, "−0.5 s")
        // Hostile extremes wrap or clamp; they never trap.
        for offset in [Int64.min, Int64.max] {
            _ = CaptureClock(absoluteCaptureTime: AbsoluteCaptureTime(captureTimestamp: .max, estimatedCaptureClockOffset: offset), rtpTimestamp: 0)
        }
    }

    @Test("a sender report's point maps RTP times on both sides of it, across the timestamp's wrap")
    func senderReport() throws {
        let wall: Int64 = 1_700_000_000_123_456_789
        let report = RTCPSenderReport(ssrc: 1, ntpTimestamp: NTPTime.ntp(unixNanoseconds: wall), rtpTimestamp: 4_294_967_000, packetCount: 0, octetCount: 0)
        let clock = CaptureClock(senderReport: report)
        #expect(clock.source == .senderReport)
        let later = try #require(clock.unixNanoseconds(rtpTimestamp: 4_294_967_000 &+ 960, clockRate: 48_000))
        #expect(abs(later - (wall + 20_000_000)) < 1_000)
        let earlier = try #require(clock.unixNanoseconds(rtpTimestamp: 4_294_967_000 - 48_000, clockRate: 48_000))
        #expect(abs(earlier - (wall - 1_000_000_000)) < 1_000)
        #expect(clock.unixNanoseconds(rtpTimestamp: 0, clockRate: 0) == nil)
        #expect(clock.unixNanoseconds(rtpTimestamp: 0, clockRate: -1) == nil)
    }

    @Test("NTP timestamps convert to and from Unix nanoseconds without losing the fraction")
    func ntpRoundTrip() {
        for nanoseconds: Int64 in [0, 1, 999_999_999, 1_700_000_000_123_456_789, 4_000_000_000_999_999_999, -1, -1_500_000_000] {
            let ntp = NTPTime.ntp(unixNanoseconds: nanoseconds)
            #expect(abs(NTPTime.unixNanoseconds(ntp: ntp) - nanoseconds) <= 1, "\(nanoseconds)")
        }
        #expect(NTPTime.ntp(unixNanoseconds: 500_000_000) & 0xFFFF_FFFF == 0x8000_0000, "half a second is half the fraction")
        #expect(NTPTime.ntp(unixNanoseconds: 0) >> 32 == 2_208_988_800)
        // Hostile extremes never trap.
        _ = NTPTime.ntp(unixNanoseconds: .min)
        _ = NTPTime.ntp(unixNanoseconds: .max)
        _ = NTPTime.unixNanoseconds(ntp: .max)
        _ = NTPTime.unixNanoseconds(ntp: 0)
    }
}
