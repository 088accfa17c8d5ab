// Observable fan-out against the reference the issue names: OpenCombine's CurrentValueSubject,
// raw and with .removeDuplicates() (the pipeline that gives it our notify-on-change semantics),
// measured in the same run. Every benchmark runs 1,000 operations per iteration (scalingFactor
// .kilo), so the scaled (*) results read per operation.
import Benchmark
import Foundation
import OpenCombine
import PlayoutCore

/// Runs `body` on a second thread while the benchmark thread runs it too, and waits for both.
func alongside(_ body: @escaping @Sendable () -> Void, _ main: () -> Void) {
    let done = DispatchSemaphore(value: 0)
    Thread {
        body()
        done.signal()
    }.start()
    main()
    done.wait()
}

/// A box to move non-Sendable OpenCombine values into the second thread of a benchmark.
final class Unchecked<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .instructions, .mallocCountTotal],
        scalingFactor: .kilo,
        maxDuration: .seconds(1),
        maxIterations: 20_000
    )

    // MARK: A changing set with 1, 10, 100 observers.
    for observers in [1, 10, 100] {
        Benchmark("set, \(observers) observers: Observable") { benchmark in
            let observable = Observable(0)
            let subscriptions = (0..<observers).map { _ in observable.subscribe { blackHole($0) } }
            var value = 0
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                value &+= 1
                observable.value = value
            }
            benchmark.stopMeasurement()
            withExtendedLifetime(subscriptions) {}
        }
        Benchmark("set, \(observers) observers: CurrentValueSubject") { benchmark in
            let subject = CurrentValueSubject<Int, Never>(0)
            let cancellables = (0..<observers).map { _ in subject.sink { blackHole($0) } }
            var value = 0
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                value &+= 1
                subject.send(value)
            }
            benchmark.stopMeasurement()
            withExtendedLifetime(cancellables) {}
        }
        Benchmark("set, \(observers) observers: CurrentValueSubject+removeDuplicates") { benchmark in
            let subject = CurrentValueSubject<Int, Never>(0)
            let cancellables = (0..<observers).map { _ in subject.removeDuplicates().sink { blackHole($0) } }
            var value = 0
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                value &+= 1
                subject.send(value)
            }
            benchmark.stopMeasurement()
            withExtendedLifetime(cancellables) {}
        }
    }

    // MARK: A set of an unchanged value.
    for observers in [1, 100] {
        Benchmark("unchanged set, \(observers) observers: Observable") { benchmark in
            let observable = Observable(0)
            let subscriptions = (0..<observers).map { _ in observable.subscribe { blackHole($0) } }
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                observable.value = 0
            }
            benchmark.stopMeasurement()
            withExtendedLifetime(subscriptions) {}
        }
        Benchmark("unchanged set, \(observers) observers: CurrentValueSubject+removeDuplicates") { benchmark in
            let subject = CurrentValueSubject<Int, Never>(0)
            let cancellables = (0..<observers).map { _ in subject.removeDuplicates().sink { blackHole($0) } }
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                subject.send(0)
            }
            benchmark.stopMeasurement()
            withExtendedLifetime(cancellables) {}
        }
    }

    // MARK: Reading the value.
    Benchmark("value read: Observable") { benchmark in
        let observable = Observable(42)
        for _ in benchmark.scaledIterations {
            blackHole(observable.value)
        }
    }
    Benchmark("value read: CurrentValueSubject") { benchmark in
        let subject = CurrentValueSubject<Int, Never>(42)
        for _ in benchmark.scaledIterations {
            blackHole(subject.value)
        }
    }

    // MARK: Subscribe + dispose churn (one other observer registered).
    Benchmark("subscribe+dispose: Observable") { benchmark in
        let observable = Observable(0)
        let other = observable.subscribe { blackHole($0) }
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            let subscription = observable.subscribe { blackHole($0) }
            subscription.dispose()
        }
        benchmark.stopMeasurement()
        withExtendedLifetime(other) {}
    }
    Benchmark("subscribe+dispose: CurrentValueSubject") { benchmark in
        let subject = CurrentValueSubject<Int, Never>(0)
        let other = subject.sink { blackHole($0) }
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            let cancellable = subject.sink { blackHole($0) }
            cancellable.cancel()
        }
        benchmark.stopMeasurement()
        withExtendedLifetime(other) {}
    }
    Benchmark("subscribe+dispose: CurrentValueSubject+removeDuplicates") { benchmark in
        let subject = CurrentValueSubject<Int, Never>(0)
        let other = subject.removeDuplicates().sink { blackHole($0) }
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            let cancellable = subject.removeDuplicates().sink { blackHole($0) }
            cancellable.cancel()
        }
        benchmark.stopMeasurement()
        withExtendedLifetime(other) {}
    }

    // MARK: Two threads setting concurrently (1,000 sets each per iteration, one observer).
    Benchmark("two threads setting: Observable") { benchmark in
        let observable = Observable(0)
        let subscription = observable.subscribe { blackHole($0) }
        let count = benchmark.scaledIterations.count
        benchmark.startMeasurement()
        alongside({
            for value in 0..<count { observable.value = -value - 1 }
        }) {
            for value in 0..<count { observable.value = value + 1 }
        }
        benchmark.stopMeasurement()
        withExtendedLifetime(subscription) {}
    }
    Benchmark("two threads setting: CurrentValueSubject") { benchmark in
        let subject = Unchecked(CurrentValueSubject<Int, Never>(0))
        let cancellable = subject.value.sink { blackHole($0) }
        let count = benchmark.scaledIterations.count
        benchmark.startMeasurement()
        alongside({
            for value in 0..<count { subject.value.send(-value - 1) }
        }) {
            for value in 0..<count { subject.value.send(value + 1) }
        }
        benchmark.stopMeasurement()
        withExtendedLifetime(cancellable) {}
    }
    Benchmark("two threads setting: CurrentValueSubject+removeDuplicates") { benchmark in
        let subject = Unchecked(CurrentValueSubject<Int, Never>(0))
        let cancellable = subject.value.removeDuplicates().sink { blackHole($0) }
        let count = benchmark.scaledIterations.count
        benchmark.startMeasurement()
        alongside({
            for value in 0..<count { subject.value.send(-value - 1) }
        }) {
            for value in 0..<count { subject.value.send(value + 1) }
        }
        benchmark.stopMeasurement()
        withExtendedLifetime(cancellable) {}
    }
}
