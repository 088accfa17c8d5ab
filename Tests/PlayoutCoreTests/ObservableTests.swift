import Foundation
import PlayoutCore
import Synchronization
import PlayoutTesting
import Testing

@Suite("Observable: behaviour-subject semantics")
struct ObservableTests {
    @Test("subscribe delivers the current value immediately")
    func subscribeDeliversCurrentValue() {
        let observable = Observable(7)
        let recorder = Recorder<Int>()
        let subscription = observable.subscribe { recorder.append($0) }
        #expect(recorder.values == [7])
        observable.value = 8
        #expect(recorder.values == [7, 8])
        withExtendedLifetime(subscription) {}
    }

    @Test("observers are notified only when the value changes")
    func notifiesOnlyOnChange() {
        let observable = Observable("a")
        let recorder = Recorder<String>()
        let subscription = observable.subscribe { recorder.append($0) }
        observable.value = "a"
        observable.set("b")
        observable.set("b")
        observable.value = "a"
        #expect(recorder.values == ["a", "b", "a"])
        withExtendedLifetime(subscription) {}
    }

    @Test("a set notifies every observer, in registration order")
    func setNotifiesAll() {
        let observable = Observable(0)
        let order = Recorder<String>()
        let subscriptions = (0..<5).map { index in
            observable.subscribe { order.append("\(index):\($0)") }
        }
        observable.value = 1
        #expect(order.values == ["0:0", "1:0", "2:0", "3:0", "4:0", "0:1", "1:1", "2:1", "3:1", "4:1"])
        #expect(observable.observerCount == 5)
        withExtendedLifetime(subscriptions) {}
    }

    @Test("update applies a read-modify-write atomically and notifies on change")
    func updateIsAtomic() {
        let counter = Observable(0)
        let recorder = Recorder<Int>()
        let subscription = counter.subscribe { recorder.append($0) }
        let doubled = counter.update { value -> Int in
            value += 1
            return value * 2
        }
        #expect(doubled == 2)
        counter.update { _ in }  // unchanged: no notification
        #expect(recorder.values == [0, 1])
        struct Failure: Error {}
        #expect(throws: Failure.self) {
            try counter.update { value in
                value = 99
                throw Failure()
            }
        }
        #expect(counter.value == 1, "a throwing update changes nothing")
        withExtendedLifetime(subscription) {}
    }

    @Test("the read-only view reads and subscribes, and sees the owner's sets")
    func readOnlyView() {
        let owner = Observable(1.5)
        let view = owner.readOnly
        let recorder = Recorder<Double>()
        let subscription = view.subscribe { recorder.append($0) }
        owner.value = 2.5
        #expect(view.value == 2.5)
        #expect(recorder.values == [1.5, 2.5])
        #expect(ReadOnlyObservable.constant(3).value == 3)
        withExtendedLifetime(subscription) {}
    }

    // MARK: Disposal

    @Test("dispose stops notifications and is idempotent")
    func disposeStops() {
        let observable = Observable(0)
        let recorder = Recorder<Int>()
        let subscription = observable.subscribe { recorder.append($0) }
        observable.value = 1
        subscription.dispose()
        subscription.dispose()
        observable.value = 2
        #expect(recorder.values == [0, 1])
        #expect(observable.observerCount == 0)
    }

    @Test("dropping the last reference to a subscription cancels it")
    func deinitCancels() {
        let observable = Observable(0)
        let recorder = Recorder<Int>()
        var subscription: ObservableSubscription<Int>? = observable.subscribe { recorder.append($0) }
        observable.value = 1
        withExtendedLifetime(subscription) {}
        subscription = nil
        observable.value = 2
        #expect(recorder.values == [0, 1])
        #expect(observable.observerCount == 0)
    }

    @Test("an observer can dispose itself from inside its callback")
    func disposeSelfInsideCallback() {
        let observable = Observable(0)
        let recorder = Recorder<Int>()
        let holder = LockedValue<ObservableSubscription<Int>?>(nil)
        holder.withLock {
            $0 = observable.subscribe { value in
                recorder.append(value)
                if value == 2 {
                    // Drops the last reference from inside the running callback.
                    holder.withLock { $0 = nil }
                    recorder.append(-1)  // the callback's captures are still valid
                }
            }
        }
        observable.value = 1
        observable.value = 2
        observable.value = 3
        #expect(recorder.values == [0, 1, 2, -1])
        #expect(observable.observerCount == 0)
    }

    @Test("disposing a later observer from inside a callback skips it for the rest of the round")
    func disposeOtherInsideCallback() {
        let observable = Observable(0)
        let first = Recorder<Int>()
        let second = Recorder<Int>()
        let victim = LockedValue<ObservableSubscription<Int>?>(nil)
        let killer = observable.subscribe { value in
            first.append(value)
            if value == 1 { victim.withLock { $0 = nil } }
        }
        victim.withLock { $0 = observable.subscribe { second.append($0) } }
        observable.value = 1
        observable.value = 2
        #expect(first.values == [0, 1, 2])
        #expect(second.values == [0], "disposed before its turn in the round for 1")
        #expect(observable.observerCount == 1)
        withExtendedLifetime(killer) {}
    }

    @Test("dispose from another thread while a callback is in flight waits for it; nothing runs after")
    func disposeFromAnotherThreadWaits() {
        let observable = Observable(0)
        let inCallback = Atomic<Bool>(false)
        let entered = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        let calls = Atomic<Int>(0)
        let subscription = observable.subscribe { value in
            calls.add(1, ordering: .sequentiallyConsistent)
            guard value == 1 else { return }
            inCallback.store(true, ordering: .sequentiallyConsistent)
            entered.signal()
            gate.wait()
            inCallback.store(false, ordering: .sequentiallyConsistent)
        }
        let setter = Thread { observable.value = 1 }
        setter.start()
        entered.wait()  // the callback for 1 is now running on `setter`
        let disposed = DispatchSemaphore(value: 0)
        let stillInCallbackAfterDispose = Atomic<Bool>(true)
        let disposer = Thread {
            subscription.dispose()
            stillInCallbackAfterDispose.store(inCallback.load(ordering: .sequentiallyConsistent), ordering: .sequentiallyConsistent)
            disposed.signal()
        }
        disposer.start()
        #expect(disposed.wait(timeout: .now() + .milliseconds(50)) == .timedOut, "dispose waits for the running callback")
        gate.signal()
        disposed.wait()
        #expect(stillInCallbackAfterDispose.load(ordering: .sequentiallyConsistent) == false)
        let callsAtDispose = calls.load(ordering: .sequentiallyConsistent)
        observable.value = 2
        observable.value = 3
        #expect(calls.load(ordering: .sequentiallyConsistent) == callsAtDispose)
    }

    @Test("randomized: once dispose() returns on one thread, no callback starts on another")
    func disposeRaceRandomized() {
        var generator = SeededRandomNumberGenerator(seed: 0xD15B05E)
        for _ in 0..<300 {
            let observable = Observable(0)
            let callsAfterDispose = Atomic<Int>(0)
            let disposedFlag = Atomic<Bool>(false)
            let subscription = observable.subscribe { _ in
                if disposedFlag.load(ordering: .sequentiallyConsistent) {
                    callsAfterDispose.add(1, ordering: .relaxed)
                }
            }
            let setCount = Int.random(in: 50...400, using: &generator)
            let disposeAfter = Int.random(in: 0...300, using: &generator)
            runOnThreads(2) { index in
                if index == 0 {
                    for value in 1...setCount { observable.value = value }
                } else {
                    for _ in 0..<disposeAfter { _ = observable.value }
                    subscription.dispose()
                    disposedFlag.store(true, ordering: .sequentiallyConsistent)
                }
            }
            #expect(callsAfterDispose.load(ordering: .relaxed) == 0)
            #expect(observable.observerCount == 0)
        }
    }

    // MARK: Re-entrancy and order

    @Test("a set from inside a callback neither deadlocks nor reorders what others see")
    func reentrantSetKeepsOrder() {
        let observable = Observable(0)
        let before = Recorder<Int>()
        let after = Recorder<Int>()
        let first = observable.subscribe { before.append($0) }
        let bouncer = observable.subscribe { value in
            if value == 1 { observable.value = 2 }
            if value == 2 { observable.value = 3 }
        }
        let last = observable.subscribe { after.append($0) }
        observable.value = 1
        #expect(before.values == [0, 1, 2, 3])
        #expect(after.values == [0, 1, 2, 3], "sees 1 before 2 although 2 was set while 1 was being delivered")
        #expect(observable.value == 3)
        withExtendedLifetime((first, bouncer, last)) {}
    }

    @Test("a set back to the delivered value inside a round is not delivered twice")
    func reentrantFlipFlop() {
        let observable = Observable(0)
        let recorder = Recorder<Int>()
        let flipper = observable.subscribe { value in
            if value == 1 {
                observable.value = 5
                observable.value = 1  // back to what the round is delivering
            }
        }
        let watcher = observable.subscribe { recorder.append($0) }
        observable.value = 1
        #expect(recorder.values == [0, 1])
        withExtendedLifetime((flipper, watcher)) {}
    }

    @Test("subscribe from inside a callback gets the current value right after that callback")
    func reentrantSubscribe() {
        let observable = Observable(0)
        let late = Recorder<Int>()
        let lateSubscription = LockedValue<ObservableSubscription<Int>?>(nil)
        let spawner = observable.subscribe { value in
            if value == 1 {
                lateSubscription.withLock { $0 = observable.subscribe { late.append($0) } }
                #expect(late.values.isEmpty, "delivered after this callback returns")
            }
        }
        observable.value = 1
        #expect(late.values == [1])
        observable.value = 2
        #expect(late.values == [1, 2])
        #expect(observable.observerCount == 2)
        withExtendedLifetime(spawner) {}
        lateSubscription.withLock { $0 = nil }
        #expect(observable.observerCount == 1)
    }

    @Test("reading the value from inside a callback returns the value being delivered or newer")
    func readInsideCallback() {
        let observable = Observable(0)
        let reads = Recorder<Int>()
        let subscription = observable.subscribe { _ in reads.append(observable.value) }
        observable.value = 4
        #expect(reads.values == [0, 4])
        withExtendedLifetime(subscription) {}
    }

    // MARK: Concurrency

    @Test("8 threads updating, 3 observers: each sees a strictly increasing subsequence ending in the final value")
    func concurrentUpdates() {
        let observable = Observable(0)
        let recorders = (0..<3).map { _ in Recorder<Int>() }
        let subscriptions = recorders.map { recorder in observable.subscribe { recorder.append($0) } }
        let perThread = 2_000
        runOnThreads(8) { _ in
            for _ in 0..<perThread { observable.update { $0 += 1 } }
        }
        #expect(observable.value == 8 * perThread)
        for recorder in recorders {
            let values = recorder.values
            #expect(values.first == 0)
            #expect(values.isStrictlyIncreasing, "set order is the value order here")
            #expect(values.last == 8 * perThread)
        }
        withExtendedLifetime(subscriptions) {}
    }

    @Test("8 threads setting, 3 observers: per-thread order kept, everyone ends on the final value")
    func concurrentSets() {
        let observable = Observable(-1)
        let recorders = (0..<3).map { _ in Recorder<Int>() }
        let subscriptions = recorders.map { recorder in observable.subscribe { recorder.append($0) } }
        let perThread = 2_000
        runOnThreads(8) { thread in
            for sequence in 0..<perThread { observable.value = thread * 1_000_000 + sequence }
        }
        let final = observable.value
        for recorder in recorders {
            let values = recorder.values
            #expect(values.last == final)
            for thread in 0..<8 {
                let mine = values.filter { $0 >= thread * 1_000_000 && $0 < (thread + 1) * 1_000_000 }
                #expect(mine.isStrictlyIncreasing, "thread \(thread)'s sets arrive in the order it made them")
            }
            #expect(zip(values, values.dropFirst()).allSatisfy { $0 != $1 }, "never the same value twice in a row")
        }
        withExtendedLifetime(subscriptions) {}
    }

    @Test("subscribe racing with set never misses the latest value")
    func subscribeRacesSet() {
        for trial in 0..<200 {
            let observable = Observable(0)
            let recorders = Recorder<Recorder<Int>>()
            let subscriptions = Recorder<ObservableSubscription<Int>>()
            runOnThreads(3) { index in
                if index == 0 {
                    for value in 1...200 { observable.value = value }
                } else {
                    for _ in 0..<20 {
                        let recorder = Recorder<Int>()
                        let subscription = observable.subscribe { recorder.append($0) }
                        recorders.append(recorder)
                        subscriptions.append(subscription)
                    }
                }
            }
            for recorder in recorders.values {
                let values = recorder.values
                #expect(values.isStrictlyIncreasing, "trial \(trial)")
                #expect(values.last == 200, "trial \(trial): a late subscriber ends on the final value")
            }
        }
    }

    @Test("no stale observers: thousands of randomized trials of concurrent and re-entrant sets")
    func noStaleObservers() {
        var generator = SeededRandomNumberGenerator(seed: 0x5EED_0B5E)
        for trial in 0..<2_000 {
            let observable = Observable(0)
            let writers = Int.random(in: 2...4, using: &generator)
            let perWriter = Int.random(in: 1...60, using: &generator)
            let bounceModulus = Int.random(in: 2...9, using: &generator)
            let recorders = (0..<3).map { _ in Recorder<Int>() }
            var subscriptions = recorders.map { recorder in observable.subscribe { recorder.append($0) } }
            // A re-entrant writer: on some values it bumps the value again from inside the callback.
            subscriptions.append(observable.subscribe { value in
                if value % bounceModulus == 0 { observable.update { $0 += 1 } }
            })
            runOnThreads(writers) { _ in
                for _ in 0..<perWriter { observable.update { $0 += 1 } }
            }
            let final = observable.value
            for recorder in recorders {
                let values = recorder.values
                #expect(values.last == final, "trial \(trial): last delivered \(String(describing: values.last)), value \(final)")
                #expect(values.isStrictlyIncreasing, "trial \(trial): out of set order")
            }
            withExtendedLifetime(subscriptions) {}
        }
    }

    @Test("value reads are consistent while other threads set")
    func concurrentReads() {
        let observable = Observable([0, 0])
        runOnThreads(4) { index in
            for step in 1...5_000 {
                if index == 0 {
                    observable.value = [step, step]
                } else {
                    let pair = observable.value
                    #expect(pair[0] == pair[1])
                }
            }
        }
    }

    // MARK: Lifetimes

    @Test("no retain cycles: an observable and its subscriptions are freed")
    func noRetainCycles() {
        weak var weakObservable: Observable<Int>?
        weak var weakSubscription: ObservableSubscription<Int>?
        do {
            let observable = Observable(0)
            weakObservable = observable
            let subscription = observable.subscribe { _ in _ = observable.value }  // captures the observable
            weakSubscription = subscription
            observable.value = 1
            subscription.dispose()
        }
        #expect(weakObservable == nil)
        #expect(weakSubscription == nil)

        do {
            let observable = Observable(0)
            weakObservable = observable
            var subscription: ObservableSubscription<Int>? = observable.subscribe { _ in }
            weakSubscription = subscription
            #expect(weakSubscription != nil)
            subscription = nil
            #expect(weakSubscription == nil, "released without dispose()")
        }
        #expect(weakObservable == nil)
    }

    @Test("a subscription keeps its observable's storage alive, the observable keeps no subscription")
    func subscriptionOutlivesOwner() {
        let recorder = Recorder<Int>()
        weak var weakObservable: Observable<Int>?
        var subscription: ObservableSubscription<Int>?
        do {
            let observable = Observable(1)
            weakObservable = observable
            subscription = observable.subscribe { recorder.append($0) }
        }
        #expect(weakObservable == nil, "the owner's wrapper is gone")
        subscription?.dispose()
        subscription = nil
        #expect(recorder.values == [1])
    }

    // MARK: Derived observables and async values

    @Test("map derives an observable that notifies only when the derived value changes")
    func mapIsDistinct() {
        let source = Observable(1)
        let parity = source.map { $0 % 2 == 0 ? "even" : "odd" }
        let recorder = Recorder<String>()
        let subscription = parity.subscribe { recorder.append($0) }
        for value in [3, 5, 6, 8, 9] { source.value = value }
        #expect(recorder.values == ["odd", "even", "odd"])
        #expect(parity.value == "odd")
        withExtendedLifetime(subscription) {}
    }

    @Test("a derived observable stops following its source once released")
    func mapReleases() {
        let source = Observable(1)
        do {
            let doubled = source.map { $0 * 2 }
            let recorder = Recorder<Int>()
            let subscription = doubled.subscribe { recorder.append($0) }
            source.value = 2
            #expect(recorder.values == [2, 4])
            #expect(source.observerCount == 1)
            withExtendedLifetime(subscription) {}
        }
        #expect(source.observerCount == 0, "the derived observable and its upstream subscription are gone")
    }

    @Test("a derived observable keeps working while only its subscribers hold it")
    func mapHeldBySubscribers() {
        let source = Observable(1)
        let recorder = Recorder<Int>()
        let subscription = source.map { $0 + 100 }.subscribe { recorder.append($0) }
        source.value = 2
        #expect(recorder.values == [101, 102])
        subscription.dispose()
    }

    @Test("values: the current value first, then changes; cancelling ends the subscription")
    func asyncValues() async {
        let observable = Observable(0)
        let task = Task {
            var seen: [Int] = []
            for await value in observable.values {
                seen.append(value)
                if value == 3 { break }
            }
            return seen
        }
        // Wait (without sleeping) until the iterator has subscribed, then set.
        while observable.observerCount == 0 { await Task.yield() }
        for value in 1...3 {
            observable.value = value
        }
        let seen = await task.value
        #expect(seen.first == 0)
        #expect(seen.last == 3)
        #expect(seen.isStrictlyIncreasing)
        while observable.observerCount != 0 { await Task.yield() }
        #expect(observable.observerCount == 0)
    }
}

@Suite("Disposables")
struct DisposableTests {
    @Test("a dispose bag disposes everything once, on dispose or release")
    func disposeBag() {
        let observable = Observable(0)
        let recorder = Recorder<Int>()
        var bag: DisposeBag? = DisposeBag()
        observable.subscribe { recorder.append($0) }.disposed(by: bag!)
        observable.subscribe { recorder.append($0 * 10) }.disposed(by: bag!)
        #expect(bag!.count == 2)
        observable.value = 1
        bag = nil
        observable.value = 2
        #expect(recorder.values == [0, 0, 1, 10])
        #expect(observable.observerCount == 0)
    }

    @Test("inserting into a disposed bag disposes at once")
    func disposedBagRejects() {
        let bag = DisposeBag()
        bag.dispose()
        let runs = Atomic<Int>(0)
        let disposable = ClosureDisposable { runs.add(1, ordering: .relaxed) }
        bag.insert(disposable)
        #expect(disposable.isDisposed)
        disposable.dispose()
        #expect(runs.load(ordering: .relaxed) == 1)
        #expect(bag.count == 0)
    }

    @Test("a closure disposable runs once, on dispose or release")
    func closureDisposable() {
        let runs = Atomic<Int>(0)
        var disposable: ClosureDisposable? = ClosureDisposable { runs.add(1, ordering: .relaxed) }
        disposable?.dispose()
        disposable?.dispose()
        disposable = nil
        #expect(runs.load(ordering: .relaxed) == 1)
        _ = ClosureDisposable { runs.add(1, ordering: .relaxed) }
        #expect(runs.load(ordering: .relaxed) == 2)
    }
}
