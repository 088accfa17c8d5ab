import PlayoutAnalytics
import PlayoutCore
import PlayoutTelemetry
import PlayoutTesting
import Testing

@Suite("Nielsen DCR adapter: conformance mode and hostile metadata")
struct NielsenConformanceTests {
    /// One scenario per documented rule: a valid session with exactly that rule broken once.
    static let scenarios: [(rule: NielsenRule, run: @Sendable (NielsenHarness) -> Void)] = [
        (.appId, { harness in
            let sdk = harness.makeSDK(appInfo: ["appid": "P12345"])
            #expect(sdk.state == .disabled)
        }),
        (.sessionOrder, { harness in
            let sdk = harness.makeSDK()
            sdk.loadMetadata(NielsenFixtures.live)  // no play
        }),
        (.metadataBeforePlayhead, { harness in
            let sdk = harness.makeSDK()
            sdk.play(NielsenFixtures.channel)
            harness.ticks(sdk, 1)
        }),
        (.stringValues, { harness in
            let sdk = harness.makeSDK()
            sdk.play(NielsenFixtures.channel)
            var metadata = NielsenFixtures.live
            metadata["length"] = 0
            #expect(sdk.loadMetadata(metadata) == [.notAString(key: "length", found: "integer")])
        }),
        (.caseSensitiveKeys, { harness in
            let sdk = harness.makeSDK()
            sdk.play(NielsenFixtures.channel)
            var metadata = NielsenFixtures.live
            metadata["assetId"] = metadata.removeValue(forKey: "assetid")
            #expect(sdk.loadMetadata(metadata) == [.wrongCaseKey("assetId", expected: "assetid")])
        }),
        (.requiredKeys, { harness in
            let sdk = harness.makeSDK()
            sdk.play(NielsenFixtures.channel)
            var metadata = NielsenFixtures.live
            metadata["airdate"] = nil
            #expect(sdk.loadMetadata(metadata) == [.missingKey("airdate", type: "content")])
        }),
        (.lengthLimits, { harness in
            let sdk = harness.makeSDK()
            sdk.play(NielsenFixtures.channel)
            var metadata = NielsenFixtures.live
            metadata["program"] = "Playout News of the Evening"  // 27 characters
            #expect(sdk.loadMetadata(metadata) == [.tooLong(key: "program", length: 27, limit: 25)])
        }),
        (.valueFormat, { harness in
            let sdk = harness.makeSDK()
            sdk.play(NielsenFixtures.channel)
            var metadata = NielsenFixtures.live
            metadata["isfullepisode"] = "maybe"
            #expect(sdk.loadMetadata(metadata).map(\.key) == ["isfullepisode"])
        }),
        (.playheadOncePerSecond, { harness in
            let sdk = harness.makeSDK()
            harness.playLive(sdk, seconds: 2)
            sdk.playheadPosition(sdk.utcSeconds())
            harness.clock.advance(by: .milliseconds(200))
            sdk.playheadPosition(sdk.utcSeconds())
        }),
        (.playheadUnits, { harness in
            let sdk = harness.makeSDK()
            harness.playLive(sdk, seconds: 2)
            sdk.playheadPosition(2)  // a position, for live content
        }),
        (.stopAfterLongBuffering, { harness in
            let sdk = harness.makeSDK()
            harness.playLive(sdk, seconds: 2)
            harness.clock.advance(by: .seconds(31))  // buffering, no stop
            harness.ticks(sdk, 2)
        }),
        (.aggregationLimits, { harness in
            let sdk = harness.makeSDK()
            for section in 0...NielsenMetadata.aggregationLimit {  // 26 distinct sections
                sdk.loadMetadata(["type": "static", "section": .string("section\(section)")])
            }
        }),
        (.finalPlayhead, { harness in
            let sdk = harness.makeSDK()
            harness.playLive(sdk, seconds: 2)
            harness.clock.advance(by: .seconds(3))  // the position at the end never sent
            sdk.end()
        }),
        (.adPlayheadFromZero, { harness in
            let sdk = harness.makeSDK()
            sdk.play()
            sdk.loadMetadata(["type": "preroll", "assetid": "AD-1"])
            sdk.playheadPosition(5)
        }),
        (.contentResumesPosition, { harness in
            let sdk = harness.makeSDK()
            sdk.play()
            sdk.loadMetadata(NielsenFixtures.onDemand)
            for position in 0..<5 {
                sdk.playheadPosition(Int64(position))
                harness.clock.advance(by: .seconds(1))
            }
            sdk.loadMetadata(["type": "midroll", "assetid": "AD-2"])
            for position in 0..<3 {
                sdk.playheadPosition(Int64(position))
                harness.clock.advance(by: .seconds(1))
            }
            sdk.stop()
            sdk.loadMetadata(NielsenFixtures.onDemand)
            sdk.playheadPosition(8)  // ad time counted into the content: it left off at 4
        }),
        (.resumeWithMetadata, { harness in
            let sdk = harness.makeSDK()
            harness.playLive(sdk, seconds: 2)
            sdk.stop()
            harness.clock.advance(by: .seconds(5))
            harness.ticks(sdk, 1)  // no loadMetadata on resume
        }),
        (.optOutURL, { harness in
            let sdk = harness.makeSDK()
            #expect(!sdk.userOptOut(NielsenAppSDK.closeOptOutPage))
            #expect(!sdk.optOutStatus)
        }),
        (.disabledInstance, { harness in
            let sdk = harness.makeSDK()
            sdk.appDisableApi(true)
            sdk.play(NielsenFixtures.channel)
        }),
    ]

    @Test("every documented rule is covered by a scenario")
    func everyRuleCovered() {
        #expect(Set(Self.scenarios.map(\.rule)) == Set(NielsenRule.allCases))
    }

    @Test("each documented rule broken once gives exactly one finding naming it, and the session goes on", arguments: Self.scenarios.indices)
    func oneFindingPerRule(_ index: Int) throws {
        let (rule, run) = Self.scenarios[index]
        let harness = try NielsenHarness()
        run(harness)
        _ = harness.finish()
        let findings = harness.log.findings
        #expect(findings.map(\.rule) == [rule], "\(findings)")
        #expect(findings.first?.description.hasPrefix("\(rule): ") == true)
        #expect(findings.first?.detail.hasSuffix("(guide: \(rule.guideSection))") == true, "\(findings)")
    }

    @Test("a clean session gives no finding")
    func clean() throws {
        let harness = try NielsenHarness()
        let sdk = harness.makeSDK()
        harness.playLive(sdk, seconds: 5)
        sdk.stop()
        harness.clock.advance(by: .seconds(40))
        sdk.loadMetadata(NielsenFixtures.live)
        harness.ticks(sdk, 3)
        sdk.end()
        sdk.play(NielsenFixtures.channel)
        sdk.loadMetadata(["type": "preroll", "assetid": "AD-1"])
        for position in 0..<3 {
            sdk.playheadPosition(Int64(position))
            harness.clock.advance(by: .seconds(1))
        }
        sdk.end()
        _ = harness.finish()
        #expect(harness.log.findings.isEmpty, "\(harness.log.findings)")
    }

    // MARK: - Hostile metadata

    @Test("oversized values and keys, too many keys: refused with the key and the length, cheaply")
    func oversized() {
        var metadata = NielsenFixtures.live
        metadata["title"] = .string(String(repeating: "x", count: 1_000_000))
        metadata[String(repeating: "k", count: 100_000)] = "v"
        let errors = NielsenMetadata.validate(metadata)
        #expect(errors.count == 2)
        #expect(errors.contains(.tooLong(key: "title", length: 1_000_000, limit: 40)))
        #expect(errors.contains { if case .tooLong(let key, 100_000, 64) = $0 { key.hasSuffix("…") && key.count == 65 } else { false } })
        #expect(errors.allSatisfy { $0.rule == .lengthLimits })
        let many = Dictionary(uniqueKeysWithValues: (0..<10_000).map { ("key\($0)", NielsenValue.string("v")) })
        #expect(NielsenMetadata.validate(many) == [.tooManyKeys(count: 10_000, limit: 100)])
        #expect(NielsenMetadata.validate(["type": "content", "title": .string(String(repeating: "é", count: 41))])
            .contains(.tooLong(key: "title", length: 41, limit: 40)))
        #expect(!NielsenMetadata.validate(["title": .string(String(repeating: "é", count: 36) + "S1E1")]).contains { $0.key == "title" })
    }

    @Test("non-string values of every kind are refused naming the key and the kind", arguments: [
        (NielsenValue.int(3600), "integer"), (.double(36.5), "number"), (.bool(true), "boolean"), (.null, "null"),
    ])
    func nonString(_ value: NielsenValue, _ kind: String) {
        var metadata = NielsenFixtures.live
        metadata["length"] = value
        #expect(NielsenMetadata.validate(metadata) == [.notAString(key: "length", found: kind)])
    }

    @Test("wrong-case keys are refused once each, naming the spelling wanted", arguments: ["Type", "ASSETID", "Program", "segb", "crossid1"])
    func wrongCase(_ key: String) {
        var metadata = NielsenFixtures.live
        metadata[key] = metadata.removeValue(forKey: key.lowercased()) ?? "x"
        let expected = NielsenMetadata.reservedKeys.first { $0.lowercased() == key.lowercased() }!
        #expect(NielsenMetadata.validate(metadata) == [.wrongCaseKey(key, expected: expected)])
    }

    @Test("formats: type, length, airdate, isfullepisode, adloadtype, assetid", arguments: [
        ("type", "movie"), ("length", "-1"), ("length", "1e3"), ("length", "ten"), ("airdate", "2026-01-01"), ("airdate", "2026-01-01T12:00:00+5"),
        ("isfullepisode", "x"), ("adloadtype", "3"), ("title", "Playout News 318"), ("crossId1", "EP0093118200"), ("airdate", "2026-13-01T12:00:00"), ("assetid", "EP 001"), ("assetid", "EP/001?x=1"),
    ])
    func formats(_ key: String, _ value: String) {
        var metadata = NielsenFixtures.live
        metadata[key] = .string(value)
        let errors = NielsenMetadata.validate(metadata)
        #expect(errors.map(\.rule) == [.valueFormat], "\(errors)")
        #expect(errors.first?.key == key)
    }

    @Test("valid formats pass", arguments: [
        ("airdate", "2026-01-01T12:00:00-0500"), ("airdate", "2026-01-01T12:00:00+05:30"), ("airdate", "20260101 12:00:00"),
        ("length", "3600.5"), ("length", "86400"), ("adloadtype", "1"), ("isfullepisode", "n"), ("isfullepisode", "Yes"), ("isfullepisode", "lf"),
        ("assetid", "CBS_s5.e234-F2021"), ("title", "The Pants Alternative S3 E18"), ("crossId1", "SH009311820022"),
    ])
    func validFormats(_ key: String, _ value: String) {
        var metadata = NielsenFixtures.live
        metadata[key] = .string(value)
        #expect(NielsenMetadata.validate(metadata).isEmpty)
    }

    @Test("required keys per content type: content, ads, static")
    func requiredPerType() {
        #expect(NielsenMetadata.validate(NielsenFixtures.live).isEmpty)
        #expect(NielsenMetadata.validate(["type": "midroll", "assetid": "AD-2"]).isEmpty)
        #expect(NielsenMetadata.validate(["type": "postroll"]) == [.missingKey("assetid", type: "postroll")])
        #expect(NielsenMetadata.validate(["type": "static", "section": "home"]).isEmpty)
        #expect(NielsenMetadata.validate(["type": "static", "section": ""]) == [.missingKey("section", type: "static")])
        #expect(NielsenMetadata.validate([:]) == [.missingKey("type", type: "any")])
        #expect(NielsenMetadata.validateChannelInfo([:]) == [.missingKey("channelName", type: "channel info")])
        #expect(NielsenMetadata.validate(["type": "content"]).map(\.key) == ["assetid", "program", "title", "length", "airdate", "isfullepisode", "adloadtype"])
    }

    @Test("random bytes as keys and values: clear errors or acceptance, never a crash, every error names a bounded key")
    func randomBytes() {
        var random = SeededRandomNumberGenerator(seed: 16)
        func randomString(_ count: Int) -> String {
            String(decoding: (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }, as: UTF8.self)
        }
        for _ in 0..<400 {
            var metadata: [String: NielsenValue] = Bool.random(using: &random) ? NielsenFixtures.live : [:]
            for _ in 0..<Int.random(in: 0...12, using: &random) {
                let key = Bool.random(using: &random) ? randomString(Int.random(in: 0...80, using: &random)) : NielsenMetadata.reservedKeys.randomElement(using: &random)!
                metadata[key] = Bool.random(using: &random) ? .string(randomString(Int.random(in: 0...600, using: &random))) : .int(Int64.random(in: .min ... .max, using: &random))
            }
            for error in NielsenMetadata.validate(metadata) + NielsenMetadata.validateChannelInfo(metadata) {
                #expect((error.key?.count ?? 0) <= 65)
                #expect(!error.description.isEmpty)
            }
        }
    }

    @Test("hostile metadata through the SDK: refused, recorded, no event sent, and the session goes on")
    func hostileThroughSDK() throws {
        let harness = try NielsenHarness()
        let sdk = harness.makeSDK()
        sdk.play(["channelName": 42])
        sdk.loadMetadata(["type": .string(String(repeating: "\u{0}", count: 5_000)), "\u{FFFF}": .null])
        sdk.loadMetadata(NielsenFixtures.live)
        harness.ticks(sdk, 2)
        _ = harness.finish()
        try harness.memory.expectEvents(["viewinit", "play", "loadmetadata", "playing", "viewend"])
        #expect(harness.log.findings.map(\.rule) == [.stringValues, .lengthLimits, .stringValues])
        #expect(harness.log.calls.count == 6)
    }
}
