/// Which shard of a swarm this process is, and so which viewers it runs.
///
/// A swarm past one machine runs as `count` processes (shards) of an existing scheduler; each
/// runs one contiguous block of the run's viewers, numbered globally from 0, and tags every
/// record with its index. The index comes from, in this order:
///
/// 1. `--shard INDEX/COUNT` (0-based: `2/3` is the last of three);
/// 2. Kubernetes' `JOB_COMPLETION_INDEX` (an Indexed Job); the count from `--shard-count N`,
///    else `PLAYOUT_SHARD_COUNT` — an Indexed Job does not export its completions, so the
///    manifest sets `PLAYOUT_SHARD_COUNT` equal to them (`deploy/kubernetes/swarm-indexed-job.yaml`);
/// 3. Slurm's `SLURM_ARRAY_TASK_ID` with `SLURM_ARRAY_TASK_COUNT`, counted from
///    `SLURM_ARRAY_TASK_MIN` (an array `--array=1-3` is shards 0, 1, 2) in steps of
///    `SLURM_ARRAY_TASK_STEP`;
/// 4. otherwise the only shard, 0/1.
///
/// A value that is not a plain decimal number, an index outside `0..<count`, a count of 0 or
/// above ``maximumCount``, an option that disagrees with the scheduler's variables, or an index
/// without a count is a ``SwarmShardError`` naming the option or variable.
///
/// ```swift
/// let shard = try SwarmShard.resolve(option: nil, count: nil,
///                                    environment: ["SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "3"])
/// print(shard, shard.viewers(of: 100))   // 2/3 67..<100
/// ```
public struct SwarmShard: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// Where a shard's index came from.
    public enum Source: String, Equatable, Hashable, Sendable {
        /// `--shard INDEX/COUNT`.
        case option
        /// Kubernetes' `JOB_COMPLETION_INDEX` (an Indexed Job).
        case kubernetes
        /// Slurm's `SLURM_ARRAY_TASK_ID` (a job array).
        case slurm
        /// Nothing said: the only shard.
        case single
    }

    /// The highest shard count accepted: 100 000.
    public static let maximumCount = 100_000

    /// The option that gives the shard: `--shard`.
    public static let optionName = "--shard"
    /// The option that gives the count with `JOB_COMPLETION_INDEX`: `--shard-count`.
    public static let countOptionName = "--shard-count"
    /// Kubernetes' index of an Indexed Job's pod.
    public static let kubernetesIndexVariable = "JOB_COMPLETION_INDEX"
    /// The shard count a Kubernetes manifest sets (equal to the Job's `completions`).
    public static let shardCountVariable = "PLAYOUT_SHARD_COUNT"
    /// Slurm's task id in a job array, the array's task count, its lowest id and its step.
    public static let slurmTaskVariable = "SLURM_ARRAY_TASK_ID"
    public static let slurmCountVariable = "SLURM_ARRAY_TASK_COUNT"
    public static let slurmMinimumVariable = "SLURM_ARRAY_TASK_MIN"
    public static let slurmStepVariable = "SLURM_ARRAY_TASK_STEP"

    /// This shard's index, `0..<count`.
    public let index: Int
    /// How many shards the run has.
    public let count: Int
    /// Where the index came from.
    public let source: Source

    /// The only shard of a run on one machine: 0/1.
    public static let single = SwarmShard(checkedIndex: 0, count: 1, source: .single)

    /// Shard `index` of `count`.
    ///
    /// - Throws: ``SwarmShardError`` when `count` is not in `1...maximumCount` or `index` is not
    ///   in `0..<count`.
    public init(index: Int, count: Int, source: Source = .option) throws(SwarmShardError) {
        let name = source.variableName
        try Self.checkCount(count, name: name, value: "\(index)/\(count)")
        guard index >= 0, index < count else {
            throw SwarmShardError(name, "\(index)/\(count)", "the index must be from 0 to \(count - 1) (0-based: the last of \(count) is \(count - 1)/\(count))")
        }
        self.init(checkedIndex: index, count: count, source: source)
    }

    private init(checkedIndex index: Int, count: Int, source: Source) {
        self.index = index
        self.count = count
        self.source = source
    }

    /// `INDEX/COUNT`, e.g. `2/3`.
    public var description: String { "\(index)/\(count)" }

    /// Parses `--shard INDEX/COUNT` (0-based, e.g. `2/3`).
    ///
    /// - Throws: ``SwarmShardError`` naming `--shard` for anything else.
    public static func parse(_ text: String) throws(SwarmShardError) -> SwarmShard {
        let parts = text.split(separator: "/", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 2 else {
            throw SwarmShardError(optionName, text, "write INDEX/COUNT, 0-based: 0/3, 1/3 and 2/3 are the three shards of a run")
        }
        let count = try number(parts[1], name: optionName, whole: text)
        let index = try number(parts[0], name: optionName, whole: text)
        return try SwarmShard(index: index, count: count, source: .option)
    }

    /// The shard this process is: from `option` (`--shard INDEX/COUNT`), else from the
    /// scheduler's variables in `environment` (see the type's documentation), else 0/1.
    ///
    /// A pure function: the environment is passed in (`ProcessInfo`'s, or a test's).
    ///
    /// - Parameters:
    ///   - option: `--shard`'s value, if given.
    ///   - count: `--shard-count`'s value, if given (the count with `JOB_COMPLETION_INDEX`).
    ///   - environment: The process's environment variables.
    /// - Throws: ``SwarmShardError`` naming the option or variable that is wrong.
    public static func resolve(option: String?, count: Int?, environment: [String: String]) throws(SwarmShardError) -> SwarmShard {
        if let count { try checkCount(count, name: countOptionName, value: "\(count)") }
        let environmentCount = try environment[shardCountVariable].map { (text) throws(SwarmShardError) in
            let value = try number(Substring(text), name: shardCountVariable, whole: text)
            try checkCount(value, name: shardCountVariable, value: text)
            return value
        }
        if let count, let environmentCount, count != environmentCount {
            throw SwarmShardError(countOptionName, "\(count)", "disagrees with \(shardCountVariable)=\(environmentCount): give one, or the same count")
        }
        let parsed = try option.map { (text) throws(SwarmShardError) in try parse(text) }
        let scheduler = try schedulerShard(environment, count: count ?? environmentCount ?? parsed?.count)
        if let option, let shard = parsed {
            if let count, count != shard.count {
                throw SwarmShardError(optionName, option, "disagrees with \(countOptionName) \(count): give one of them")
            }
            if let environmentCount, environmentCount != shard.count {
                throw SwarmShardError(optionName, option, "disagrees with \(shardCountVariable)=\(environmentCount): unset it or give the same count")
            }
            if let scheduler, scheduler != SwarmShard(checkedIndex: shard.index, count: shard.count, source: scheduler.source) {
                throw SwarmShardError(optionName, option, "disagrees with the scheduler's \(scheduler.source.variableName) (shard \(scheduler)): leave --shard out under a scheduler")
            }
            return shard
        }
        if let scheduler { return scheduler }
        if let count {
            throw SwarmShardError(countOptionName, "\(count)", "gives a count but no index: add --shard INDEX/\(count), or run under an Indexed Job (\(kubernetesIndexVariable))")
        }
        if let environmentCount {
            throw SwarmShardError(shardCountVariable, "\(environmentCount)", "is set but \(kubernetesIndexVariable) is not: run under an Indexed Job, or give --shard INDEX/\(environmentCount)")
        }
        return .single
    }

    /// The shard a Kubernetes Indexed Job or a Slurm job array says, if any.
    private static func schedulerShard(_ environment: [String: String], count: Int?) throws(SwarmShardError) -> SwarmShard? {
        if let text = environment[kubernetesIndexVariable] {
            let index = try number(Substring(text), name: kubernetesIndexVariable, whole: text)
            guard let count else {
                throw SwarmShardError(kubernetesIndexVariable, text, "is set but the shard count is not: set \(shardCountVariable) to the Job's completions, or give --shard-count N")
            }
            guard index < count else {
                throw SwarmShardError(kubernetesIndexVariable, text, "is not below the shard count \(count): set \(shardCountVariable) to the Job's completions")
            }
            return SwarmShard(checkedIndex: index, count: count, source: .kubernetes)
        }
        guard let text = environment[slurmTaskVariable] else { return nil }
        let task = try number(Substring(text), name: slurmTaskVariable, whole: text)
        guard let countText = environment[slurmCountVariable] else {
            throw SwarmShardError(slurmTaskVariable, text, "is set but \(slurmCountVariable) is not: submit the shards as one job array (sbatch --array=0-N)")
        }
        let slurmCount = try number(Substring(countText), name: slurmCountVariable, whole: countText)
        try checkCount(slurmCount, name: slurmCountVariable, value: countText)
        let minimum = try environment[slurmMinimumVariable].map { (text) throws(SwarmShardError) in
            try number(Substring(text), name: slurmMinimumVariable, whole: text)
        } ?? 0
        let step = try environment[slurmStepVariable].map { (text) throws(SwarmShardError) in
            try number(Substring(text), name: slurmStepVariable, whole: text)
        } ?? 1
        guard step > 0 else { throw SwarmShardError(slurmStepVariable, "\(step)", "must be at least 1") }
        guard task >= minimum, (task - minimum) % step == 0 else {
            throw SwarmShardError(slurmTaskVariable, text, "is not on the array's range from \(minimum) in steps of \(step)")
        }
        let index = (task - minimum) / step
        guard index < slurmCount else {
            throw SwarmShardError(slurmTaskVariable, text, "is shard \(index) of an array of \(slurmCount) tasks from \(minimum): an array with gaps cannot be shards; submit --array=0-\(slurmCount - 1)")
        }
        if let count, count != slurmCount {
            throw SwarmShardError(slurmCountVariable, countText, "disagrees with the shard count \(count) given: leave \(countOptionName) and \(shardCountVariable) out under Slurm")
        }
        return SwarmShard(checkedIndex: index, count: slurmCount, source: .slurm)
    }

    /// The viewers this shard runs, as global viewer numbers out of `total` (0-based): one
    /// contiguous block; the first `total % count` shards run one viewer more than the others,
    /// so the sizes differ by at most one and every viewer is in exactly one shard. Empty when
    /// `total` is below the shard count's share (or not positive).
    ///
    /// - Complexity: O(1).
    public func viewers(of total: Int) -> Range<Int> {
        let total = Swift.max(0, total)
        let base = total / count
        let extra = total % count
        let start = index * base + Swift.min(index, extra)
        return start..<(start + base + (index < extra ? 1 : 0))
    }

    /// `text` as a plain decimal number (digits only, at most 9 of them).
    private static func number(_ text: Substring, name: String, whole: String) throws(SwarmShardError) -> Int {
        guard !text.isEmpty else { throw SwarmShardError(name, whole, "is empty where a number belongs") }
        guard text.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            let what = text.hasPrefix("-") ? "is negative" : "is not a plain decimal number"
            throw SwarmShardError(name, whole, "\(what): shard indexes and counts are whole numbers from 0")
        }
        guard text.count <= 9, let value = Int(text) else {
            throw SwarmShardError(name, whole, "is too large: at most \(maximumCount) shards")
        }
        return value
    }

    private static func checkCount(_ count: Int, name: String, value: String) throws(SwarmShardError) {
        guard count >= 1 else { throw SwarmShardError(name, value, "has a shard count of \(count): a run has at least 1 shard") }
        guard count <= maximumCount else { throw SwarmShardError(name, value, "has a shard count of \(count): at most \(maximumCount)") }
    }
}

extension SwarmShard.Source {
    /// The option or variable the index is read from, for messages.
    var variableName: String {
        switch self {
        case .option, .single: SwarmShard.optionName
        case .kubernetes: SwarmShard.kubernetesIndexVariable
        case .slurm: SwarmShard.slurmTaskVariable
        }
    }
}

/// A shard that cannot be worked out: which option or variable is wrong, its value and why.
///
/// ```swift
/// // SwarmShardError: JOB_COMPLETION_INDEX=3 is not below the shard count 3: set PLAYOUT_SHARD_COUNT to the Job's completions
/// ```
public struct SwarmShardError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The option (`--shard`, `--shard-count`) or environment variable (`JOB_COMPLETION_INDEX`,
    /// `PLAYOUT_SHARD_COUNT`, `SLURM_ARRAY_TASK_ID` …) that is wrong.
    public var variable: String
    /// Its value as given.
    public var value: String
    /// What is wrong with it and what to do.
    public var reason: String

    /// An error about `variable`'s `value`.
    public init(_ variable: String, _ value: String, _ reason: String) {
        self.variable = variable
        self.value = String(value.prefix(64))
        self.reason = reason
    }

    /// `VARIABLE=VALUE …` (an option as `--shard 'VALUE' …`) and the reason.
    public var description: String {
        variable.hasPrefix("--") ? "\(variable) '\(value)' \(reason)" : "\(variable)=\(value) \(reason)"
    }
}
