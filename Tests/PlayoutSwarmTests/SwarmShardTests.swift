import PlayoutCore
import PlayoutSwarm
import Testing

@Suite("SwarmShard")
struct SwarmShardTests {
    @Test("--shard INDEX/COUNT is 0-based and wins over nothing")
    func option() throws {
        let shard = try SwarmShard.resolve(option: "2/3", count: nil, environment: [:])
        #expect(shard.index == 2 && shard.count == 3 && shard.source == .option)
        #expect(shard.description == "2/3")
        #expect(try SwarmShard.resolve(option: nil, count: nil, environment: [:]) == .single)
        #expect(SwarmShard.single.viewers(of: 7) == 0..<7)
    }

    @Test("Kubernetes: JOB_COMPLETION_INDEX with PLAYOUT_SHARD_COUNT or --shard-count")
    func kubernetes() throws {
        let shard = try SwarmShard.resolve(option: nil, count: nil, environment: ["JOB_COMPLETION_INDEX": "1", "PLAYOUT_SHARD_COUNT": "4"])
        #expect(shard.index == 1 && shard.count == 4 && shard.source == .kubernetes)
        let counted = try SwarmShard.resolve(option: nil, count: 4, environment: ["JOB_COMPLETION_INDEX": "3"])
        #expect(counted.index == 3 && counted.count == 4)
        // Both counts given and equal are fine; --shard that agrees with the index is fine.
        #expect(try SwarmShard.resolve(option: nil, count: 4, environment: ["JOB_COMPLETION_INDEX": "0", "PLAYOUT_SHARD_COUNT": "4"]).count == 4)
        #expect(try SwarmShard.resolve(option: "3/4", count: nil, environment: ["JOB_COMPLETION_INDEX": "3", "PLAYOUT_SHARD_COUNT": "4"]).index == 3)
    }

    @Test("Slurm: SLURM_ARRAY_TASK_ID counted from SLURM_ARRAY_TASK_MIN in steps of SLURM_ARRAY_TASK_STEP")
    func slurm() throws {
        let zero = try SwarmShard.resolve(option: nil, count: nil, environment: ["SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "0"])
        #expect(zero.index == 2 && zero.count == 3 && zero.source == .slurm)
        let fromOne = try SwarmShard.resolve(option: nil, count: nil, environment: ["SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "1"])
        #expect(fromOne.index == 0)
        let stepped = try SwarmShard.resolve(
            option: nil, count: nil,
            environment: ["SLURM_ARRAY_TASK_ID": "14", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "10", "SLURM_ARRAY_TASK_STEP": "2"])
        #expect(stepped.index == 2 && stepped.count == 4)
        // Kubernetes' index is read first when both are set.
        let both = try SwarmShard.resolve(option: nil, count: nil,
                                          environment: ["JOB_COMPLETION_INDEX": "0", "PLAYOUT_SHARD_COUNT": "2", "SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "2"])
        #expect(both.source == .kubernetes && both.index == 0)
    }

    /// Hostile values: each a typed error naming the option or variable at fault.
    static let hostile: [(option: String?, count: Int?, environment: [String: String], variable: String, says: String)] = [
        ("3/3", nil, [:], "--shard", "from 0 to 2"),
        ("-1/3", nil, [:], "--shard", "negative"),
        ("1/0", nil, [:], "--shard", "at least 1"),
        ("a/3", nil, [:], "--shard", "not a plain decimal"),
        ("1/3/4", nil, [:], "--shard", "INDEX/COUNT"),
        ("2", nil, [:], "--shard", "INDEX/COUNT"),
        ("/", nil, [:], "--shard", "empty"),
        ("1/99999999999999999999", nil, [:], "--shard", "too large"),
        ("1/200000", nil, [:], "--shard", "at most 100000"),
        (" 1/3", nil, [:], "--shard", "not a plain decimal"),
        ("１/3", nil, [:], "--shard", "not a plain decimal"),
        ("1/3", 4, [:], "--shard", "disagrees with --shard-count"),
        ("1/3", nil, ["PLAYOUT_SHARD_COUNT": "4"], "--shard", "disagrees with PLAYOUT_SHARD_COUNT"),
        ("1/3", nil, ["JOB_COMPLETION_INDEX": "2", "PLAYOUT_SHARD_COUNT": "3"], "--shard", "disagrees with the scheduler's JOB_COMPLETION_INDEX"),
        ("1/3", nil, ["SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "3"], "--shard", "disagrees with the scheduler's SLURM_ARRAY_TASK_ID"),
        (nil, nil, ["JOB_COMPLETION_INDEX": "1"], "JOB_COMPLETION_INDEX", "PLAYOUT_SHARD_COUNT"),
        (nil, nil, ["JOB_COMPLETION_INDEX": "3", "PLAYOUT_SHARD_COUNT": "3"], "JOB_COMPLETION_INDEX", "not below the shard count 3"),
        (nil, nil, ["JOB_COMPLETION_INDEX": "x", "PLAYOUT_SHARD_COUNT": "3"], "JOB_COMPLETION_INDEX", "not a plain decimal"),
        (nil, nil, ["JOB_COMPLETION_INDEX": "", "PLAYOUT_SHARD_COUNT": "3"], "JOB_COMPLETION_INDEX", "empty"),
        (nil, nil, ["JOB_COMPLETION_INDEX": "1", "PLAYOUT_SHARD_COUNT": "0"], "PLAYOUT_SHARD_COUNT", "at least 1"),
        (nil, nil, ["JOB_COMPLETION_INDEX": "1", "PLAYOUT_SHARD_COUNT": "-2"], "PLAYOUT_SHARD_COUNT", "negative"),
        (nil, 3, ["JOB_COMPLETION_INDEX": "1", "PLAYOUT_SHARD_COUNT": "4"], "--shard-count", "disagrees with PLAYOUT_SHARD_COUNT"),
        (nil, 0, ["JOB_COMPLETION_INDEX": "0"], "--shard-count", "at least 1"),
        (nil, 3, [:], "--shard-count", "no index"),
        (nil, nil, ["PLAYOUT_SHARD_COUNT": "3"], "PLAYOUT_SHARD_COUNT", "JOB_COMPLETION_INDEX is not"),
        (nil, nil, ["SLURM_ARRAY_TASK_ID": "1"], "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT is not"),
        (nil, nil, ["SLURM_ARRAY_TASK_ID": "7", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "0"], "SLURM_ARRAY_TASK_ID", "array with gaps"),
        (nil, nil, ["SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "1"], "SLURM_ARRAY_TASK_ID", "not on the array's range"),
        (nil, nil, ["SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_STEP": "2"], "SLURM_ARRAY_TASK_ID", "steps of 2"),
        (nil, nil, ["SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_STEP": "0"], "SLURM_ARRAY_TASK_STEP", "at least 1"),
        (nil, nil, ["SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "zero"], "SLURM_ARRAY_TASK_COUNT", "not a plain decimal"),
        (nil, nil, ["SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "0"], "SLURM_ARRAY_TASK_COUNT", "at least 1"),
        (nil, nil, ["SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "-1"], "SLURM_ARRAY_TASK_MIN", "negative"),
        (nil, 2, ["SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "3"], "SLURM_ARRAY_TASK_COUNT", "disagrees with the shard count 2"),
        (nil, nil, ["SLURM_ARRAY_TASK_ID": "4294967296000", "SLURM_ARRAY_TASK_COUNT": "3"], "SLURM_ARRAY_TASK_ID", "too large"),
    ]

    @Test("hostile options and variables are typed errors naming the variable", arguments: 0..<hostile.count)
    func hostileValues(_ index: Int) {
        let item = Self.hostile[index]
        #expect {
            _ = try SwarmShard.resolve(option: item.option, count: item.count, environment: item.environment)
        } throws: { error in
            guard let error = error as? SwarmShardError else { return false }
            let ok = error.variable == item.variable && error.description.contains(item.says)
            if !ok { print("case \(index): \(error.variable): \(error)") }
            return ok
        }
    }

    @Test("viewers(of:): contiguous blocks of global numbers, sizes within one, every viewer in exactly one shard")
    func partition() throws {
        func check(total: Int, count: Int) throws {
            var next = 0
            var sizes: [Int] = []
            for index in 0..<count {
                let range = try SwarmShard(index: index, count: count).viewers(of: total)
                #expect(range.lowerBound == next, "total \(total) count \(count) shard \(index): \(range) does not start at \(next)")
                next = range.upperBound
                sizes.append(range.count)
            }
            #expect(next == total, "total \(total) count \(count): shards end at \(next)")
            #expect((sizes.max() ?? 0) - (sizes.min() ?? 0) <= 1, "total \(total) count \(count): sizes \(sizes)")
        }
        // Every small case, then seeded random large ones.
        for total in 0...120 {
            for count in 1...40 { try check(total: total, count: count) }
        }
        var generator = SeededRandomNumberGenerator(seed: 0x5AA2_D5)
        for _ in 0..<300 {
            try check(total: Int.random(in: 0...2_000_000, using: &generator), count: Int.random(in: 1...300, using: &generator))
        }
        try check(total: 1_000_000_000, count: SwarmShard.maximumCount)
        #expect(try SwarmShard(index: 0, count: 3).viewers(of: -5) == 0..<0)
        #expect(try SwarmShard(index: 2, count: 3).viewers(of: 100) == 67..<100)
        #expect(try SwarmShard(index: 0, count: 3).viewers(of: 100) == 0..<34)
    }

    @Test("init(index:count:) refuses an index outside 0..<count and a count outside 1...maximumCount")
    func initializer() {
        #expect(throws: SwarmShardError.self) { try SwarmShard(index: 3, count: 3) }
        #expect(throws: SwarmShardError.self) { try SwarmShard(index: -1, count: 3) }
        #expect(throws: SwarmShardError.self) { try SwarmShard(index: 0, count: 0) }
        #expect(throws: SwarmShardError.self) { try SwarmShard(index: 0, count: SwarmShard.maximumCount + 1) }
    }
}
