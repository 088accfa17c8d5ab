import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import Playout
import PlayoutCore
import PlayoutRTP

/// What a publisher's fan-out did (`publish --fanout N`): per viewer's stream, and the send path.
public struct FanoutStatistics: Equatable, Sendable {
    /// How many streams (viewers).
    public var streams: Int
    /// How far apart their ports are (``SessionDescription/fanoutStride``).
    public var stride: Int
    /// Each stream's own counters, by viewer number.
    public var perStream: [FanoutStream.Statistics]
    /// What the batched send path did (all streams' media, RTX and sender reports).
    public var batch: DatagramBatch.Statistics
    /// RTCP datagrams refused unread: they came from no viewer's address.
    public var rtcpRefused: Int

    /// Creates the statistics of `streams` streams, `stride` ports apart, before anything was sent.
    public init(streams: Int, stride: Int, perStream: [FanoutStream.Statistics] = [], batch: DatagramBatch.Statistics = .init(), rtcpRefused: Int = 0) {
        self.streams = streams
        self.stride = stride
        self.perStream = perStream
        self.batch = batch
        self.rtcpRefused = rtcpRefused
    }

    /// The fewest and most RTP packets a stream was sent (all tracks; nil: no stream).
    public var packetsSentPerStream: ClosedRange<Int>? { range(perStream.map(\.packetsSent)) }
    /// The fewest and most RTCP datagrams refused from a stream's own viewer (failed SRTCP
    /// authentication or parse; nil: no stream).
    public var feedbackRefusedPerStream: ClosedRange<Int>? { range(perStream.map(\.feedbackRefused)) }
    /// The fewest and most RTX packets a stream was sent (nil: no stream).
    public var retransmittedPacketsPerStream: ClosedRange<Int>? { range(perStream.map { $0.tracks.values.reduce(0) { $0 + $1.retransmittedPacketsSent } }) }

    private func range(_ values: [Int]) -> ClosedRange<Int>? {
        guard let low = values.min(), let high = values.max() else { return nil }
        return low...high
    }
}

/// The I/O side of a publisher's fan-out, driven by the publisher's thread: N ``FanoutStream``s,
/// one UDP socket for all of them — media, RTX and sender reports leave from it through one
/// ``DatagramBatch`` (`sendmmsg`, up to 64 datagrams of any streams per call), and every
/// viewer's RTCP arrives on it — and the shared store of canonical packets NACKs are answered
/// from. A viewer's feedback is taken only from its own addresses (its tracks' RTP and RTCP
/// destinations) and acted on for its stream only; anything else is refused unread, counted.
///
/// ```swift
/// router.distribute(packet, track: 0, now: now)   // each canonical packet, to every stream
/// let next = router.poll(now: now)                // sends the batch, what the networks release
/// ```
///
/// No thread per stream (from ``parallelStreams`` streams on, a frame's media is sent by two
/// threads, half of the streams each), no allocation per stream and packet without impairment
/// (with one, each stream's copy enters its simulated network).
final class FanoutRouter {
    /// What ``service(now:wallClock:)`` found the viewers asking for.
    struct Requests: Equatable {
        /// A viewer asked for a key frame: one encoder, so all get it.
        var keyFrame = false
        /// The lowest bit-rate limit across viewers changed: the new one (nil inside: none).
        var bitrateLimit: UInt64??
    }

    let streams: [FanoutStream]
    let stride: Int
    private let socket: UDPReceiver
    private let batch: DatagramBatch
    /// The second half of the streams' media goes out through this batch, on a second thread
    /// (nil: below ``parallelStreams`` streams, one thread does all).
    private let helperBatch: DatagramBatch?
    /// One scratch buffer per half (impaired streams' packets are written there first).
    private let scratches: [UnsafeMutableRawBufferPointer]
    /// From how many streams a frame's media is written and sent by two threads at once (the
    /// publisher's and one of the system's pool), each with half of the streams and its own batch.
    static let parallelStreams = 16
    private var stores: [RetransmissionBuffer?]
    private let captureTimeID: UInt8?
    private var bySource: [SocketAddress: Int] = [:]
    private var limits: [UInt64?]
    private var lowestLimit: UInt64?
    private var rtcpRefused = 0
    private var anyImpairs: Bool
    /// The canonical packets handed over since the last ``poll(now:drainDeadline:)`` (a frame),
    /// copied into one arena: each stream then sends them in a row, so that a frame's packets
    /// to one viewer join one segmented message.
    private var arena: UnsafeMutableRawBufferPointer
    private var arenaUsed = 0
    private var held: [(offset: Int, length: Int, track: Int, now: MonotonicInstant)] = []

    /// Opens the socket (an ephemeral port on every interface of `destination`'s family) and the
    /// streams.
    init(streams: [FanoutStream], stride: Int, retransmission: [Bool], captureTimeID: UInt8?, ipv6: Bool) throws {
        self.streams = streams
        self.stride = stride
        self.captureTimeID = captureTimeID
        socket = try UDPReceiver(bindingTo: SocketAddress(host: ipv6 ? "::" : "0.0.0.0", port: 0))
        var size: Int32 = 8 << 20
        _ = setsockopt(socket.fileDescriptor, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        batch = DatagramBatch(socket: socket.fileDescriptor)
        helperBatch = streams.count >= Self.parallelStreams ? DatagramBatch(socket: socket.fileDescriptor) : nil
        scratches = (0..<2).map { _ in
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: DatagramBatch.defaultSlotSize, alignment: 16)
            buffer.initializeMemory(as: UInt8.self, repeating: 0)
            return buffer
        }
        stores = retransmission.map { $0 ? RetransmissionBuffer(minimumResendInterval: .zero) : nil }
        limits = Array(repeating: nil, count: streams.count)
        anyImpairs = streams.contains(where: \.impairs)
        arena = .allocate(byteCount: 1 << 20, alignment: 16)
        held.reserveCapacity(1_024)
        for (index, stream) in streams.enumerated() {
            for source in stream.feedbackSources where bySource[source] == nil { bySource[source] = index }
        }
    }

    deinit {
        arena.deallocate()
        for scratch in scratches { scratch.deallocate() }
    }

    /// The port the streams send from and take RTCP on.
    var controlPort: UInt16 { socket.localAddress.port }
    /// The socket's descriptor (to wait on).
    var fileDescriptor: Int32 { socket.fileDescriptor }

    /// Hands canonical packet `packet` of track `track` to every stream (and keeps it for NACKs
    /// when the track retransmits). Held until ``poll(now:drainDeadline:)``, which sends the
    /// frame's packets stream by stream.
    func distribute(_ packet: [UInt8], track: Int, now: MonotonicInstant) {
        packet.withUnsafeBytes { bytes in
            guard let parsed = try? RTPPacket(parsing: bytes) else { return }
            if stores.indices.contains(track), stores[track] != nil {
                stores[track]!.store(bytes, sequenceNumber: parsed.sequenceNumber.rawValue, now: now)
            }
            if arenaUsed + bytes.count > arena.count { sendHeld() }
            guard bytes.count <= arena.count, let source = bytes.baseAddress else { return }
            (arena.baseAddress! + arenaUsed).copyMemory(from: source, byteCount: bytes.count)
            held.append((arenaUsed, bytes.count, track, now))
            arenaUsed += (bytes.count + 15) & ~15
        }
    }

    /// Sends the held canonical packets to every stream: stream after stream, each stream's
    /// packets of one track in a row (one segmented message where their sizes allow). With
    /// ``parallelStreams`` streams or more, two threads take half of the streams each; they
    /// touch disjoint streams, batches and scratch buffers and only read the held packets.
    private func sendHeld() {
        guard !held.isEmpty else { return }
        if helperBatch != nil {
            let half = streams.count / 2
            let router = UncheckedRouter(router: self)
            DispatchQueue.concurrentPerform(iterations: 2) { part in
                if part == 0 {
                    router.router.send(streams: 0..<half, batch: router.router.batch, scratch: router.router.scratches[0])
                } else {
                    router.router.send(streams: half..<router.router.streams.count, batch: router.router.helperBatch!, scratch: router.router.scratches[1])
                }
            }
        } else {
            send(streams: streams.indices, batch: batch, scratch: scratches[0])
        }
        held.removeAll(keepingCapacity: true)
        arenaUsed = 0
    }

    /// The router handed to the second thread of ``sendHeld()``: it only reads the held packets
    /// and works on its own half of the streams, batch and scratch buffer.
    private struct UncheckedRouter: @unchecked Sendable {
        let router: FanoutRouter
    }

    /// Writes the held packets for `range` of the streams into `batch` (and sends it).
    private func send(streams range: Range<Int>, batch: DatagramBatch, scratch: UnsafeMutableRawBufferPointer) {
        for index in range {
            let stream = streams[index]
            var previousTrack = -1
            for packet in held {
                let bytes = UnsafeRawBufferPointer(rebasing: arena[packet.offset..<packet.offset + packet.length])
                guard let parsed = try? RTPPacket(parsing: bytes) else { continue }
                let captureTime = captureTimeID.flatMap { parsed.headerExtension(id: $0) }
                if stream.impairs {
                    let length = stream.write(canonical: parsed, track: packet.track, captureTime: captureTime, now: packet.now, into: scratch)
                    if length > 0 { stream.submit(Array(scratch[0..<length]), label: packet.track, now: packet.now) }
                } else {
                    batch.append(to: stream.destination(track: packet.track), joining: packet.track == previousTrack) { slot in
                        stream.write(canonical: parsed, track: packet.track, captureTime: captureTime, now: packet.now, into: slot)
                    }
                    previousTrack = packet.track
                }
            }
        }
        batch.flush()
    }

    /// Every stream's sender reports, batched to their RTCP destinations.
    func sendReports(wallClock: Int64, canonicalTimestamp: (Int) -> UInt32?, now: MonotonicInstant) {
        sendHeld()  // the reports count what was sent
        for stream in streams {
            stream.senderReports(wallClock: wallClock, canonicalTimestamp: canonicalTimestamp, now: now) { track, datagram in
                datagram.withUnsafeBytes { batch.append($0, to: stream.controlDestination(track: track)) }
            }
        }
        batch.flush()
    }

    /// Takes every RTCP datagram waiting: from a viewer's address, its stream acts on it (RTX
    /// for NACKs on that stream only); from anywhere else, refused unread. Returns what the
    /// viewers asked of the encoder since the last call.
    func service(now: MonotonicInstant, wallClock: Int64) -> Requests {
        var requests = Requests()
        var limitChanged = false
        while true {
            let received = (try? socket.receive(timeout: .zero) { datagram in
                guard let source = datagram.source?.normalized, let index = bySource[source] else {
                    rtcpRefused += 1
                    return
                }
                let stream = streams[index]
                let wall = wallClock + now.duration(to: datagram.arrival).nanoseconds
                let asked = stream.receiveRTCP(
                    datagram.mutableBytes, length: datagram.bytes.count, now: datagram.arrival, arrivalNTP: NTPTime.ntp(unixNanoseconds: wall), stores: &stores
                ) { track, bytes in
                    if stream.impairs {
                        stream.submit(Array(bytes), label: 0x80 | track, now: now)
                    } else {
                        batch.append(bytes, to: stream.destination(track: track))
                    }
                }
                if asked.keyFrame { requests.keyFrame = true }
                if let limit = asked.bitrateLimit {
                    limits[index] = limit
                    limitChanged = true
                }
            }) ?? 0
            if received == 0 { break }
        }
        if limitChanged {
            let lowest = limits.compactMap { $0 }.min()
            if lowest != lowestLimit {
                lowestLimit = lowest
                requests.bitrateLimit = .some(lowest)
            }
        }
        return requests
    }

    /// Sends what is batched and what the streams' simulated networks release by `now`; returns
    /// when they release the next (nil: they hold nothing). With a `drainDeadline` (the end of a
    /// run), what would leave after it is dropped instead.
    @discardableResult
    func poll(now: MonotonicInstant, drainDeadline: MonotonicInstant? = nil) -> MonotonicInstant? {
        sendHeld()
        var next: MonotonicInstant?
        if anyImpairs {
            for stream in streams where stream.impairs {
                loop: while true {
                    let output = drainDeadline.map { stream.drainNetwork(now: now, deadline: $0) } ?? stream.pollNetwork(now: now)
                    switch output {
                    case .send(let datagram, let label):
                        datagram.withUnsafeBytes { batch.append($0, to: stream.destination(track: label & 0x7F)) }
                    case .wait(let instant):
                        next = min(next ?? instant, instant)
                        break loop
                    case .idle:
                        break loop
                    }
                }
            }
        }
        batch.flush()
        return next
    }

    /// Drops what every simulated network still holds (a stop).
    func discardPending() {
        for stream in streams { stream.discardPending() }
    }

    /// Waits until an RTCP datagram arrives or `deadline` (at most `limit`).
    func wait(until deadline: MonotonicInstant, now: MonotonicInstant, limit: Duration) {
        var descriptor = pollfd(fd: socket.fileDescriptor, events: Int16(POLLIN), revents: 0)
        let wait = min(now.duration(to: deadline), limit)
        guard wait > .zero else { return }
        _ = Glibc.poll(&descriptor, 1, Int32(clamping: (wait.nanoseconds + 999_999) / 1_000_000))
    }

    /// A snapshot of every stream and the send path.
    var statistics: FanoutStatistics {
        var sent = batch.statistics
        if let helper = helperBatch?.statistics {
            sent.datagramsSent += helper.datagramsSent
            sent.bytesSent += helper.bytesSent
            sent.systemCalls += helper.systemCalls
            sent.datagramsFailed += helper.datagramsFailed
            sent.segmentedMessages += helper.segmentedMessages
            sent.lastError = helper.lastError ?? sent.lastError
        }
        return FanoutStatistics(streams: streams.count, stride: stride, perStream: streams.map(\.statistics), batch: sent, rtcpRefused: rtcpRefused)
    }
}
