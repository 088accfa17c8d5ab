import PlayoutCore
#if canImport(Glibc)
import Glibc
#endif

/// A mutex with a condition variable on the monotonic clock, for the engine's and the backends'
/// threads (sleep until an instant unless woken).
final class TelemetryCondition: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Runs `body` holding the lock.
    func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Waits (the lock held) until signalled or `timeout` passes on the real monotonic clock.
    func wait(timeout: Duration) {
        let deadline = MonotonicClock().now.advanced(by: max(.zero, timeout)).nanoseconds
        var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        pthread_cond_timedwait(condition, mutex, &time)
    }

    /// Wakes every waiter.
    func broadcast() { pthread_cond_broadcast(condition) }
}

/// Runs `body` on a new detached thread named `name` (at most 15 bytes show in `top -H`).
func startTelemetryThread(named name: String, _ body: @escaping @Sendable () -> Void) throws(TelemetryEngineError) {
    final class Start {
        let name: String
        let body: @Sendable () -> Void
        init(name: String, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }
    let start = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
    var thread = pthread_t()
    let status = pthread_create(&thread, nil, { argument in
        let start = Unmanaged<Start>.fromOpaque(argument!).takeRetainedValue()
        if let comm = fopen("/proc/thread-self/comm", "w") {
            fputs(String(decoding: start.name.utf8.prefix(15), as: UTF8.self), comm)
            fclose(comm)
        }
        start.body()
        return nil
    }, start)
    guard status == 0 else {
        Unmanaged<AnyObject>.fromOpaque(start).release()
        throw TelemetryEngineError("cannot start thread \(name): \(String(cString: strerror(status)))")
    }
    pthread_detach(thread)
}

/// Why the engine could not do what was asked (start a thread, add a backend after shutdown).
public struct TelemetryEngineError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What happened and what to do.
    public var message: String
    /// An error saying `message`.
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
