// TEMPORARY stand-in until the shards branch merges (its SwarmShard replaces this file).
public struct SwarmShard: Equatable, Sendable {
    public var index: Int
    public var count: Int

    public static func resolve(option: String?, count: Int?, environment: [String: String]) throws -> SwarmShard {
        guard let option else { return SwarmShard(index: 0, count: 1) }
        let parts = option.split(separator: "/")
        guard parts.count == 2, let index = Int(parts[0]), let count = Int(parts[1]), count >= 1, index >= 0, index < count else {
            throw SwarmShardError(text: "--shard \(option): INDEX/COUNT, e.g. 0/3")
        }
        return SwarmShard(index: index, count: count)
    }

    public func viewers(of total: Int) -> Range<Int> {
        (total * index / count)..<(total * (index + 1) / count)
    }
}

public struct SwarmShardError: Error, CustomStringConvertible {
    public var text: String
    public var description: String { text }
}
