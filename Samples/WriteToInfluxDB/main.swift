// Telemetry into a real InfluxDB: the built-in publisher, a subscriber reporting to the telemetry
// engine, and an InfluxBackend (line protocol over HTTP, InfluxDB's v1 write API); then the points
// are read back with InfluxQL. Public API only, plus Foundation for the database process and the
// query. So that it runs wherever `make setup` ran, it starts a throwaway `influxd` (Debian's
// influxdb package) on a free loopback port; point `writeURL` at your own server instead.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Playout
import PlayoutSender
import PlayoutTelemetryBackends

LoggingSetup.bootstrap()

// 1. A throwaway InfluxDB 1.x in a temporary directory (skip this with a server of your own).
let database = try LocalInflux.start()
defer { database.stop() }
try database.query("CREATE DATABASE playout", post: true)

// 2. The engine writes every record to InfluxDB, tagged with the run, by the subscriber's telemetry
//    schema (Docs/TelemetrySchema.md): a heartbeat per QoS sample, one point per track tagged `kind`.
let influx = try InfluxBackend(writeURL: "http://127.0.0.1:\(database.port)/write?db=playout", token: nil, schema: .subscriber)
let instrument = try TelemetryInstrument(
    backends: [influx],
    configuration: .init(tags: [TelemetryField("run", .string("influx-sample"))]))

// 3. 4 s of 320×180 H.264 + Opus over SRTP on loopback, received by a subscriber that reports.
let publisher = try Publisher(options: .init(
    destination: try Publisher.freeLoopbackDestination(),
    video: .init(codec: .h264, width: 320, height: 180, frameRate: 30, bitrate: 300_000, keyframeInterval: 30),
    keyingMaterial: .random(for: .aesCM128HMACSHA1_80), duration: .seconds(4)))
let subscriber = try Subscriber(sessionDescription: publisher.sessionDescription, options: .init(duration: .seconds(5), telemetry: instrument))
try subscriber.start()
try publisher.start()
_ = try publisher.waitUntilEnded()
_ = subscriber.waitUntilEnded()
let report = instrument.shutdown(timeout: .seconds(5))  // viewend, drained into InfluxDB

// 4. Read the points back.
let events = try database.query("SELECT seq, event, session FROM playout_event WHERE run = 'influx-sample'")
let names = Set(events.compactMap { $0[2] as? String })
print("undelivered: \(report.statistics.undelivered)")
print("events in InfluxDB: \(["play", "playing", "ended", "viewend"].filter(names.contains).joined(separator: ", "))")
let heartbeats = try database.query("SELECT frames_rendered FROM playout_track WHERE run = 'influx-sample' AND kind = 'video'")
print("heartbeats with frames rendered: \(heartbeats.contains { ($0.last as? Int ?? 0) > 0 })")
let distinct = Set(events.map { "\($0[3] as? String ?? "")/\($0[1] as? Int ?? -1)" })
print("every event stored once: \(!events.isEmpty && distinct.count == events.count)")

/// A throwaway `influxd` on free loopback ports in a temporary directory.
struct LocalInflux {
    let process: Process
    let port: Int
    let directory: URL

    static func start() throws -> LocalInflux {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("playout-influx-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let ports = try SocketAddress.freeLoopbackPorts(count: 2)
        let http = Int(ports.lowerBound)
        let config = """
            reporting-disabled = true
            bind-address = "127.0.0.1:\(ports.upperBound)"
            [meta]
              dir = "\(directory.path)/meta"
            [data]
              dir = "\(directory.path)/data"
              wal-dir = "\(directory.path)/wal"
              query-log-enabled = false
            [http]
              bind-address = "127.0.0.1:\(http)"
              log-enabled = false
            [monitor]
              store-enabled = false
            """
        let configPath = directory.appendingPathComponent("influxdb.conf")
        try config.write(to: configPath, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/influxd")
        process.arguments = ["-config", configPath.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let server = LocalInflux(process: process, port: http, directory: directory)
        for _ in 0..<300 {  // up to 30 s to answer /ping
            if (try? server.request("/ping", method: "GET")) != nil { return server }
            Thread.sleep(forTimeInterval: 0.1)
        }
        server.stop()
        throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "influxd did not start"])
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Runs an InfluxQL query; returns the first series' rows.
    @discardableResult
    func query(_ text: String, post: Bool = false) throws -> [[Any]] {
        var allowed = CharacterSet.urlQueryAllowed
        allowed.remove(charactersIn: "&=+")
        let target = "/query?db=playout&q=" + (text.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")
        let data = try request(target, method: post ? "POST" : "GET")
        let json = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        let series = ((json?["results"] as? [[String: Any]])?.first?["series"] as? [[String: Any]])?.first
        return series?["values"] as? [[Any]] ?? []
    }

    func request(_ target: String, method: String) throws -> Data {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(target)")!)
        request.httpMethod = method
        let box = ResultBox()
        let done = DispatchSemaphore(value: 0)
        URLSession.shared.dataTask(with: request) { data, response, error in
            box.result = (response as? HTTPURLResponse).map { $0.statusCode < 300 } == true ? data ?? Data() : nil
            done.signal()
        }.resume()
        done.wait()
        guard let data = box.result else { throw CocoaError(.fileReadUnknown) }
        return data
    }
}

final class ResultBox: @unchecked Sendable {
    var result: Data?
}
