// Observe a value, dispose the subscription, and collect the logs — public API only.
import Playout

// The application, not the library, sets up logging, once: the console (here only critical lines;
// by default PLAYOUT_LOG_LEVEL's), plus a collector that keeps the first and the most recent lines
// whatever the console level.
let collector = LoggingSetup.bootstrap(
    collector: LogCollector(configuration: .init(firstCount: 3, recentCount: 2, level: .info)),
    setup: LoggingSetup(consoleLevel: .critical)
)
let logger = Logger(label: "sample.observe")

// An observable delay, handed out read-only.
let delay = Observable(Duration.milliseconds(230))
let readOnlyDelay = delay.readOnly
let subscription = readOnlyDelay.subscribe { value in
    print("observer: playout delay is \(value.compactDescription)")
    logger.info("delay changed", metadata: ["delay": "\(value.compactDescription)"])
}
delay.value = .seconds(1)
delay.value = .seconds(1)  // equal: no notification
delay.value = .milliseconds(1500)
subscription.dispose()
delay.value = .seconds(5)  // disposed: no notification
print("observers after dispose: \(delay.observerCount)")

for step in 1...3 {
    logger.info("step \(step)")
}

// Timestamps differ from run to run; print each line without its first field.
print("collected logs:")
for line in collector.collectLogMessages().split(separator: "\n") {
    let fields = line.split(separator: " ", maxSplits: 1)
    print("  " + (fields.count == 2 && line.first?.isNumber == true ? String(fields[1]) : String(line)))
}
