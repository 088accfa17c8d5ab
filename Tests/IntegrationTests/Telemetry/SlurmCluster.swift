import Foundation
import PlayoutTesting
#if canImport(Glibc)
import Glibc
#endif

/// A real one-node Slurm (Debian's `slurm-wlm` 22.05) started by a test on this machine, as
/// root: `munged` with its own key and socket, `slurmctld` and `slurmd` with a generated
/// `slurm.conf` (free ports, spool and state in a temporary directory, the node named after
/// `hostname -s` with enough CPUs declared for `cpus` concurrent one-CPU tasks), ready once
/// `sinfo` shows the node idle. ``stop()`` kills the daemons and every process they started
/// (found by a marker in their environment), then removes the directory.
///
/// Clients (`sbatch`, `sinfo`) reach it through ``environment`` (`SLURM_CONF`).
final class SlurmCluster {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The programs it needs.
    static let programs = ["/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/bin/sbatch", "/usr/bin/sinfo"]

    /// Whether Slurm and munge are installed and the test runs as root (slurmd must be).
    static var isAvailable: Bool {
        getuid() == 0 && programs.allSatisfy { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The temporary directory: configuration, munge key and socket, spool, state, logs.
    let directory: URL
    /// The node's name (`hostname -s`).
    let node: String
    /// The environment a client needs: `SLURM_CONF`.
    var environment: [String: String] { ["SLURM_CONF": directory.appendingPathComponent("slurm.conf").path] }
    private var daemons: [(pid: pid_t, name: String)] = []
    private let marker: String

    /// Starts munged, slurmctld and slurmd and waits (at most `timeout`) for the node to be idle.
    ///
    /// - Throws: ``Failure`` with the end of the daemons' logs when one exits or the node is not
    ///   idle in time (everything is stopped then).
    init(cpus: Int = 3, timeout: Duration = .seconds(30)) throws {
        directory = URL(fileURLWithPath: "/tmp").appendingPathComponent("playout-slurm-\(UUID().uuidString.prefix(8))")
        marker = directory.path
        var name = [CChar](repeating: 0, count: 256)
        gethostname(&name, name.count)
        node = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).split(separator: ".").first.map(String.init) ?? "localhost"
        let files = FileManager.default
        for sub in ["", "state", "spool"] {
            try files.createDirectory(at: directory.appendingPathComponent(sub), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        }
        do {
            try start(cpus: cpus, timeout: timeout)
        } catch {
            stop()
            throw error
        }
    }

    deinit { stop() }

    private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    private func start(cpus: Int, timeout: Duration) throws {
        var key = [UInt8](repeating: 0, count: 1024)
        for index in key.indices { key[index] = UInt8.random(in: 0...255) }
        _ = FileManager.default.createFile(atPath: path("munge.key"), contents: Data(key), attributes: [.posixPermissions: 0o400])
        try launch("/usr/sbin/munged", ["--foreground", "--force", "--socket=\(path("munge.socket"))", "--key-file=\(path("munge.key"))",
                                        "--pid-file=\(path("munged.pid"))", "--log-file=\(path("munged.log"))", "--seed-file=\(path("munged.seed"))"],
                   log: "munged.out")
        try waitFor("munged's socket", timeout: timeout) { FileManager.default.fileExists(atPath: path("munge.socket")) }

        let controllerPort = ScriptedTCPServer.unusedPort()
        var nodePort = ScriptedTCPServer.unusedPort()
        while nodePort == controllerPort { nodePort = ScriptedTCPServer.unusedPort() }
        let configuration = """
            ClusterName=playout
            SlurmctldHost=\(node)(127.0.0.1)
            AuthType=auth/munge
            CredType=cred/munge
            AuthInfo=socket=\(path("munge.socket"))
            SlurmctldPort=\(controllerPort)
            SlurmdPort=\(nodePort)
            SlurmUser=root
            SlurmdUser=root
            StateSaveLocation=\(path("state"))
            SlurmdSpoolDir=\(path("spool"))
            SlurmctldPidFile=\(path("slurmctld.pid"))
            SlurmdPidFile=\(path("slurmd.pid"))
            SlurmctldLogFile=\(path("slurmctld.log"))
            SlurmdLogFile=\(path("slurmd.log"))
            ProctrackType=proctrack/linuxproc
            TaskPlugin=task/none
            MpiDefault=none
            ReturnToService=2
            SchedulerType=sched/builtin
            SelectType=select/cons_tres
            SelectTypeParameters=CR_CPU
            SlurmdParameters=config_overrides
            JobAcctGatherType=jobacct_gather/none
            AccountingStorageType=accounting_storage/none
            JobCompType=jobcomp/none
            SwitchType=switch/none
            NodeName=\(node) NodeAddr=127.0.0.1 CPUs=\(cpus) RealMemory=\(cpus * 500) State=UNKNOWN
            PartitionName=swarm Nodes=\(node) Default=YES MaxTime=INFINITE State=UP

            """
        try configuration.write(toFile: path("slurm.conf"), atomically: true, encoding: .utf8)
        try launch("/usr/sbin/slurmctld", ["-D", "-i", "-f", path("slurm.conf")], log: "slurmctld.out")
        try launch("/usr/sbin/slurmd", ["-D", "-f", path("slurm.conf")], log: "slurmd.out")
        try waitFor("node \(node) idle in sinfo", timeout: timeout) {
            let result = try runProgram("/usr/bin/sinfo", ["-h", "-N", "-o", "%T"], environment: environment)
            return String(decoding: result.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == "idle"
        }
    }

    /// Starts a daemon with posix_spawn, its output into `log`. (Not Foundation's `Process`: it
    /// watches a child through a socket the child inherits, and daemons that close every inherited
    /// descriptor, as slurmctld does, make it wait forever for a process that is still running.)
    private func launch(_ executable: String, _ arguments: [String], log: String) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, path(log), O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var variables = ProcessInfo.processInfo.environment
        for (key, value) in environment { variables[key] = value }
        variables["PLAYOUT_SLURM_CLUSTER"] = marker
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard status == 0 else { throw Failure(description: "cannot start \(executable): \(String(cString: strerror(status)))") }
        daemons.append((pid, executable))
    }

    /// Whether the daemon `pid` has exited (reaped then), and its status.
    private func exited(_ pid: pid_t) -> Int32? {
        var status: Int32 = 0
        return waitpid(pid, &status, WNOHANG) == pid ? status : nil
    }

    private func waitFor(_ what: String, timeout: Duration, _ ready: () throws -> Bool) throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            for (index, daemon) in daemons.enumerated() {
                guard let status = exited(daemon.pid) else { continue }
                daemons.remove(at: index)
                throw Failure(description: "\(daemon.name) exited with wait status \(status) before \(what):\n\(logTail())")
            }
            if (try? ready()) == true { return }
            usleep(100_000)
        }
        throw Failure(description: "no \(what) within \(timeout):\n\(logTail())")
    }

    /// The last lines of the daemons' logs.
    func logTail() -> String {
        ["munged.out", "slurmctld.out", "slurmctld.log", "slurmd.out", "slurmd.log"].map { name in
            let text = (try? String(contentsOfFile: path(name), encoding: .utf8)) ?? ""
            return "== \(name)\n" + text.split(separator: "\n").suffix(8).joined(separator: "\n")
        }.joined(separator: "\n")
    }

    /// Runs `sbatch` with `arguments` against this cluster, with `environment` added (sbatch
    /// exports its environment into the job).
    func sbatch(_ arguments: [String], environment extra: [String: String]) throws -> (status: Int32, stdout: String, stderr: String) {
        let result = try runProgram("/usr/bin/sbatch", arguments, environment: environment.merging(extra) { _, new in new })
        return (result.status, String(decoding: result.stdout, as: UTF8.self), result.stderr)
    }

    /// Kills the daemons and every process that carries their marker (job steps, scripts), waits
    /// for the daemons, and removes the directory. Idempotent.
    func stop() {
        for daemon in daemons { kill(daemon.pid, SIGKILL) }
        for daemon in daemons {
            var status: Int32 = 0
            while waitpid(daemon.pid, &status, 0) < 0 && errno == EINTR {}
        }
        daemons = []
        // Job steps (slurmstepd) and their tasks are not the daemons' children once detached:
        // find them by the marker in their environment — only processes this cluster started.
        let needle = Array("PLAYOUT_SLURM_CLUSTER=\(marker)".utf8)
        for _ in 0..<3 {
            var found = false
            for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
                guard let pid = Int32(entry), pid != getpid(),
                      let environ = FileManager.default.contents(atPath: "/proc/\(entry)/environ") else { continue }
                let bytes = [UInt8](environ)
                if bytes.split(separator: 0).contains(where: { $0.elementsEqual(needle) }) {
                    kill(pid, SIGKILL)
                    found = true
                }
            }
            if !found { break }
            usleep(100_000)
        }
        try? FileManager.default.removeItem(at: directory)
    }
}
