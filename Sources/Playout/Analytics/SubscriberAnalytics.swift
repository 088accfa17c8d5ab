public import PlayoutAnalytics
public import PlayoutCore
public import PlayoutTelemetry

/// One analytics SDK's adapter run over a subscription, in conformance mode: what that SDK would
/// have reported for this stream — its records, its view's KPIs — and every rule of its guide the
/// run broke (``ConformanceReport``). The command line's `--analytics mux|adobe|nielsen|openavt`.
///
/// The adapter is driven through its subscriber bridge (``MuxSubscriberBridge``,
/// ``HeartbeatSubscriberBridge``, ``NielsenSubscriberBridge``, ``OpenAVTSubscriberBridge``) and
/// reports into a telemetry engine of its own, apart from the subscriber's telemetry: every
/// record goes to a ``Tally`` (counts for a live view and a summary, a fixed amount of memory)
/// and to the `backends` given, each behind the engine's bounded queue (the command line's is
/// the JSON Lines stream: ``jsonFormat(adapter:)``).
///
/// | adapter | set-up |
/// |---|---|
/// | `mux` | ``MuxCore``, player `"playout"`, customer player data with no environment key (Mux infers it; nothing is sent) |
/// | `adobe` | ``HeartbeatTracker`` with the subscriber as its player delegate; configuration `trackingServer` `localhost`, `jobId`, `publisher` and `channel` `playout` |
/// | `nielsen` | ``NielsenAppSDK`` (a test app id), live playheads once a second; content metadata from the session description: `assetid` its id, `program` its name, `title` its name and `S1E1` (the guide wants a season and episode; a test stream has none), `length` 0 (live), a fixed `airdate` (unknown for a test stream) — a name beyond the guide's limits (`program` 25 characters, `title` 40) is a finding |
/// | `openavt` | ``OpenAVTInstrument`` with OpenAVT's core hub and metric calculator, one tracker `"subscriber"`, ready before the bridge starts |
///
/// Create it before `start()`, keep it for the run, and ``finish(timeout:)`` after
/// `waitUntilEnded()` (the bridge has then told the adapter the end):
///
/// ```swift
/// let analytics = try SubscriberAnalytics(.mux, subscriber: subscriber)
/// try subscriber.start()
/// _ = subscriber.waitUntilEnded()
/// let summary = analytics.finish(timeout: .seconds(5))
/// print(summary.conformance.junitXML)        // one test case per MuxRule, a failure per finding
/// ```
public final class SubscriberAnalytics: Sendable {
    /// The adapters the command line runs, by their option names.
    public enum Adapter: String, Sendable, CaseIterable {
        /// Mux Data's custom integration (``MuxCore``).
        case mux
        /// Adobe's video heartbeat (``HeartbeatTracker``).
        case adobe
        /// Nielsen's DCR app SDK (``NielsenAppSDK``).
        case nielsen
        /// OpenAVT's instrument (``OpenAVTInstrument``).
        case openavt
    }

    /// Counts of the records an adapter reported — bounded: at most ``maximumNames`` record
    /// names are told apart, the rest counted under `"other"`. A telemetry backend, thread safe.
    public final class Tally: TelemetryBackend {
        /// How many record names are counted apart: 64.
        public static let maximumNames = 64

        /// What was counted.
        public struct Counts: Sendable, Equatable {
            /// Records in all.
            public var records = 0
            /// Event records by name, in the order first seen.
            public var events: [(name: String, count: Int)] = []
            /// Heartbeats (the SDK's periodic QoS pings).
            public var heartbeats = 0
            /// Metric records (an SDK's own metrics: OpenAVT's).
            public var metrics = 0
            /// The session (view) of the latest record.
            public var lastSession: String?
            /// The latest event's name.
            public var lastEvent: String?

            /// An empty count.
            public init() {}

            public static func == (lhs: Counts, rhs: Counts) -> Bool {
                lhs.records == rhs.records && lhs.events.elementsEqual(rhs.events) { $0 == $1 } && lhs.heartbeats == rhs.heartbeats
                    && lhs.metrics == rhs.metrics && lhs.lastSession == rhs.lastSession && lhs.lastEvent == rhs.lastEvent
            }

            mutating func count(_ record: TelemetryRecord) {
                records += 1
                lastSession = record.sessionId
                switch record.kind {
                case .heartbeat: heartbeats += 1
                case .metric: metrics += 1
                case .event:
                    lastEvent = record.name
                    let name = events.count < Tally.maximumNames || events.contains(where: { $0.name == record.name }) ? record.name : "other"
                    if let index = events.firstIndex(where: { $0.name == name }) {
                        events[index].count += 1
                    } else {
                        events.append((name, 1))
                    }
                }
            }
        }

        public let name = "analytics tally"
        private let state = LockedValue(Counts())

        /// An empty tally.
        public init() {}

        /// What was counted so far.
        public var counts: Counts { state.withLock { $0 } }

        public func deliver(_ batch: [TelemetryRecord]) throws(TelemetryDeliveryError) {
            state.withLock { counts in
                for record in batch { counts.count(record) }
            }
        }
    }

    /// What the adapter reported so far: its records' counts and its latest view's KPIs.
    public struct Snapshot: Sendable, Equatable {
        /// The adapter.
        public var adapter: Adapter
        /// Its records, counted.
        public var counts: Tally.Counts
        /// The latest view's KPIs (nil before its first record).
        public var kpis: TelemetryKPIs?
        /// Findings raised so far.
        public var findings: Int

        /// A snapshot with the given values.
        public init(adapter: Adapter, counts: Tally.Counts, kpis: TelemetryKPIs?, findings: Int) {
            self.adapter = adapter
            self.counts = counts
            self.kpis = kpis
            self.findings = findings
        }
    }

    /// The end of the run: the last snapshot, the conformance report, and what the adapter's
    /// engine could not deliver.
    public struct Summary: Sendable {
        /// The final counts and KPIs.
        public var snapshot: Snapshot
        /// Every rule checked and every finding.
        public var conformance: ConformanceReport
        /// Records the `backends` did not take (a reader that did not keep up, a failing file).
        public var undelivered: Int

        /// A summary with the given values.
        public init(snapshot: Snapshot, conformance: ConformanceReport, undelivered: Int) {
            self.snapshot = snapshot
            self.conformance = conformance
            self.undelivered = undelivered
        }

        /// The summary as the command line's `"analytics"` object of the `"summary"` line:
        /// `{"adapter":"mux","records":42,"events":{"viewinit":1,…},"heartbeats":3,"metrics":0,
        /// "findings":0,"passed":true,"rulesChecked":7,"kpis":{"video_startup_time":0.41,…},"undelivered":0}`
        /// — every KPI by its Mux name, `null` where undefined.
        public var json: String {
            let counts = snapshot.counts
            var json = "{\"adapter\":\(QoSJSONWriter.string(snapshot.adapter.rawValue)),\"records\":\(counts.records),\"events\":{"
            json += counts.events.map { "\(QoSJSONWriter.string($0.name)):\($0.count)" }.joined(separator: ",")
            json += "},\"heartbeats\":\(counts.heartbeats),\"metrics\":\(counts.metrics),\"findings\":\(conformance.findings.count)"
            json += ",\"passed\":\(conformance.passed),\"rulesChecked\":\(conformance.rules.count),\"kpis\":{"
            json += (snapshot.kpis ?? TelemetryKPIs()).namedValues.map { name, value in
                "\(QoSJSONWriter.string(name)):\(value.map(Self.json) ?? "null")"
            }.joined(separator: ",")
            json += "},\"undelivered\":\(undelivered)}"
            return json
        }

        private static func json(_ value: TelemetryValue) -> String {
            switch value {
            case .string(let text): QoSJSONWriter.string(text)
            case .bool(let flag): flag ? "true" : "false"
            case .int(let number): String(number)
            case .double(let number): QoSJSONWriter.number(number)
            }
        }
    }

    /// The adapter run.
    public let adapter: Adapter
    /// The adapter's engine.
    public let instrument: TelemetryInstrument
    private let tally = Tally()
    private let parts: Parts

    /// What one adapter's set-up holds: the bridge (kept for the run), its conformance report,
    /// its findings' count, and what ends it.
    private struct Parts: Sendable {
        var bridge: any Sendable
        var report: @Sendable () -> ConformanceReport
        var findings: @Sendable () -> Int
        var shutdown: @Sendable (Duration) -> TelemetryShutdownReport
    }

    /// Sets `adapter` up over `subscriber` (before it starts), reporting to a new engine with
    /// the tally and `backends` (each with its delivery, nil: the engine's default), on `clock`
    /// and `driver` (a test's manual clock and ``TelemetryInstrument/Driver/embedded``: the
    /// engine steps in ``finish(timeout:)``, Nielsen's playheads are not ticked).
    ///
    /// - Throws: ``TelemetryEngineError`` when the engine or a backend's thread cannot start;
    ///   ``PlayoutError`` when the Nielsen playhead ticker's thread cannot.
    public init(
        _ adapter: Adapter, subscriber: Subscriber, backends: [(backend: any TelemetryBackend, delivery: TelemetryDeliveryConfiguration?)] = [],
        clock: any PlayoutClock = MonotonicClock(), driver: TelemetryInstrument.Driver = .thread
    ) throws {
        self.adapter = adapter
        let configuration: TelemetryInstrument.Configuration = switch adapter {
        case .mux: MuxCore.instrumentConfiguration()
        case .openavt: OpenAVTInstrument.engineConfiguration()
        case .adobe, .nielsen: .init()
        }
        // OpenAVT adds its own backend (the tally) to the engine.
        let instrument = try TelemetryInstrument(backends: adapter == .openavt ? [] : [tally], configuration: configuration, clock: clock, driver: driver)
        self.instrument = instrument
        for (backend, delivery) in backends {
            if let delivery { try instrument.addBackend(backend, delivery: delivery) } else { try instrument.addBackend(backend) }
        }
        let description = subscriber.sessionDescription
        let sessionId = description?.origin?.sessionID ?? ""
        let sessionName = description?.sessionName ?? ""
        func parts<Rule: ConformanceRule>(bridge: any Sendable, log: ConformanceLog<Rule>, shutdown: (@Sendable (Duration) -> TelemetryShutdownReport)? = nil) -> Parts {
            Parts(
                bridge: bridge, report: { log.export() }, findings: { log.findingCount },
                shutdown: shutdown ?? { instrument.shutdown(timeout: $0) })
        }
        switch adapter {
        case .mux:
            let log = ConformanceLog<MuxRule>()
            let mux = MuxCore(instrument: instrument, options: .init(conformance: log))
            let bridge = MuxSubscriberBridge(subscriber: subscriber, mux: mux, customerPlayerData: MuxCustomerPlayerData(environmentKey: nil))
            self.parts = parts(bridge: bridge, log: log)
        case .adobe:
            let log = ConformanceLog<HeartbeatRule>()
            let bridge = HeartbeatSubscriberBridge(
                subscriber: subscriber, instrument: instrument,
                configuration: .init(trackingServer: "localhost", jobId: "playout", publisher: "playout", channel: "playout"), options: .init(conformance: log))
            self.parts = parts(bridge: bridge, log: log)
        case .nielsen:
            let log = ConformanceLog<NielsenRule>()
            let sdk = NielsenAppSDK(appInfo: ["appid": .string(Self.nielsenAppId)], instrument: instrument, options: .init(conformance: log))
            let ticker = try NielsenPlayheadTicker(clock: clock, runsThread: driver == .thread)
            let metadata: [String: NielsenValue] = [
                "type": "content", "assetid": .string(sessionId.isEmpty ? "playout" : sessionId), "program": .string(sessionName),
                "title": .string(sessionName + " S1E1"), "length": "0", "airdate": "2026-01-01T00:00:00Z", "isfullepisode": "y", "adloadtype": "2",
            ]
            let bridge = NielsenSubscriberBridge(
                subscriber: subscriber, sdk: sdk, ticker: ticker, options: .init(channelInfo: ["channelName": "playout"], metadata: metadata))
            self.parts = parts(bridge: bridge, log: log) { timeout in
                ticker.shutdown()
                return instrument.shutdown(timeout: timeout)
            }
        case .openavt:
            let log = ConformanceLog<OpenAVTRule>()
            let openAVT = try OpenAVTInstrument(engine: instrument, backend: tally, options: .init(conformance: log))
            let tracker = openAVT.addTracker(name: "subscriber")
            openAVT.ready()  // before the bridge: it reports the delay in effect at once
            let bridge = OpenAVTSubscriberBridge(subscriber: subscriber, instrument: openAVT, trackerId: tracker)
            self.parts = parts(bridge: bridge, log: log) { openAVT.shutdown(timeout: $0) }
        }
    }

    /// The Nielsen app id the `nielsen` adapter is initialized with: a test id (`T` and a GUID).
    public static let nielsenAppId = "T00000000-0000-4000-8000-000000000000"

    /// What the adapter reported so far.
    public var snapshot: Snapshot {
        let counts = tally.counts
        return Snapshot(adapter: adapter, counts: counts, kpis: counts.lastSession.flatMap { instrument.kpis()[$0] }, findings: parts.findings())
    }

    /// The conformance report so far.
    public var conformance: ConformanceReport { parts.report() }

    /// Ends the adapter's engine (views end with `viewend`, every backend drained for up to
    /// `timeout`) and sums up. Call it once, after the subscription ended.
    public func finish(timeout: Duration) -> Summary {
        let report = parts.shutdown(timeout)
        let counts = tally.counts
        let undelivered = report.statistics.backends.filter { $0.name != tally.name }.reduce(0) { $0 + $1.dropped }
        let snapshot = Snapshot(adapter: adapter, counts: counts, kpis: counts.lastSession.flatMap { report.kpis[$0] }, findings: parts.findings())
        return Summary(snapshot: snapshot, conformance: parts.report(), undelivered: undelivered)
    }

    /// The JSON Lines stream's format for the adapter's records: each record as `--telemetry
    /// jsonl:` writes it (``TelemetryJSONLines``: `schema`, `session`, `seq`, `monotonicNs`,
    /// `wallTimeNs`, `kind`, `name`, `fields`, `tags`) with `"type":"analytics"`, the
    /// `"adapter"` and `"t"` first — the record's `monotonic` in seconds: the time since the
    /// adapter's engine started, when the adapter was set up, just before the subscription:
    ///
    /// ```json
    /// {"type":"analytics","adapter":"mux","t":1.204,"schema":1,"session":"…-0-1","seq":4,…,"kind":"event","name":"playing","fields":{…},"tags":{}}
    /// ```
    public static func jsonFormat(adapter: Adapter) -> JSONLinesTelemetryBackend.Format {
        .lines { record in jsonLine(for: record, adapter: adapter) }
    }

    /// One line of ``jsonFormat(adapter:)``.
    public static func jsonLine(for record: TelemetryRecord, adapter: Adapter) -> String {
        let line = TelemetryJSONLines.line(for: record)
        let prefix = "{\"type\":\"\(TelemetryJSONLines.recordType)\","
        let head = "{\"type\":\"analytics\",\"adapter\":\(QoSJSONWriter.string(adapter.rawValue)),\"t\":\(QoSJSONWriter.number(record.monotonic.seconds)),"
        return head + line.dropFirst(line.hasPrefix(prefix) ? prefix.count : 1)
    }
}
