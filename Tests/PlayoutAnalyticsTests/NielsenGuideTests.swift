import PlayoutAnalytics
import PlayoutCore
import PlayoutTelemetry
import PlayoutTesting
import Testing

/// The guide's own examples (DCR video iOS App SDK, `seeds/002`), verbatim where Swift can say
/// them: each plays through the adapter, its records are asserted, and no finding is raised.
enum NielsenGuide {
    /// "Sample SDK Initialization Code", Objective-C (the Swift sample's id is one digit short:
    /// see `swiftSampleAppId`).
    static let appInformation: [String: NielsenValue] = ["appid": "PE392366B-F2C1-4BC4-AB62-A7DAFDC51XXX", "nol_devDebug": "DEBUG"]
    /// "Sample SDK Initialization Code", Swift: 11 characters in the last group.
    static let swiftSampleAppId: NielsenValue = "PE392366B-F2C1-4BC4-AB62-A7DAFDCXXXX"
    /// "Metadata Example", Swift.
    static let contentMetadata: [String: NielsenValue] = [
        "type": "content",
        "assetid": "C77664",
        "program": "The Big Bang Theory",
        "title": "The Pants Alternative S03E18",  // Formats accepted: S01E03, S1E3, S1 E3
        "crossId1": "EP009311820061",  // optional
        "crossId2": "Content Originator",  // optional
        "length": "3600",
        "airdate": "2022-03-21T10:05:00",
        "isfullepisode": "Yes",
        "adloadtype": "2",
        "segB": "CustomSegmentValueB",  // optional
        "segC": "CustomSegmentValueC",  // optional
    ]
    /// "Metadata Example", Objective-C: the same with `"isfullepisode": "y"`.
    static var contentMetadataObjC: [String: NielsenValue] {
        var metadata = contentMetadata
        metadata["isfullepisode"] = "y"
        return metadata
    }
    /// "API Call Sequence, Use Case 1" (its `...` left out).
    static let useCase1Content: [String: NielsenValue] = [
        "type": "content", "assetid": "vid345-67483", "program": "The Big Bang Theory", "title": "The Pants Alternative S03E18",
        "airdate": "2022-03-21T10:05:00", "isfullepisode": "Yes", "adloadtype": "2", "length": "3600",
    ]
    /// "Example Ad Object".
    static let ad: [String: NielsenValue] = ["type": "preroll", "assetid": "AD-ID123"]
    /// "Use Case 2"'s ad.
    static let preroll: [String: NielsenValue] = ["type": "preroll", "assetid": "ad123"]
    /// "Example Static Object".
    static let staticData: [String: NielsenValue] = [
        "type": "static", "section": "Section Name", "segA": "segmentA", "segB": "segmentB", "segC": "en-us",
    ]
    /// "AirPlay": the OTT dictionary the route-change handler prepares for an Apple TV.
    static let ottStatus: [String: NielsenValue] = [
        "ottStatus": "1", "ottDeviceModel": "Apple TV 4K", "ottDeviceID": "DC:56:E7:53:72:85-airplay", "ottDevice": "appleTV",
        "ottType": "airplay",
    ]
}

@Suite("Nielsen DCR adapter: the guide's examples and sequences, verbatim")
struct NielsenGuideTests {
    func makeSDK(_ harness: NielsenHarness) -> NielsenAppSDK {
        harness.makeSDK(appInfo: NielsenGuide.appInformation)
    }

    /// Playheads `positions`, one a second.
    func playheads(_ sdk: NielsenAppSDK, _ harness: NielsenHarness, _ positions: ClosedRange<Int64>) {
        for position in positions {
            sdk.playheadPosition(position)
            harness.clock.advance(by: .seconds(1))
        }
    }

    @Test("SDK Initialization: the Objective-C sample's app info initializes (X is a masked digit); nol_devDebug DEBUG")
    func initialization() throws {
        let harness = try NielsenHarness()
        let sdk = makeSDK(harness)
        #expect(sdk.state == .idle)
        #expect(sdk.debugLevel == .debug)
        _ = harness.finish()
        #expect(harness.log.findings.isEmpty, "\(harness.log.findings)")
    }

    @Test("the metadata examples — content (Swift and Objective-C), ad, static, Use Case 1's — are accepted as written", arguments: [
        NielsenGuide.contentMetadata, NielsenGuide.contentMetadataObjC, NielsenGuide.useCase1Content, NielsenGuide.ad, NielsenGuide.preroll,
        NielsenGuide.staticData,
    ])
    func metadataExamples(_ metadata: [String: NielsenValue]) {
        #expect(NielsenMetadata.validate(metadata).isEmpty, "\(NielsenMetadata.validate(metadata))")
    }

    @Test("every airdate format the guide lists is accepted", arguments: [
        "2022-03-21T10:05:00", "2022-03-2110:05:00", "2022-03-21T10:05:00+05:30", "2022-03-21T10:05:00-05:00", "2022032110:05:00",
        "20220321 10:05:00", "03-21-2022", "03/21/2022", "20220321",
    ])
    func airdates(_ airdate: String) {
        var metadata = NielsenGuide.contentMetadata
        metadata["airdate"] = .string(airdate)
        #expect(NielsenMetadata.validate(metadata).isEmpty)
        #expect(NielsenMetadata.airdateFormats.count == 12)  // the guide's nine, then Z and ±hhmm
    }

    @Test("Sample API Sequence: static metadata at app start, play(), content metadata, playheads, end — no finding")
    func sampleSequence() throws {
        let harness = try NielsenHarness()
        let sdk = makeSDK(harness)
        #expect(sdk.loadMetadata(NielsenGuide.staticData).isEmpty)  // On App Start
        sdk.play()  // Start of stream
        sdk.loadMetadata(NielsenGuide.contentMetadata)
        playheads(sdk, harness, 0...4)  // Content
        sdk.end()  // End of Stream
        let records = harness.finish()
        try harness.memory.expectEvents(["viewinit", "loadmetadata", "play", "loadmetadata", "playing", "ended", "viewend"])
        #expect(records.filter { $0.name == "playheadposition" }.map { $0[field: "value"] } == (0...4).map { TelemetryValue.int($0) })
        #expect(records.first { $0.name == "playing" }?[field: "assetid"] == .string("C77664"))
        #expect(harness.log.findings.isEmpty, "\(harness.log.findings)")
    }

    @Test("Use Case 1: play, content, playheads, stop on an interruption, loadMetadata and playheads from the resume position, end")
    func useCase1() throws {
        let harness = try NielsenHarness()
        let sdk = makeSDK(harness)
        sdk.play()
        sdk.loadMetadata(NielsenGuide.useCase1Content)
        playheads(sdk, harness, 0...9)
        sdk.stop()  // Interruption
        harness.clock.advance(by: .seconds(20))
        sdk.loadMetadata(NielsenGuide.useCase1Content)  // Resume Content
        playheads(sdk, harness, 10...14)
        sdk.end()
        let records = harness.finish()
        try harness.memory.expectEvents(["viewinit", "play", "loadmetadata", "playing", "pause", "loadmetadata", "playing", "ended", "viewend"])
        #expect(records.filter { $0.name == "playheadposition" }.count == 15)
        #expect(harness.log.findings.isEmpty, "\(harness.log.findings)")
    }

    @Test("Use Case 2: content, preroll from 0 and stop, content, midroll from 0 and stop, content resumes where it left off, end, postroll after end")
    func useCase2() throws {
        let harness = try NielsenHarness()
        let sdk = makeSDK(harness)
        let midroll: [String: NielsenValue] = ["type": "midroll", "assetid": "ad456"]
        let postroll: [String: NielsenValue] = ["type": "postroll", "assetid": "ad789"]
        sdk.play()  // Start of stream
        sdk.loadMetadata(NielsenGuide.contentMetadata)
        sdk.loadMetadata(NielsenGuide.preroll)  // Preroll
        playheads(sdk, harness, 0...4)
        sdk.stop()
        sdk.loadMetadata(NielsenGuide.contentMetadata)  // Content
        playheads(sdk, harness, 0...9)
        sdk.loadMetadata(midroll)  // Midroll
        playheads(sdk, harness, 0...2)
        sdk.stop()
        sdk.loadMetadata(NielsenGuide.contentMetadata)  // Content Resumes
        playheads(sdk, harness, 9...20)
        sdk.end()  // End of Stream
        sdk.loadMetadata(postroll)  // Postroll
        playheads(sdk, harness, 0...2)
        sdk.stop()
        let records = harness.finish()
        try harness.memory.expectEvents([
            "viewinit", "play", "loadmetadata", "loadmetadata", "playing", "pause", "loadmetadata", "playing", "loadmetadata", "pause",
            "loadmetadata", "playing", "ended", "loadmetadata", "play", "playing", "pause", "viewend",
        ])
        let ads = records.filter { $0.name == "loadmetadata" }.map { $0[field: "type"] }
        #expect(ads == ["content", "preroll", "content", "midroll", "content", "postroll"].map { TelemetryValue.string($0) })
        #expect(harness.log.findings.isEmpty, "\(harness.log.findings)")
    }

    @Test("the next stream after a postroll begins with play(): a videochange, no finding")
    func nextStreamAfterPostroll() throws {
        let harness = try NielsenHarness()
        let sdk = makeSDK(harness)
        sdk.play()
        sdk.loadMetadata(NielsenGuide.contentMetadata)
        playheads(sdk, harness, 0...2)
        sdk.end()
        sdk.loadMetadata(["type": "postroll", "assetid": "ad789"])
        playheads(sdk, harness, 0...1)
        sdk.stop()
        sdk.play()
        sdk.loadMetadata(NielsenGuide.useCase1Content)
        playheads(sdk, harness, 0...1)
        sdk.end()
        _ = harness.finish()
        try harness.memory.expectEvents(["play", "ended", "pause", "play", "videochange", "ended"], match: .inOrder)
        #expect(harness.log.findings.isEmpty, "\(harness.log.findings)")
    }

    @Test("No Ad Framework opt-out: userOptOut(\"nielsenappsdk://1\") keeps measuring, records marked optout; nielsenappsdk://0 opts back in")
    func optOutByURL() throws {
        let harness = try NielsenHarness()
        let sdk = makeSDK(harness)
        #expect(sdk.optOutURL == NielsenAppSDK.defaultOptOutURL)
        sdk.play()
        sdk.loadMetadata(NielsenGuide.contentMetadata)
        playheads(sdk, harness, 0...1)
        #expect(sdk.userOptOut("nielsenappsdk://1"))  // User opt-out
        #expect(sdk.optOutStatus)
        playheads(sdk, harness, 2...3)
        #expect(sdk.userOptOut("nielsenappsdk://0"))
        #expect(!sdk.optOutStatus)
        playheads(sdk, harness, 4...5)
        sdk.end()
        let records = harness.finish()
        let marks = records.filter { $0.name == "playheadposition" }.map { $0[field: "optout"] }
        #expect(marks == [nil, nil, .bool(true), .bool(true), .bool(false), .bool(false)])
        #expect(harness.log.findings.isEmpty, "\(harness.log.findings)")
    }

    @Test("No ID opt-out: userOptOut right after initialization; every record of the session is marked")
    func optOutNoID() throws {
        let harness = try NielsenHarness()
        let sdk = makeSDK(harness)
        sdk.userOptOut("nielsenappsdk://1")
        sdk.play()
        sdk.loadMetadata(NielsenGuide.contentMetadata)
        playheads(sdk, harness, 0...2)
        sdk.end()
        let records = harness.finish()
        #expect(records.filter { $0.name == "playheadposition" }.count == 3)
        #expect(records.filter { !["viewinit", "heartbeat"].contains($0.name) }.allSatisfy { $0[field: "optout"] == .bool(true) })
        #expect(harness.log.findings.isEmpty, "\(harness.log.findings)")
    }

    @Test("AirPlay: updateOTT with the route handler's dictionary becomes attributes and an updateott action")
    func airPlay() throws {
        let harness = try NielsenHarness()
        let sdk = makeSDK(harness)
        sdk.play()
        sdk.loadMetadata(NielsenGuide.contentMetadata)
        #expect(sdk.updateOTT(NielsenGuide.ottStatus).isEmpty)
        playheads(sdk, harness, 0...1)
        sdk.end()
        let records = harness.finish()
        let update = try #require(records.first { $0.name == "updateott" })
        #expect(update[field: "ottStatus"] == .string("1"))
        #expect(records.first { $0.name == "playing" }?[field: "ottType"] == .string("airplay"))
        #expect(harness.log.findings.isEmpty, "\(harness.log.findings)")
        #expect(NielsenMetadata.validateOTT(["ottStatus": "2"]).map(\.rule) == [.valueFormat])
    }

    @Test("appDisableApi: the Disabled state ignores calls; enabled again it measures")
    func disable() throws {
        let harness = try NielsenHarness()
        let sdk = makeSDK(harness)
        sdk.appDisableApi(true)
        #expect(sdk.state == .disabled)
        sdk.appDisableApi(false)
        sdk.play()
        #expect(sdk.state == .processing)
        _ = harness.finish()
        #expect(harness.log.findings.isEmpty)
    }

    @Test("the Swift sample's app id is one digit short: refused, naming the guide's section")
    func swiftSampleAppId() throws {
        let harness = try NielsenHarness()
        let sdk = harness.makeSDK(appInfo: ["appid": NielsenGuide.swiftSampleAppId, "nol_devDebug": "DEBUG"])
        #expect(sdk.state == .disabled)
        _ = harness.finish()
        #expect(harness.log.findings.map(\.rule) == [.appId])
        #expect(harness.log.findings.first?.detail.hasSuffix("(guide: SDK Initialization)") == true)
    }
}
