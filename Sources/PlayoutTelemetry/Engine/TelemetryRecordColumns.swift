import Synchronization

/// What records of one shape share: kind, name and field names and types. The engine stores a
/// record as its shape's index and its values only (8 bytes each), so records of the same event
/// share one copy of their names.
final class TelemetryShape: Sendable {
    let kind: TelemetryRecord.Kind
    let name: String
    let vocabulary: TelemetryVocabulary
    let names: [String]
    let types: [TelemetryValueType]

    /// The position of each field the metric calculator reads (by ``TelemetryKPIField`` raw value;
    /// -1: none), found once per shape rather than by comparing names for every record; kept
    /// inline (no second allocation per shape).
    let kpiOffsets: InlineArray<9, Int32>  // one per TelemetryKPIField case

    init(kind: TelemetryRecord.Kind, name: String, vocabulary: TelemetryVocabulary, names: [String], types: [TelemetryValueType]) {
        self.kind = kind
        self.name = name
        self.vocabulary = vocabulary
        self.names = names
        self.types = types
        kpiOffsets = InlineArray { index in
            Int32(names.firstIndex(of: TelemetryKPIField.allCases[index].name) ?? -1)
        }
    }
}

/// The fields the metric calculator reads; the raw value is the case's position in ``allCases``.
enum TelemetryKPIField: Int, CaseIterable {
    case framesDropped, framesRendered, endToEndLatency, cause, duration, bitrate, delay, severity, renditionBitrate

    /// The field's name in a record: the case's own name.
    var name: String { Self.names[rawValue] }
    private static let names = allCases.map { "\($0)" }
}

/// A ``TelemetryValue``'s case, kept in the shape so a stored value is its 8-byte payload alone.
enum TelemetryValueType: UInt8, Sendable {
    case int, double, string, bool
}

/// One record in ``TelemetryRecordColumns``: its shape, session, values and times (40 bytes).
struct TelemetryColumnEntry: Sendable {
    var shape: UInt32
    var session: UInt32
    var valueStart: Int
    var seq: UInt64
    var monotonicNanoseconds: Int64
    var wallTimeNanoseconds: Int64
}

/// Records as the engine builds them: one entry and one 8-byte value per field each, the names
/// kept once per shape, the session ids and the tags once per block. A ``TelemetryRecord`` is
/// built only when a backend reads one (``subscript(_:)``).
///
/// Storing a record this way takes ≈ 90 bytes instead of ≈ 330 (a record struct plus an array of
/// named fields): on this project's VM first touching fresh memory costs ≈ 0.4 ns a byte, which
/// was most of the engine's time per record.
final class TelemetryRecordColumns: Sendable {
    let entries: [TelemetryColumnEntry]
    let values: [UInt64]
    let strings: [String]
    let shapes: [TelemetryShape]
    let sessions: [String]
    /// The tags of each session's tracker (empty for most), after ``tags``.
    let sessionTags: [[TelemetryField]]
    let tags: [TelemetryField]

    init(_ builder: consuming TelemetryColumnsBuilder, tags: [TelemetryField]) {
        entries = builder.entries
        values = builder.values
        strings = builder.strings
        shapes = builder.shapes
        sessions = builder.sessions
        sessionTags = builder.sessionTags
        self.tags = tags
    }

    var count: Int { entries.count }

    /// The record at `index`, built.
    subscript(index: Int) -> TelemetryRecord {
        var record = TelemetryColumnsBuilder.record(
            entries[index], shapes: shapes, values: values, strings: strings, sessions: sessions)
        let own = sessionTags[Int(entries[index].session)]
        record.tags = own.isEmpty ? tags : tags + own
        return record
    }
}

/// Builds ``TelemetryRecordColumns`` a record at a time without allocating per record: the session
/// hub begins a record, appends its fields and ends it; the builder matches the field names
/// against the shape the last record of that name had (identical strings compare in one step)
/// and adds a shape only when they differ. A hub that knows a record has the shape of one it
/// wrote before into this builder (same ``id``) begins it with that shape and appends values only.
struct TelemetryColumnsBuilder: Sendable {
    private static let nextID = Atomic<Int>(1)

    /// Unique to this builder (a hub's remembered shape indices are valid for this id only).
    let id = TelemetryColumnsBuilder.nextID.wrappingAdd(1, ordering: .relaxed).oldValue

    private(set) var entries: [TelemetryColumnEntry] = []
    private(set) var values: [UInt64] = []
    private(set) var strings: [String] = []
    private(set) var shapes: [TelemetryShape] = []
    private(set) var sessions: [String] = []
    private(set) var sessionTags: [[TelemetryField]] = []

    /// The shape the last record of each vocabulary name used (index + 1; 0: none yet).
    private var lastShape = [Int](repeating: 0, count: TelemetryVocabulary.allCases.count)
    /// The shapes of each record name, oldest first (a new shape is looked for among the last
    /// few, so a stream of ever-different fields costs no quadratic search).
    private var shapesByName: [String: [Int]] = [:]
    // The open record.
    private var open: (kind: TelemetryRecord.Kind, name: String, vocabulary: TelemetryVocabulary)?
    private var candidate = -1  // the index of the shape the open record is expected to have
    private var fieldCount = 0
    private var divergedNames: [String] = []  // the names so far, once they left the candidate
    private var divergedTypes: [TelemetryValueType] = []
    private var diverged = false
    private var knownShape = false  // begun with a shape: values only

    init(reservingCapacity records: Int = 0, valuesPerRecord: Int = 8) {
        guard records > 0 else { return }
        entries.reserveCapacity(records)
        values.reserveCapacity(records * valuesPerRecord)
    }

    var count: Int { entries.count }

    /// Adds a session id, its records tagged `tags` too; its index is what records of that
    /// session give ``beginRecord``.
    mutating func addSession(_ id: String, tags: [TelemetryField] = []) -> UInt32 {
        sessions.append(id)
        sessionTags.append(tags)
        return UInt32(sessions.count - 1)
    }

    /// Begins a record; its fields follow with ``append(_:_:)``, then ``endRecord()``.
    mutating func beginRecord(
        kind: TelemetryRecord.Kind, name: String, vocabulary: TelemetryVocabulary, session: UInt32, seq: UInt64,
        monotonicNanoseconds: Int64, wallTimeNanoseconds: Int64
    ) {
        open = (kind, name, vocabulary)
        fieldCount = 0
        diverged = false
        knownShape = false
        candidate = -1
        if vocabulary != .other {
            let last = lastShape[Int(vocabulary.rawValue)]
            if last > 0, shapes[last - 1].kind == kind { candidate = last - 1 }
        } else if let index = shapesByName[name]?.last(where: { shapes[$0].kind == kind }) {
            candidate = index
        }
        entries.append(TelemetryColumnEntry(
            shape: 0, session: session, valueStart: values.count, seq: seq,
            monotonicNanoseconds: monotonicNanoseconds, wallTimeNanoseconds: wallTimeNanoseconds))
    }

    /// Begins a record of shape `shape` (an index ``lastShapeIndex`` gave for a record written
    /// into this builder); its values follow with ``append(_:)`` in the shape's order.
    mutating func beginRecord(
        shape: Int, session: UInt32, seq: UInt64, monotonicNanoseconds: Int64, wallTimeNanoseconds: Int64
    ) {
        knownShape = true
        entries.append(TelemetryColumnEntry(
            shape: UInt32(shape), session: session, valueStart: values.count, seq: seq,
            monotonicNanoseconds: monotonicNanoseconds, wallTimeNanoseconds: wallTimeNanoseconds))
    }

    /// The shape of the last record ended.
    var lastShapeIndex: Int { Int(entries[entries.count - 1].shape) }

    /// Appends a value to a record begun with its shape.
    @inline(__always)
    mutating func append(_ value: TelemetryValue) {
        values.append(store(value).1)
    }

    /// Appends a field to the open record.
    @inline(__always)
    mutating func append(_ name: String, _ value: TelemetryValue) {
        let (type, payload) = store(value)
        values.append(payload)
        if knownShape { return }
        if !diverged, candidate >= 0 {
            let shape = shapes[candidate]
            if fieldCount < shape.names.count, shape.types[fieldCount] == type, shape.names[fieldCount] == name {
                fieldCount += 1
                return
            }
        }
        divergeIfNeeded()
        divergedNames.append(name)
        divergedTypes.append(type)
        fieldCount += 1
    }

    /// Ends the open record: it takes the candidate shape when every field matched it.
    mutating func endRecord() {
        if knownShape {
            knownShape = false
            return
        }
        guard let (kind, name, vocabulary) = open else { return }
        open = nil
        let index: Int
        if !diverged, candidate >= 0, fieldCount == shapes[candidate].names.count {
            index = candidate
        } else {
            divergeIfNeeded()
            index = shapeIndex(kind: kind, name: name, vocabulary: vocabulary, names: divergedNames, types: divergedTypes)
            divergedNames.removeAll(keepingCapacity: true)
            divergedTypes.removeAll(keepingCapacity: true)
        }
        entries[entries.count - 1].shape = UInt32(index)
        if vocabulary != .other { lastShape[Int(vocabulary.rawValue)] = index + 1 }
    }

    /// Adds `fields` to record `index` (attribute getters, a `viewend`'s KPIs): its values move
    /// to the end, with the new ones, under a shape with the added names.
    mutating func append(_ fields: [TelemetryField], toRecord index: Int) {
        guard !fields.isEmpty else { return }
        let entry = entries[index]
        let shape = shapes[Int(entry.shape)]
        let start = values.count
        for offset in 0..<shape.names.count { values.append(values[entry.valueStart + offset]) }
        var names = shape.names
        var types = shape.types
        for field in fields {
            let (type, payload) = store(field.value)
            values.append(payload)
            names.append(field.name)
            types.append(type)
        }
        let shapeIndex = shapeIndex(kind: shape.kind, name: shape.name, vocabulary: shape.vocabulary, names: names, types: types)
        entries[index].shape = UInt32(shapeIndex)
        entries[index].valueStart = start
    }

    /// Calls `body` with views of the records (for the metric calculator) that retain nothing
    /// they read: valid inside `body` only, while the builder is not changed.
    func withViews<Result>(_ body: (TelemetryColumnViews) -> Result) -> Result {
        entries.withUnsafeBufferPointer { entries in
            values.withUnsafeBufferPointer { values in
                strings.withUnsafeBufferPointer { strings in
                    shapes.withUnsafeBufferPointer { shapes in
                        body(TelemetryColumnViews(entries: entries, values: values, strings: strings, shapes: shapes))
                    }
                }
            }
        }
    }

    /// Whether shape `index` begins with fields of these names and value types.
    func shape(_ index: Int, beginsWith fields: [TelemetryField]) -> Bool {
        let shape = shapes[index]
        guard fields.count <= shape.names.count else { return false }
        for (offset, field) in fields.enumerated() {
            guard shape.types[offset] == Self.type(of: field.value), shape.names[offset] == field.name else { return false }
        }
        return true
    }

    /// Whether field `offset` of shape `index` holds values of `value`'s type.
    func shape(_ index: Int, hasTypeOf value: TelemetryValue, at offset: Int) -> Bool {
        let shape = shapes[index]
        return offset < shape.types.count && shape.types[offset] == Self.type(of: value)
    }

    /// The name of record `index`.
    func name(ofRecord index: Int) -> String { shapes[Int(entries[index].shape)].name }

    /// Record `index`, built (without tags).
    func record(_ index: Int) -> TelemetryRecord {
        Self.record(entries[index], shapes: shapes, values: values, strings: strings, sessions: sessions)
    }

    static func record(
        _ entry: TelemetryColumnEntry, shapes: [TelemetryShape], values: [UInt64], strings: [String], sessions: [String]
    ) -> TelemetryRecord {
        let shape = shapes[Int(entry.shape)]
        var fields: [TelemetryField] = []
        fields.reserveCapacity(shape.names.count)
        for offset in 0..<shape.names.count {
            let value = load(shape.types[offset], values[entry.valueStart + offset], strings: strings)
            fields.append(TelemetryField(shape.names[offset], value))
        }
        return TelemetryRecord(
            sessionId: sessions[Int(entry.session)], seq: entry.seq, monotonic: .nanoseconds(entry.monotonicNanoseconds),
            wallTimeNanoseconds: entry.wallTimeNanoseconds, kind: shape.kind, name: shape.name, vocabulary: shape.vocabulary,
            fields: fields)
    }

    @inline(__always)
    private mutating func store(_ value: TelemetryValue) -> (TelemetryValueType, UInt64) {
        switch value {
        case .int(let number): return (.int, UInt64(bitPattern: number))
        case .double(let number): return (.double, number.bitPattern)
        case .bool(let flag): return (.bool, flag ? 1 : 0)
        case .string(let text):
            strings.append(text)
            return (.string, UInt64(strings.count - 1))
        }
    }

    @inline(__always)
    static func type(of value: TelemetryValue) -> TelemetryValueType {
        switch value {
        case .int: .int
        case .double: .double
        case .bool: .bool
        case .string: .string
        }
    }

    @inline(__always)
    static func load(_ type: TelemetryValueType, _ payload: UInt64, strings: some Collection<String>) -> TelemetryValue {
        switch type {
        case .int: .int(Int64(bitPattern: payload))
        case .double: .double(Double(bitPattern: payload))
        case .bool: .bool(payload != 0)
        case .string: .string(strings[strings.index(strings.startIndex, offsetBy: Int(payload))])
        }
    }

    /// The names and types so far, taken from the candidate when the record leaves it.
    private mutating func divergeIfNeeded() {
        guard !diverged else { return }
        diverged = true
        divergedNames.removeAll(keepingCapacity: true)
        divergedTypes.removeAll(keepingCapacity: true)
        if candidate >= 0, fieldCount > 0 {
            divergedNames.append(contentsOf: shapes[candidate].names[..<fieldCount])
            divergedTypes.append(contentsOf: shapes[candidate].types[..<fieldCount])
        }
    }

    /// The index of the shape with these names and types, added when missing.
    private mutating func shapeIndex(
        kind: TelemetryRecord.Kind, name: String, vocabulary: TelemetryVocabulary, names: [String], types: [TelemetryValueType]
    ) -> Int {
        let sameName = shapesByName[name] ?? []
        if let index = sameName.suffix(16).last(where: {
            shapes[$0].kind == kind && shapes[$0].types == types && shapes[$0].names == names
        }) {
            return index
        }
        shapes.append(TelemetryShape(kind: kind, name: name, vocabulary: vocabulary, names: names, types: types))
        shapesByName[name, default: []].append(shapes.count - 1)
        return shapes.count - 1
    }
}

/// The records of a ``TelemetryColumnsBuilder``, read in place (``TelemetryColumnsBuilder/withViews(_:)``).
struct TelemetryColumnViews {
    let entries: UnsafeBufferPointer<TelemetryColumnEntry>
    let values: UnsafeBufferPointer<UInt64>
    let strings: UnsafeBufferPointer<String>
    let shapes: UnsafeBufferPointer<TelemetryShape>

    subscript(index: Int) -> TelemetryColumnView {
        let entry = entries[index]
        // The shape read as an unmanaged reference (the same single pointer): taking it out of
        // the buffer as a class reference would retain and release it for every record.
        return TelemetryColumnView(
            entry: entry, shape: shapes.withMemoryRebound(to: Unmanaged<TelemetryShape>.self) { $0[Int(entry.shape)] },
            values: values, strings: strings)
    }
}

/// One record of a ``TelemetryColumnsBuilder`` as the metric calculator reads it, retaining
/// nothing (see ``TelemetryColumnsBuilder/withViews(_:)``).
struct TelemetryColumnView: TelemetryRecordReading {
    let entry: TelemetryColumnEntry
    let shape: Unmanaged<TelemetryShape>
    let values: UnsafeBufferPointer<UInt64>
    let strings: UnsafeBufferPointer<String>

    var kind: TelemetryRecord.Kind { shape._withUnsafeGuaranteedRef(\.kind) }
    var vocabulary: TelemetryVocabulary { shape._withUnsafeGuaranteedRef(\.vocabulary) }
    var monotonic: Duration { .nanoseconds(entry.monotonicNanoseconds) }

    subscript(kpi field: TelemetryKPIField) -> TelemetryValue? {
        shape._withUnsafeGuaranteedRef { shape in
            let offset = Int(shape.kpiOffsets[field.rawValue])
            guard offset >= 0 else { return nil }
            return TelemetryColumnsBuilder.load(shape.types[offset], values[entry.valueStart + offset], strings: strings)
        }
    }
}

/// What the metric calculator reads of a record: a ``TelemetryRecord`` or a column view.
protocol TelemetryRecordReading {
    var kind: TelemetryRecord.Kind { get }
    var vocabulary: TelemetryVocabulary { get }
    var monotonic: Duration { get }
    /// The first field of that name, if any.
    subscript(kpi field: TelemetryKPIField) -> TelemetryValue? { get }
}

extension TelemetryRecord: TelemetryRecordReading {
    subscript(kpi field: TelemetryKPIField) -> TelemetryValue? { self[field: field.name] }
}

/// The records a backend's queue holds: an array (records handed in by a caller) or the engine's
/// columns.
enum TelemetryRecordBlock: Sendable {
    case records([TelemetryRecord])
    case columns(TelemetryRecordColumns)

    var count: Int {
        switch self {
        case .records(let records): records.count
        case .columns(let columns): columns.count
        }
    }

    subscript(index: Int) -> TelemetryRecord {
        switch self {
        case .records(let records): records[index]
        case .columns(let columns): columns[index]
        }
    }
}
