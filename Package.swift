// swift-tools-version: 6.2
import PackageDescription

/// One settings array for every Swift target (STYLE.md): Swift 6 mode with strict concurrency,
/// explicit existentials, internal imports by default and member import visibility.
let settings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

/// The media path's modules (intake, jitter buffer, scheduler, playout loop, event loop, QoS)
/// are optimized in debug builds too: the suite's real-time tests hold hundreds of subscriptions
/// to their render times, and unoptimized Swift runs that path 2–3× slower than what users run
/// (`make test`'s 200 subscriptions on the event loop: 3.2 s of CPU unoptimized, 1.6 s so).
let mediaPath: [SwiftSetting] = settings + [.unsafeFlags(["-O"], .when(configuration: .debug))]

let log = Target.Dependency.product(name: "Logging", package: "swift-log")
let argumentParser = Target.Dependency.product(name: "ArgumentParser", package: "swift-argument-parser")
let propertyBased = Target.Dependency.product(name: "PropertyBased", package: "swift-property-based")
let coreMetrics = Target.Dependency.product(name: "CoreMetrics", package: "swift-metrics")
let metricsTestKit = Target.Dependency.product(name: "MetricsTestKit", package: "swift-metrics")
let prometheus = Target.Dependency.product(name: "Prometheus", package: "swift-prometheus")

let package = Package(
    name: "Playout",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Playout", targets: ["Playout"]),
        .library(name: "PlayoutCore", targets: ["PlayoutCore"]),
        .library(name: "PlayoutRTP", targets: ["PlayoutRTP"]),
        .library(name: "PlayoutJitter", targets: ["PlayoutJitter"]),
        .library(name: "PlayoutCodec", targets: ["PlayoutCodec"]),
        .library(name: "PlayoutTelemetry", targets: ["PlayoutTelemetry"]),
        .library(name: "PlayoutTelemetryBackends", targets: ["PlayoutTelemetryBackends"]),
        .library(name: "PlayoutTesting", targets: ["PlayoutTesting"]),
        .library(name: "PlayoutAnalytics", targets: ["PlayoutAnalytics"]),
        .library(name: "PlayoutSender", targets: ["PlayoutSender"]),
        .library(name: "PlayoutBench", targets: ["PlayoutBench"]),
        .library(name: "PlayoutSwarm", targets: ["PlayoutSwarm"]),
        .library(name: "PlayoutWebRTC", targets: ["PlayoutWebRTC"]),
        .executable(name: "playout", targets: ["PlayoutCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        // System libraries: each has exactly one Swift importer (PlayoutCodec, PlayoutRTP, PlayoutWebRTC).
        .systemLibrary(
            name: "CFFmpeg",
            pkgConfig: "libavformat libavcodec libavutil libswscale libswresample",
            providers: [.apt(["libavformat-dev", "libavcodec-dev", "libavutil-dev", "libswscale-dev", "libswresample-dev"])]
        ),
        .systemLibrary(
            name: "CSRTP",
            pkgConfig: "libsrtp2",
            providers: [.apt(["libsrtp2-dev"])]
        ),

        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),

        // libsrtp2's AES-ICM-128 and HMAC-SHA1 on OpenSSL's libcrypto (Debian's libsrtp2 runs on
        // NSS, ≈ 10× slower per packet), plugged in through libsrtp2's replacement API.
        .target(name: "CSRTPCrypto", path: "Sources/CSRTPCrypto", linkerSettings: [.linkedLibrary("crypto")]),

        // Batched UDP receive/send (recvmmsg/sendmmsg need _GNU_SOURCE, which Swift's Glibc lacks).
        .target(name: "CSocket", path: "Sources/CSocket"),

        // Shared vocabulary; no C dependency.
        .target(name: "PlayoutCore", dependencies: [log], swiftSettings: mediaPath),

        // Stage modules: import PlayoutCore, never each other.
        .target(name: "PlayoutRTP", dependencies: ["PlayoutCore", "CSRTP", "CSRTPCrypto", "CSocket", log], swiftSettings: mediaPath),
        .target(name: "PlayoutJitter", dependencies: ["PlayoutCore", log], swiftSettings: mediaPath),
        .target(name: "PlayoutCodec", dependencies: ["PlayoutCore", "CFFmpeg", log], swiftSettings: mediaPath),
        .target(name: "PlayoutTelemetry", dependencies: ["PlayoutCore", log], swiftSettings: mediaPath),
        // HTTP/1.1 for the network backends and WHEP: the sans-IO response parser and a blocking,
        // deadline-bound TCP connection (one of each).
        .target(name: "PlayoutHTTP", dependencies: ["PlayoutCore"], swiftSettings: settings),
        // Network backends (InfluxDB, Graphite, swift-metrics/Prometheus) over a small HTTP/TCP layer.
        .target(name: "PlayoutTelemetryBackends", dependencies: ["PlayoutTelemetry", "PlayoutCore", "PlayoutHTTP", coreMetrics, prometheus], swiftSettings: settings),

        // WebRTC: WHEP, ICE and STUN, DTLS-SRTP; sans-IO parts the subscription core drives.
        .target(name: "PlayoutWebRTC", dependencies: ["PlayoutCore", "PlayoutRTP", "PlayoutHTTP", "COpenSSL", log], swiftSettings: settings),

        // Analytics SDK shapes (Adobe heartbeat, Mux, Nielsen DCR, OpenAVT) over the telemetry engine
        // only: a test that wants the Mux shape links neither FFmpeg nor libsrtp2.
        .target(
            name: "PlayoutAnalytics",
            dependencies: ["PlayoutCore", "PlayoutTelemetry", log],
            swiftSettings: settings
        ),

        // The public facade (with the bridges from a subscriber to telemetry and the adapters) and
        // the command-line tool.
        .target(
            name: "Playout",
            dependencies: ["PlayoutCore", "PlayoutRTP", "PlayoutJitter", "PlayoutCodec", "PlayoutTelemetry", "PlayoutAnalytics", "PlayoutWebRTC", "CSocket", log],
            swiftSettings: mediaPath
        ),
        // On the facade, one job each: the test sender (Publisher, its seeded network impairment,
        // the sans-IO track sender) and the playout-delay benchmark (scenario, analysis, report, plot).
        .target(
            name: "PlayoutSender",
            dependencies: ["Playout", "PlayoutCore", "PlayoutRTP", "PlayoutCodec", "PlayoutWebRTC", "PlayoutHTTP", log],
            swiftSettings: settings
        ),
        .target(
            name: "PlayoutBench",
            dependencies: ["Playout", "PlayoutSender", "PlayoutCore", "PlayoutRTP", "PlayoutCodec", "PlayoutTelemetry"],
            swiftSettings: settings
        ),
        .target(
            name: "PlayoutSwarm",
            dependencies: ["Playout", "PlayoutSender", "PlayoutCore", "PlayoutTelemetry", "PlayoutTelemetryBackends", "PlayoutHTTP"],
            swiftSettings: settings
        ),
        .executableTarget(
            name: "PlayoutCLI",
            dependencies: ["Playout", "PlayoutAnalytics", "PlayoutBench", "PlayoutSwarm", "PlayoutCore", "PlayoutHTTP", "PlayoutSender", "PlayoutTelemetry", "PlayoutTelemetryBackends", argumentParser, log],
            swiftSettings: settings
        ),

        // Test kit for tests, benchmarks and samples: the manual clock, the embedded driver.
        .target(name: "PlayoutTesting", dependencies: ["Playout", "PlayoutCore", "PlayoutRTP", "PlayoutCodec", "PlayoutSender"], swiftSettings: settings),

        // Samples: small programs on the public API only, built with everything else.
        .executableTarget(
            name: "ObserveAndCollectLogs",
            dependencies: ["Playout", log],
            path: "Samples/ObserveAndCollectLogs",
            exclude: ["README.md"],
            swiftSettings: settings
        ),

        .executableTarget(
            name: "AudienceSwarm",
            dependencies: ["Playout", "PlayoutSender", "PlayoutSwarm"],
            path: "Samples/AudienceSwarm",
            exclude: ["README.md"],
            swiftSettings: settings
        ),
        .executableTarget(
            name: "SubscribeOverWHEP",
            dependencies: ["Playout", "PlayoutSender"],
            path: "Samples/SubscribeOverWHEP",
            exclude: ["README.md"],
            swiftSettings: settings
        ),

        .executableTarget(
            name: "SubscribeFromCode",
            dependencies: ["Playout", "PlayoutSender"],
            path: "Samples/SubscribeFromCode",
            exclude: ["README.md"],
            swiftSettings: settings
        ),

        .executableTarget(
            name: "WriteToInfluxDB",
            dependencies: ["Playout", "PlayoutSender", "PlayoutTelemetryBackends"],
            path: "Samples/WriteToInfluxDB",
            exclude: ["README.md"],
            swiftSettings: settings
        ),

        .executableTarget(
            name: "AnalyticsTest",
            dependencies: ["Playout", "PlayoutSender"],
            path: "Samples/AnalyticsTest",
            exclude: ["README.md"],
            swiftSettings: settings
        ),

        .executableTarget(
            name: "NielsenAdapter",
            dependencies: ["Playout", "PlayoutAnalytics", "PlayoutSender"],
            path: "Samples/NielsenAdapter",
            exclude: ["README.md"],
            swiftSettings: settings
        ),

        .executableTarget(
            name: "HeartbeatAdapter",
            dependencies: ["Playout", "PlayoutAnalytics", "PlayoutSender"],
            path: "Samples/HeartbeatAdapter",
            exclude: ["README.md"],
            swiftSettings: settings
        ),

        .executableTarget(
            name: "OpenAVTAdapter",
            dependencies: ["Playout", "PlayoutAnalytics", "PlayoutSender"],
            path: "Samples/OpenAVTAdapter",
            exclude: ["README.md"],
            swiftSettings: settings
        ),

        .executableTarget(
            name: "MuxAdapter",
            dependencies: ["Playout", "PlayoutAnalytics", "PlayoutSender"],
            path: "Samples/MuxAdapter",
            exclude: ["README.md"],
            swiftSettings: settings
        ),

        // Runs the `playout` binary (`demo --analytics mux --analytics-report`) and reads the
        // JUnit XML back: the CI gate of the analytics adapters.
        .executableTarget(
            name: "AnalyticsReport",
            dependencies: ["Playout", "PlayoutSender", "PlayoutTesting"],
            path: "Samples/AnalyticsReport",
            exclude: ["README.md"],
            swiftSettings: settings
        ),

        .executableTarget(
            name: "PlayoutDelayBench",
            dependencies: ["Playout", "PlayoutBench"],
            path: "Samples/PlayoutDelayBench",
            exclude: ["README.md"],
            swiftSettings: settings
        ),

        .executableTarget(
            name: "EmbeddedSubscription",
            dependencies: ["Playout", "PlayoutSender", "PlayoutTesting"],
            path: "Samples/EmbeddedSubscription",
            exclude: ["README.md"],
            swiftSettings: settings
        ),

        .executableTarget(
            name: "PhenixOverride",
            dependencies: ["Playout", "PlayoutSender", "PlayoutTesting"],
            path: "Samples/PhenixOverride",
            exclude: ["README.md"],
            swiftSettings: settings
        ),

        .executableTarget(
            name: "ManyViewers",
            dependencies: ["Playout", "PlayoutSender"],
            path: "Samples/ManyViewers",
            exclude: ["README.md"],
            swiftSettings: settings
        ),

        .executableTarget(
            name: "RepairLoss",
            dependencies: ["Playout", "PlayoutSender"],
            path: "Samples/RepairLoss",
            exclude: ["README.md"],
            swiftSettings: settings
        ),

        // libFuzzer harnesses: plain targets (an executable target would rename `main`), linked
        // with -sanitize=fuzzer by `make fuzz`.
        .target(name: "PlayoutFuzz", dependencies: ["PlayoutRTP", "PlayoutCore", "PlayoutTelemetry", "PlayoutTelemetryBackends", "PlayoutHTTP", "Playout", "PlayoutCodec", "PlayoutSender", "PlayoutWebRTC"], path: "Tests/Fuzz/PlayoutFuzz", exclude: ["Seeds", "Crashers"], swiftSettings: settings),

        // Test support: the real-time test trait (tests that wait on the clock run off the
        // cooperative pool, a few at a time).
        .target(name: "RealTimeTesting", dependencies: ["PlayoutCore"], path: "Tests/RealTimeTesting", swiftSettings: settings),
        .testTarget(name: "PlayoutCoreTests", dependencies: ["PlayoutCore", "PlayoutTesting", propertyBased], swiftSettings: settings),
        .testTarget(name: "PlayoutRTPTests", dependencies: ["RealTimeTesting", "PlayoutRTP", "PlayoutCore", "PlayoutTesting", "PlayoutFuzz", propertyBased], swiftSettings: settings),
        .testTarget(name: "PlayoutJitterTests", dependencies: ["PlayoutJitter", "PlayoutCore", "PlayoutTesting", log, .product(name: "InMemoryLogging", package: "swift-log")], swiftSettings: settings),
        .testTarget(name: "PlayoutCodecTests", dependencies: ["RealTimeTesting", "PlayoutCodec", "PlayoutCore", "PlayoutTesting", log, .product(name: "InMemoryLogging", package: "swift-log")], swiftSettings: settings),
        .testTarget(name: "PlayoutTelemetryTests", dependencies: ["RealTimeTesting", "PlayoutTelemetry", "PlayoutCore", "PlayoutTesting", log, .product(name: "InMemoryLogging", package: "swift-log")], swiftSettings: settings),
        .testTarget(name: "PlayoutTelemetryBackendsTests", dependencies: ["RealTimeTesting", "PlayoutTelemetryBackends", "PlayoutHTTP", "PlayoutTelemetry", "PlayoutCore", "PlayoutTesting", coreMetrics, metricsTestKit, prometheus], swiftSettings: settings),
        .testTarget(name: "PlayoutTests", dependencies: ["RealTimeTesting", "Playout", "PlayoutAnalytics", "PlayoutSender", "PlayoutTelemetry", "PlayoutCore", "PlayoutRTP", "PlayoutJitter", "PlayoutCodec", "PlayoutTesting"], swiftSettings: settings),
        .testTarget(name: "PlayoutSenderTests", dependencies: ["RealTimeTesting", "PlayoutSender", "Playout", "PlayoutCore", "PlayoutCodec", "PlayoutRTP", "PlayoutWebRTC", "PlayoutHTTP", "PlayoutTesting"], swiftSettings: settings),
        .testTarget(name: "PlayoutWebRTCTests", dependencies: ["RealTimeTesting", "PlayoutWebRTC", "PlayoutHTTP", "PlayoutRTP", "PlayoutCore", "PlayoutTesting"], swiftSettings: settings),
        .testTarget(name: "PlayoutBenchTests", dependencies: ["RealTimeTesting", "PlayoutBench", "Playout", "PlayoutCore"], swiftSettings: settings),
        .testTarget(name: "PlayoutSwarmTests", dependencies: ["RealTimeTesting", "PlayoutSwarm", "Playout", "PlayoutCore", "PlayoutSender", "PlayoutTesting"], swiftSettings: settings),
        .testTarget(name: "PlayoutAnalyticsTests", dependencies: ["RealTimeTesting", "PlayoutAnalytics", "PlayoutCore", "PlayoutTelemetry", "PlayoutTesting", log], swiftSettings: settings),
        .testTarget(name: "PlayoutCLITests", dependencies: ["RealTimeTesting", "PlayoutCLI", "Playout", "PlayoutAnalytics", "PlayoutBench", "PlayoutSender", "PlayoutTelemetry", "PlayoutTelemetryBackends"], swiftSettings: settings),
        .testTarget(name: "IntegrationTests", dependencies: ["RealTimeTesting", "Playout", "PlayoutSwarm", "PlayoutAnalytics", "PlayoutCore", "PlayoutRTP", "PlayoutSender", "PlayoutTelemetry", "PlayoutTelemetryBackends", "PlayoutHTTP", "PlayoutTesting", "PlayoutWebRTC", coreMetrics, prometheus], swiftSettings: settings),
    ]
)
