@testable import Playout
import PlayoutTelemetry
import Testing

@Suite("QoS fields")
struct QoSFieldsTests {
    /// A sample whose every field of every track is set to a value of its own (audio without a
    /// picture size).
    static func fullSample(state: SubscriberState = .playing) -> SubscriberQoS {
        func track(_ kind: MediaKind, _ codec: Codec, _ base: Int) -> TrackQoS {
            var n = base
            func next() -> Int {
                n += 1
                return n
            }
            func seconds() -> Duration { .microseconds(next() * 1_001) }
            var t = TrackQoS(kind: kind, codec: codec)
            t.packetsReceived = next()
            t.packetsLost = next()
            t.packetsDiscarded = next()
            t.packetsDuplicated = next()
            t.bytesReceived = next()
            t.jitter = seconds()
            t.authFailures = next()
            t.replayDrops = next()
            t.restarts = next()
            t.packetsFromOtherSources = next()
            t.packetsFromUnvalidatedSources = next()
            t.packetsFromSourcesNotPlayed = next()
            t.packetsOutOfSequence = next()
            t.packetsImplausibleTimestamp = next()
            t.packetsWrongPayloadType = next()
            t.datagramsUndecodable = next()
            t.datagramsNotRTP = next()
            t.datagramsBadVersion = next()
            t.datagramsTruncated = next()
            t.datagramsBadExtension = next()
            t.datagramsBadPadding = next()
            t.rtcpFromOtherSources = next()
            t.rtcpUndecodable = next()
            t.sourceSwitches = next()
            t.sourceResyncs = next()
            t.playedSSRC = UInt32(next())
            t.nackCount = next()
            t.pliCount = next()
            t.firCount = next()
            t.rtcpPacketsSent = next()
            t.rtcpPacketsUnsent = next()
            t.roundTripTime = seconds()
            t.retransmittedPacketsReceived = next()
            t.retransmittedBytesReceived = next()
            t.retransmittedPacketsLate = next()
            t.retransmittedPacketsDuplicated = next()
            t.retransmittedPacketsDropped = next()
            t.framesLate = next()
            t.framesReceived = next()
            t.framesDecoded = next()
            t.keyFramesDecoded = next()
            t.framesRendered = next()
            t.framesRenderedLate = next()
            t.framesDropped = next()
            t.framesSkipped = next()
            t.totalSkippedDuration = seconds()
            t.framesIncomplete = next()
            t.framesDroppedWaitingForKeyframe = next()
            t.framesDroppedOverflow = next()
            t.framesDroppedOnRestart = next()
            t.decodeErrors = next()
            t.framesPerSecond = Double(next()) + 0.25
            t.frameWidth = kind == .video ? next() : 0
            t.frameHeight = kind == .video ? next() : 0
            t.totalDecodeTime = seconds()
            t.totalInterFrameDelay = Double(next()) / 8
            t.totalSquaredInterFrameDelay = Double(next()) / 16
            t.freezeCount = next()
            t.totalFreezesDuration = seconds()
            t.pauseCount = next()
            t.totalPausesDuration = seconds()
            t.delayPauseCount = next()
            t.totalDelayPausesDuration = seconds()
            t.playoutDelay = EffectivePlayoutDelay(delay: .milliseconds(next()), source: .override)
            t.jitterBufferDelay = seconds()
            t.jitterBufferEmittedCount = next()
            t.jitterBufferTargetDelay = seconds()
            t.jitterBufferMinimumDelay = seconds()
            t.bufferedDuration = seconds()
            t.bufferedFrames = next()
            t.bufferedBytes = next()
            t.bitrate = Double(next()) * 1_000.5
            t.renderError.record(seconds())
            t.endToEndLatency.record(seconds())
            t.endToEndLatency.record(seconds())
            t.transit.record(seconds())
            return t
        }
        return SubscriberQoS(
            elapsed: .milliseconds(4_321), state: state, playoutDelay: EffectivePlayoutDelay(delay: .milliseconds(750), source: .override),
            tracks: [.video: track(.video, .h264, 0), .audio: track(.audio, .opus, 1_000)])
    }

    @Test("the field list names every stored property of TrackQoS once")
    func everyTrackProperty() {
        let properties = Mirror(reflecting: Self.fullSample().tracks[.video]!).children.compactMap(\.label)
        let listed = TrackQoS.fields.map(\.property)
        #expect(Set(listed).count == listed.count, "a property is listed twice")
        #expect(Set(properties).subtracting(listed).sorted() == [], "add these to TrackQoS.fields")
        #expect(Set(listed).subtracting(properties).sorted() == [], "TrackQoS has no such properties")
        #expect(Set(TrackQoS.fields.map(\.name)).count == listed.count, "two fields are written under one name")
    }

    @Test("the fields that add up are TotalQoS's properties, in its order")
    func everyTotalProperty() {
        let properties = Mirror(reflecting: TotalQoS([])).children.compactMap(\.label).filter { $0 != "decoded" }
        #expect(TrackQoS.totalFields.map(\.name) == properties)
    }

    @Test("the totals sum every track's fields that add up")
    func totals() {
        let sample = Self.fullSample()
        let (video, audio) = (sample.video!, sample.audio!)
        let total = sample.total
        #expect(total.packetsReceived == video.packetsReceived + audio.packetsReceived)
        #expect(total.delayPauseCount == video.delayPauseCount + audio.delayPauseCount)
        #expect(total.bitrate == video.bitrate + audio.bitrate)
        #expect(TotalQoS([]) == TotalQoS([TrackQoS(kind: .video, codec: .h264)]))
    }

    @Test("a sample with every field set writes exactly the qos line and heartbeat it always did")
    func fullSampleOutputs() {
        let sample = Self.fullSample()
        #expect(QoSJSONWriter().line(for: sample) == Self.fullLine)
        #expect(Self.described(SubscriberTelemetryTranslator.heartbeatFields(sample)) == Self.fullHeartbeat)
    }

    @Test("a track's object leaves out what it has not got: SRTP counters, round trip, SSRC, the size before a picture")
    func absentFields() throws {
        var sample = Self.fullSample()
        sample.tracks[.video]?.authFailures = nil
        sample.tracks[.video]?.replayDrops = nil
        sample.tracks[.video]?.roundTripTime = nil
        sample.tracks[.video]?.playedSSRC = nil
        sample.tracks[.video]?.frameWidth = 0
        let video = try #require(sample.video)
        let written = Set(video.writtenFields.map(\.name))
        #expect(written.isDisjoint(with: ["authFailures", "replayDrops", "roundTripTime", "ssrc", "frameWidth", "frameHeight"]))
        // The heartbeat's top level carries the video's size whatever it is.
        let heartbeat = SubscriberTelemetryTranslator.heartbeatFields(sample)
        #expect(heartbeat.first { $0.name == "frameWidth" }?.value == .int(0))
        #expect(heartbeat.contains { $0.name == "video.frameHeight" } == false)
    }

    @Test("Without decoding the decode statistics are unknown: null in the JSON lines, left out of the heartbeat, never 0")
    func undecoded() throws {
        var sample = Self.fullSample()
        sample.tracks[.video]?.decoded = false
        sample.tracks[.audio]?.decoded = false
        let line = QoSJSONWriter().line(for: sample)
        for name in ["framesDecoded", "keyFramesDecoded", "decodeErrors", "totalDecodeTime"] {
            #expect(line.ranges(of: "\"\(name)\":null").count == 2 + (name == "framesDecoded" ? 1 : 0), "\(name): video, audio (and total)")
            #expect(!SubscriberTelemetryTranslator.heartbeatFields(sample).contains { $0.name.hasSuffix("." + name) || $0.name == name })
        }
        // The qos line made from the heartbeat record (the --json stream) says the same.
        let record = TelemetryRecord(sessionId: "s", seq: 1, monotonic: .seconds(4), wallTimeNanoseconds: 0, kind: .heartbeat, name: "heartbeat",
                                     fields: SubscriberTelemetryTranslator.heartbeatFields(sample))
        #expect(QoSJSONWriter().line(for: record) == line)
        // One track decoded: the total is known.
        sample.tracks[.audio]?.decoded = true
        #expect(sample.total.decoded)
        #expect(QoSJSONWriter().line(for: sample).contains(#""total":{"packetsReceived":1002,"#))
        #expect(QoSJSONWriter().line(for: sample).contains(#""framesDecoded":1080"#))
    }

    static func described(_ fields: [TelemetryField]) -> String {
        fields.map { "\($0.name)=\($0.value)" }.joined(separator: ",")
    }

    /// ``fullSample()``'s `qos` line, as the command line has always written it.
    static let fullLine = [
        #"{"type":"qos","t":4.321,"state":"playing","playoutDelay":0.75,"playoutDelaySource":"override","video":{"packetsReceived":1,"#,
        #""packetsLost":2,"packetsDiscarded":3,"packetsDuplicated":4,"bytesReceived":5,"jitter":0.006006,"framesReceived":39,"#,
        #""framesDecoded":40,"keyFramesDecoded":41,"framesRendered":42,"framesRenderedLate":43,"framesDropped":44,"framesSkipped":45,"#,
        #""framesIncomplete":47,"decodeErrors":51,"totalSkippedDuration":0.046046,"framesPerSecond":52.25,"totalDecodeTime":0.055055,"#,
        #""totalInterFrameDelay":7,"totalSquaredInterFrameDelay":3.5625,"freezeCount":58,"totalFreezesDuration":0.059059,"pauseCount":60,"#,
        #""totalPausesDuration":0.061061,"delayPauseCount":62,"totalDelayPausesDuration":0.063063,"jitterBufferDelay":0.065065,"#,
        #""jitterBufferTargetDelay":0.067067,"jitterBufferMinimumDelay":0.068068,"jitterBufferEmittedCount":66,"#,
        #""bufferedDuration":0.069069,"bufferedFrames":70,"bufferedBytes":71,"bitrate":72036,"frameWidth":53,"frameHeight":54,"#,
        #""authFailures":7,"replayDrops":8,"packetsFromOtherSources":10,"packetsFromUnvalidatedSources":11,"#,
        #""packetsFromSourcesNotPlayed":12,"packetsOutOfSequence":13,"packetsImplausibleTimestamp":14,"packetsWrongPayloadType":15,"#,
        #""datagramsUndecodable":16,"datagramsNotRTP":17,"datagramsBadVersion":18,"datagramsTruncated":19,"datagramsBadExtension":20,"#,
        #""datagramsBadPadding":21,"rtcpFromOtherSources":22,"rtcpUndecodable":23,"sourceSwitches":24,"sourceResyncs":25,"framesLate":38,"#,
        #""nackCount":27,"pliCount":28,"firCount":29,"rtcpPacketsSent":30,"rtcpPacketsUnsent":31,"retransmittedPacketsReceived":33,"#,
        #""retransmittedBytesReceived":34,"retransmittedPacketsLate":35,"retransmittedPacketsDuplicated":36,"#,
        #""retransmittedPacketsDropped":37,"roundTripTime":0.032032,"ssrc":26},"audio":{"packetsReceived":1001,"packetsLost":1002,"#,
        #""packetsDiscarded":1003,"packetsDuplicated":1004,"bytesReceived":1005,"jitter":1.007006,"framesReceived":1039,"#,
        #""framesDecoded":1040,"keyFramesDecoded":1041,"framesRendered":1042,"framesRenderedLate":1043,"framesDropped":1044,"#,
        #""framesSkipped":1045,"framesIncomplete":1047,"decodeErrors":1051,"totalSkippedDuration":1.047046,"framesPerSecond":1052.25,"#,
        #""totalDecodeTime":1.054053,"totalInterFrameDelay":131.75,"totalSquaredInterFrameDelay":65.9375,"freezeCount":1056,"#,
        #""totalFreezesDuration":1.058057,"pauseCount":1058,"totalPausesDuration":1.060059,"delayPauseCount":1060,"#,
        #""totalDelayPausesDuration":1.062061,"jitterBufferDelay":1.064063,"jitterBufferTargetDelay":1.066065,"#,
        #""jitterBufferMinimumDelay":1.067066,"jitterBufferEmittedCount":1064,"bufferedDuration":1.068067,"bufferedFrames":1068,"#,
        #""bufferedBytes":1069,"bitrate":1070535,"authFailures":1007,"replayDrops":1008,"packetsFromOtherSources":1010,"#,
        #""packetsFromUnvalidatedSources":1011,"packetsFromSourcesNotPlayed":1012,"packetsOutOfSequence":1013,"#,
        #""packetsImplausibleTimestamp":1014,"packetsWrongPayloadType":1015,"datagramsUndecodable":1016,"datagramsNotRTP":1017,"#,
        #""datagramsBadVersion":1018,"datagramsTruncated":1019,"datagramsBadExtension":1020,"datagramsBadPadding":1021,"#,
        #""rtcpFromOtherSources":1022,"rtcpUndecodable":1023,"sourceSwitches":1024,"sourceResyncs":1025,"framesLate":1038,"#,
        #""nackCount":1027,"pliCount":1028,"firCount":1029,"rtcpPacketsSent":1030,"rtcpPacketsUnsent":1031,"#,
        #""retransmittedPacketsReceived":1033,"retransmittedBytesReceived":1034,"retransmittedPacketsLate":1035,"#,
        #""retransmittedPacketsDuplicated":1036,"retransmittedPacketsDropped":1037,"roundTripTime":1.033032,"ssrc":1026},"#,
        #""total":{"packetsReceived":1002,"packetsLost":1004,"packetsDiscarded":1006,"packetsDuplicated":1008,"bytesReceived":1010,"#,
        #""framesReceived":1078,"framesDecoded":1080,"framesRendered":1084,"framesDropped":1088,"framesSkipped":1090,"freezeCount":1114,"#,
        #""pauseCount":1118,"delayPauseCount":1122,"bitrate":1142571}}"#,
    ].joined()

    /// ``fullSample()``'s heartbeat fields (`name=value`), as the subscriber's tracker has always emitted them.
    static let fullHeartbeat = [
        #"elapsed=4.321,state=playing,playoutDelay=0.75,playoutDelaySource=override,packetsReceived=1002,packetsLost=1004,"#,
        #"packetsDiscarded=1006,packetsDuplicated=1008,bytesReceived=1010,framesReceived=1078,framesDecoded=1080,framesRendered=1084,"#,
        #"framesDropped=1088,framesSkipped=1090,freezeCount=1114,pauseCount=1118,delayPauseCount=1122,bitrate=1142571.0,"#,
        #"framesPerSecond=52.25,frameWidth=53,frameHeight=54,totalFreezesDuration=0.059059,endToEndLatency=0.075135,"#,
        #"video.packetsReceived=1,video.packetsLost=2,video.packetsDiscarded=3,video.packetsDuplicated=4,video.bytesReceived=5,"#,
        #"video.jitter=0.006006,video.framesReceived=39,video.framesDecoded=40,video.keyFramesDecoded=41,video.framesRendered=42,"#,
        #"video.framesRenderedLate=43,video.framesDropped=44,video.framesSkipped=45,video.framesIncomplete=47,video.decodeErrors=51,"#,
        #"video.totalSkippedDuration=0.046046,video.framesPerSecond=52.25,video.totalDecodeTime=0.055055,video.totalInterFrameDelay=7.0,"#,
        #"video.totalSquaredInterFrameDelay=3.5625,video.freezeCount=58,video.totalFreezesDuration=0.059059,video.pauseCount=60,"#,
        #"video.totalPausesDuration=0.061061,video.delayPauseCount=62,video.totalDelayPausesDuration=0.063063,"#,
        #"video.jitterBufferDelay=0.065065,video.jitterBufferTargetDelay=0.067067,video.jitterBufferMinimumDelay=0.068068,"#,
        #"video.jitterBufferEmittedCount=66,video.bufferedDuration=0.069069,video.bufferedFrames=70,video.bufferedBytes=71,"#,
        #"video.bitrate=72036.0,video.frameWidth=53,video.frameHeight=54,video.authFailures=7,video.replayDrops=8,"#,
        #"video.packetsFromOtherSources=10,video.packetsFromUnvalidatedSources=11,video.packetsFromSourcesNotPlayed=12,"#,
        #"video.packetsOutOfSequence=13,video.packetsImplausibleTimestamp=14,video.packetsWrongPayloadType=15,"#,
        #"video.datagramsUndecodable=16,video.datagramsNotRTP=17,video.datagramsBadVersion=18,video.datagramsTruncated=19,"#,
        #"video.datagramsBadExtension=20,video.datagramsBadPadding=21,video.rtcpFromOtherSources=22,video.rtcpUndecodable=23,"#,
        #"video.sourceSwitches=24,video.sourceResyncs=25,video.framesLate=38,video.nackCount=27,video.pliCount=28,video.firCount=29,"#,
        #"video.rtcpPacketsSent=30,video.rtcpPacketsUnsent=31,video.retransmittedPacketsReceived=33,video.retransmittedBytesReceived=34,"#,
        #"video.retransmittedPacketsLate=35,video.retransmittedPacketsDuplicated=36,video.retransmittedPacketsDropped=37,"#,
        #"video.roundTripTime=0.032032,video.ssrc=26,audio.packetsReceived=1001,audio.packetsLost=1002,audio.packetsDiscarded=1003,"#,
        #"audio.packetsDuplicated=1004,audio.bytesReceived=1005,audio.jitter=1.007006,audio.framesReceived=1039,audio.framesDecoded=1040,"#,
        #"audio.keyFramesDecoded=1041,audio.framesRendered=1042,audio.framesRenderedLate=1043,audio.framesDropped=1044,"#,
        #"audio.framesSkipped=1045,audio.framesIncomplete=1047,audio.decodeErrors=1051,audio.totalSkippedDuration=1.047046,"#,
        #"audio.framesPerSecond=1052.25,audio.totalDecodeTime=1.054053,audio.totalInterFrameDelay=131.75,"#,
        #"audio.totalSquaredInterFrameDelay=65.9375,audio.freezeCount=1056,audio.totalFreezesDuration=1.058057,audio.pauseCount=1058,"#,
        #"audio.totalPausesDuration=1.060059,audio.delayPauseCount=1060,audio.totalDelayPausesDuration=1.062061,"#,
        #"audio.jitterBufferDelay=1.064063,audio.jitterBufferTargetDelay=1.066065,audio.jitterBufferMinimumDelay=1.067066,"#,
        #"audio.jitterBufferEmittedCount=1064,audio.bufferedDuration=1.068067,audio.bufferedFrames=1068,audio.bufferedBytes=1069,"#,
        #"audio.bitrate=1070535.0,audio.authFailures=1007,audio.replayDrops=1008,audio.packetsFromOtherSources=1010,"#,
        #"audio.packetsFromUnvalidatedSources=1011,audio.packetsFromSourcesNotPlayed=1012,audio.packetsOutOfSequence=1013,"#,
        #"audio.packetsImplausibleTimestamp=1014,audio.packetsWrongPayloadType=1015,audio.datagramsUndecodable=1016,"#,
        #"audio.datagramsNotRTP=1017,audio.datagramsBadVersion=1018,audio.datagramsTruncated=1019,audio.datagramsBadExtension=1020,"#,
        #"audio.datagramsBadPadding=1021,audio.rtcpFromOtherSources=1022,audio.rtcpUndecodable=1023,audio.sourceSwitches=1024,"#,
        #"audio.sourceResyncs=1025,audio.framesLate=1038,audio.nackCount=1027,audio.pliCount=1028,audio.firCount=1029,"#,
        #"audio.rtcpPacketsSent=1030,audio.rtcpPacketsUnsent=1031,audio.retransmittedPacketsReceived=1033,"#,
        #"audio.retransmittedBytesReceived=1034,audio.retransmittedPacketsLate=1035,audio.retransmittedPacketsDuplicated=1036,"#,
        #"audio.retransmittedPacketsDropped=1037,audio.roundTripTime=1.033032,audio.ssrc=1026"#,
    ].joined()
}
