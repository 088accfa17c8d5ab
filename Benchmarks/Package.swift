// swift-tools-version: 6.1
// Playout's benchmarks: a nested package, so that benchmark dependencies (package-benchmark,
// OpenCombine as a reference) never slow the main build. Run with `make bench` from the root or
// `swift package benchmark` here.
import Foundation
import PackageDescription

/// The root package's identity is the name of the folder it is checked out in.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent

let settings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "PlayoutBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: "../"),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/OpenCombine/OpenCombine", from: "0.14.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .executableTarget(
            name: "Observable",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "PlayoutCore", package: root),
                .product(name: "OpenCombine", package: "OpenCombine"),
            ],
            path: "Benchmarks/Observable",
            swiftSettings: settings,
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .target(name: "CIntakeReference", path: "Sources/CIntakeReference", linkerSettings: [.linkedLibrary("srtp2")]),
        .target(
            name: "CDecodeReference", path: "Sources/CDecodeReference",
            linkerSettings: [.linkedLibrary("avformat"), .linkedLibrary("avcodec"), .linkedLibrary("avutil")]
        ),
        .target(
            name: "DecodeLoops",
            dependencies: [
                .product(name: "PlayoutCore", package: root),
                .product(name: "PlayoutCodec", package: root),
                "CDecodeReference",
            ],
            path: "Sources/DecodeLoops",
            swiftSettings: settings
        ),
        // One decode per process, for decode-instructions.sh (callgrind).
        .executableTarget(
            name: "DecodeOnce",
            dependencies: ["DecodeLoops", .product(name: "PlayoutCodec", package: root)],
            path: "Sources/DecodeOnce",
            swiftSettings: settings
        ),
        .executableTarget(
            name: "Decode",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "PlayoutCodec", package: root),
                "DecodeLoops",
            ],
            path: "Benchmarks/Decode",
            swiftSettings: settings,
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // The 720p30 H.264 SRTP streams Intake and Receive feed.
        .target(
            name: "StreamFixtures",
            dependencies: [
                .product(name: "PlayoutCore", package: root), .product(name: "PlayoutRTP", package: root),
                .product(name: "PlayoutTesting", package: root), .product(name: "PlayoutWebRTC", package: root),
            ],
            path: "Sources/StreamFixtures",
            swiftSettings: settings
        ),
        .executableTarget(
            name: "Intake",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "PlayoutCore", package: root),
                .product(name: "PlayoutRTP", package: root),
                "CIntakeReference",
                "StreamFixtures",
            ],
            path: "Benchmarks/Intake",
            swiftSettings: settings,
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // The receive paths Receive compares (plain SRTP, Intake's, WHEP-shaped), and one run of
        // any for callgrind.
        .target(
            name: "ReceivePaths",
            dependencies: [
                .product(name: "Playout", package: root), .product(name: "PlayoutCore", package: root),
                .product(name: "PlayoutRTP", package: root), .product(name: "PlayoutWebRTC", package: root), "StreamFixtures",
            ],
            path: "Sources/ReceivePaths",
            swiftSettings: settings
        ),
        .executableTarget(
            name: "ReceiveOnce",
            dependencies: ["ReceivePaths", "StreamFixtures", .product(name: "Playout", package: root), .product(name: "PlayoutRTP", package: root)],
            path: "Sources/ReceiveOnce",
            swiftSettings: settings
        ),
        .executableTarget(
            name: "Receive",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Playout", package: root),
                .product(name: "PlayoutCore", package: root),
                .product(name: "PlayoutRTP", package: root),
                "CIntakeReference",
                "ReceivePaths",
                "StreamFixtures",
            ],
            path: "Benchmarks/Receive",
            swiftSettings: settings,
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "Jitter",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "PlayoutCore", package: root),
                .product(name: "PlayoutJitter", package: root),
                .product(name: "PlayoutTesting", package: root),
            ],
            path: "Benchmarks/Jitter",
            swiftSettings: settings,
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // One sustained telemetry run per process, for profiling.
        .executableTarget(
            name: "TelemetryOnce",
            dependencies: [
                .product(name: "PlayoutCore", package: root), .product(name: "PlayoutTelemetry", package: root),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/TelemetryOnce",
            swiftSettings: settings
        ),
        .executableTarget(
            name: "Telemetry",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "PlayoutCore", package: root),
                .product(name: "PlayoutTelemetry", package: root),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/Telemetry",
            swiftSettings: settings,
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
