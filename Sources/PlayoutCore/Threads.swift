#if canImport(Glibc)
import Glibc
#endif
import SwiftOverlayShims

/// A mutex with a condition variable on the monotonic clock, for threads that sleep until an
/// instant unless woken earlier (new work, a stop): the event loop's decode and observer
/// threads, a libavformat input's reading thread, the telemetry engine and its backends.
package final class ConditionLock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    package init() {
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

    package func lock() { pthread_mutex_lock(mutex) }
    package func unlock() { pthread_mutex_unlock(mutex) }

    /// Runs `body` holding the lock.
    package func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        lock()
        defer { unlock() }
        return try body()
    }

    /// Waits (the lock held) until signalled or `deadline` passes (nil: until signalled).
    package func wait(until deadline: MonotonicInstant?) {
        guard let deadline else {
            pthread_cond_wait(condition, mutex)
            return
        }
        var time = timespec(
            tv_sec: Int(deadline.nanoseconds / 1_000_000_000), tv_nsec: Int(deadline.nanoseconds % 1_000_000_000)
        )
        pthread_cond_timedwait(condition, mutex, &time)
    }

    /// Waits (the lock held) until signalled or `timeout` passes on the real monotonic clock.
    package func wait(timeout: Duration) {
        wait(until: MonotonicClock().now.advanced(by: max(.zero, timeout)))
    }

    /// Wakes every waiter.
    package func broadcast() { pthread_cond_broadcast(condition) }
}

/// Sleeps the calling thread until `instant` on the monotonic clock (no early wake-up).
package func sleepUntil(_ instant: MonotonicInstant) {
    var time = timespec(tv_sec: Int(instant.nanoseconds / 1_000_000_000), tv_nsec: Int(instant.nanoseconds % 1_000_000_000))
    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &time, nil) == EINTR {}
}

/// Runs `body` on a new detached thread named `name` (the name `top -H` and debuggers show,
/// at most 15 bytes).
///
/// - Throws: ``PlayoutError`` when the system cannot start another thread.
package func startThread(named name: String, _ body: @escaping @Sendable () -> Void) throws {
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
        // pthread_setname_np is not imported without _GNU_SOURCE; /proc names the thread too.
        if let comm = fopen("/proc/thread-self/comm", "w") {
            fputs(String(decoding: start.name.utf8.prefix(15), as: UTF8.self), comm)
            fclose(comm)
        }
        start.body()
        return nil
    }, start)
    guard status == 0 else {
        Unmanaged<AnyObject>.fromOpaque(start).release()
        throw PlayoutError(.invalidState, "cannot start thread \(name): \(String(cString: strerror(status)))")
    }
    pthread_detach(thread)
}

extension PlayoutError.Code {
    /// Something was asked in the wrong state (started twice, a thread that cannot start).
    public static let invalidState = Self("invalidState")
}
