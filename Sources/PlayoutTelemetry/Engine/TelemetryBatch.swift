/// The records of one delivery, as the engine built them: parts of the engine's own compact
/// blocks of records, passed from the engine's thread through a backend's queue to the backend
/// without copying a record. A ``TelemetryRecord`` is built when it is read (subscript,
/// iteration, ``records``): a backend that keeps the batch, like the in-memory one, builds none
/// until a test reads them.
///
/// A collection of ``TelemetryRecord``s in emission order; ``records`` gives them as one array
/// (the caller's own array, uncopied, when the batch is one whole array handed in).
///
/// ```swift
/// func deliver(_ batch: TelemetryBatch) throws(TelemetryDeliveryError) {
///     for record in batch where record.kind == .event { count(record.name) }
/// }
/// ```
public struct TelemetryBatch: Collection, Sendable, Equatable, ExpressibleByArrayLiteral, CustomStringConvertible {
    /// A position: which part, and the index in that part's array.
    public struct Index: Comparable, Sendable {
        let part: Int
        let offset: Int

        public static func < (lhs: Index, rhs: Index) -> Bool {
            (lhs.part, lhs.offset) < (rhs.part, rhs.offset)
        }
    }

    /// One block of records and the range of it in this batch (never empty).
    struct Part: Sendable {
        var block: TelemetryRecordBlock
        var range: Range<Int>
    }

    let parts: [Part]
    /// The number of records (O(1)).
    public let count: Int

    /// A batch of `records` (kept as they are, not copied).
    public init(_ records: [TelemetryRecord]) {
        self.init(parts: records.isEmpty ? [] : [Part(block: .records(records), range: records.indices)])
    }

    /// A batch of the records listed.
    public init(arrayLiteral records: TelemetryRecord...) {
        self.init(records)
    }

    init(parts: [Part]) {
        self.parts = parts
        count = parts.reduce(0) { $0 + $1.range.count }
    }

    public var startIndex: Index { Index(part: 0, offset: parts.first?.range.lowerBound ?? 0) }
    public var endIndex: Index { Index(part: parts.count, offset: 0) }
    public var isEmpty: Bool { count == 0 }

    public func index(after index: Index) -> Index {
        let next = index.offset + 1
        if next < parts[index.part].range.upperBound { return Index(part: index.part, offset: next) }
        let part = index.part + 1
        return Index(part: part, offset: part < parts.count ? parts[part].range.lowerBound : 0)
    }

    public subscript(position: Index) -> TelemetryRecord {
        parts[position.part].block[position.offset]
    }

    /// The records as one array: the array handed in, uncopied, when the batch is one whole
    /// array; otherwise built.
    public var records: [TelemetryRecord] {
        if parts.count == 1, case .records(let array) = parts[0].block, parts[0].range == array.indices { return array }
        var records: [TelemetryRecord] = []
        records.reserveCapacity(count)
        for part in parts {
            switch part.block {
            case .records(let array): records.append(contentsOf: array[part.range])
            case .columns(let columns): for index in part.range { records.append(columns[index]) }
            }
        }
        return records
    }

    public static func == (lhs: TelemetryBatch, rhs: TelemetryBatch) -> Bool {
        lhs.count == rhs.count && lhs.elementsEqual(rhs)
    }

    public var description: String { "\(records)" }
}
