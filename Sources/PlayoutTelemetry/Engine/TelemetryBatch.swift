/// The records of one delivery, as the engine built them: parts of the engine's own arrays,
/// passed from the engine's thread through a backend's queue to the backend without copying a
/// record (a copy retains every string and array a record holds, on a second thread, which cost
/// more than building the record).
///
/// A collection of ``TelemetryRecord``s in emission order; ``records`` gives them as one array
/// (the engine's own, uncopied, when the batch is one whole array of it).
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

    /// One array of the engine and the range of it in this batch (never empty).
    struct Part: Sendable {
        var array: [TelemetryRecord]
        var range: Range<Int>
    }

    let parts: [Part]
    /// The number of records (O(1)).
    public let count: Int

    /// A batch of `records` (kept as they are, not copied).
    public init(_ records: [TelemetryRecord]) {
        self.init(parts: records.isEmpty ? [] : [Part(array: records, range: records.indices)])
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
        parts[position.part].array[position.offset]
    }

    /// The records as one array: the engine's own array, uncopied, when the batch is one whole
    /// array of it; otherwise a copy.
    public var records: [TelemetryRecord] {
        if parts.count == 1, parts[0].range == parts[0].array.indices { return parts[0].array }
        var records: [TelemetryRecord] = []
        records.reserveCapacity(count)
        for part in parts { records.append(contentsOf: part.array[part.range]) }
        return records
    }

    public static func == (lhs: TelemetryBatch, rhs: TelemetryBatch) -> Bool {
        lhs.count == rhs.count && lhs.elementsEqual(rhs)
    }

    public var description: String { "\(records)" }
}
