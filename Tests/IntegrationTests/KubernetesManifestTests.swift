import Foundation
import PlayoutSwarm
import RealTimeTesting
import Testing

/// `deploy/kubernetes/swarm-indexed-job.yaml` checked by a real schema validator (PyPI's
/// `kubernetes-validate`, its schemas bundled, installed once into `.build-venv/`), and its shard
/// mapping run locally: each `JOB_COMPLETION_INDEX` with the manifest's environment gives
/// `SwarmShard.resolve` a block of viewers, and the blocks cover the run once.
@Suite("Kubernetes Indexed Job manifest", .realTime, .serialized,
       .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"), "python3 is not installed: run make setup"))
struct KubernetesManifestTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let manifest = root.appendingPathComponent("deploy/kubernetes/swarm-indexed-job.yaml").path
    static let validatorVersion = "1.37.0"

    /// The validator, installed into `.build-venv/kubernetes-validate` on first use (PyPI).
    static func validator() throws -> String {
        let venv = root.appendingPathComponent(".build-venv/kubernetes-validate-\(validatorVersion)")
        let program = venv.appendingPathComponent("bin/kubernetes-validate").path
        if FileManager.default.isExecutableFile(atPath: program) { return program }
        let created = try runProgram("/usr/bin/python3", ["-m", "venv", venv.path])
        guard created.status == 0 else { throw CLIError("python3 -m venv failed (install python3-venv): \(created.stderr)") }
        let installed = try runProgram(venv.appendingPathComponent("bin/pip").path, ["install", "--quiet", "kubernetes-validate==\(validatorVersion)"])
        guard installed.status == 0 else { throw CLIError("pip install kubernetes-validate failed: \(installed.stderr)") }
        return program
    }

    @Test("the manifest passes kubernetes-validate --strict; a broken copy does not")
    func schema() throws {
        let validator = try Self.validator()
        let result = try runProgram(validator, ["--strict", Self.manifest])
        #expect(result.status == 0, "\(String(decoding: result.stdout, as: UTF8.self)) \(result.stderr)")
        // The validator can fail: a Job with a completion mode Kubernetes does not have.
        let broken = FileManager.default.temporaryDirectory.appendingPathComponent("playout-broken-\(UUID().uuidString).yaml")
        defer { try? FileManager.default.removeItem(at: broken) }
        let text = try String(contentsOfFile: Self.manifest, encoding: .utf8)
        try text.replacingOccurrences(of: "completionMode: Indexed", with: "completionMode: Sideways")
            .replacingOccurrences(of: "parallelism: 3", with: "parallelism: three").write(to: broken, atomically: true, encoding: .utf8)
        let refused = try runProgram(validator, ["--strict", broken.path])
        #expect(refused.status != 0)
    }

    @Test("each JOB_COMPLETION_INDEX with the manifest's environment runs a disjoint block; together every viewer once")
    func shardMapping() throws {
        // The manifest read with PyYAML (Debian's python3-yaml): the Job's counts, the container's env and args.
        let reader = """
            import json, sys, yaml
            job = yaml.safe_load(open(sys.argv[1]))
            container = job["spec"]["template"]["spec"]["containers"][0]
            print(json.dumps({"mode": job["spec"]["completionMode"], "completions": job["spec"]["completions"],
                              "parallelism": job["spec"]["parallelism"], "args": container["args"],
                              "env": {item["name"]: item["value"] for item in container.get("env", []) if "value" in item}}))
            """
        let read = try runProgram("/usr/bin/python3", ["-c", reader, Self.manifest])
        #expect(read.status == 0, "\(read.stderr)")
        let job = try #require(try JSONSerialization.jsonObject(with: read.stdout) as? [String: Any])
        #expect(job["mode"] as? String == "Indexed")
        let completions = try #require(job["completions"] as? Int)
        #expect(job["parallelism"] as? Int == completions)
        let environment = try #require(job["env"] as? [String: String])
        #expect(environment["PLAYOUT_SHARD_COUNT"] == "\(completions)")
        #expect(environment["RUN"]?.isEmpty == false && environment["PLAYOUT_TELEMETRY"]?.hasPrefix("influx:http://") == true)
        let arguments = try #require(job["args"] as? [String])
        #expect(arguments.first == "swarm" && !arguments.contains("--shard"))
        #expect(arguments.contains("$(RUN)") && arguments.contains("$(PLAYOUT_TELEMETRY)"))
        let viewersIndex = try #require(arguments.firstIndex(of: "--viewers"))
        let viewers = try #require(Int(arguments[viewersIndex + 1]))

        var covered: [Int] = []
        var shards: Set<Int> = []
        for index in 0..<completions {
            let shard = try SwarmShard.resolve(option: nil, count: nil, environment: environment.merging(["JOB_COMPLETION_INDEX": "\(index)"]) { _, new in new })
            #expect(shard.source == .kubernetes && shard.count == completions && shard.index == index)
            shards.insert(shard.index)
            covered += Array(shard.viewers(of: viewers))
        }
        #expect(shards.count == completions)
        #expect(covered == Array(0..<viewers), "every viewer once, in order")
        // An index past the completions (PLAYOUT_SHARD_COUNT left behind when completions grew) is refused.
        #expect(throws: SwarmShardError.self) {
            try SwarmShard.resolve(option: nil, count: nil, environment: environment.merging(["JOB_COMPLETION_INDEX": "\(completions)"]) { _, new in new })
        }
    }
}
