internal import Foundation
internal import StrataSQLite

/// One row's values: attributes in model order, then to-one destination keys, plus the row
/// version they were read at.
///
/// Equality compares the values only: the version is optimistic-locking bookkeeping, and two
/// snapshots with the same values are the same row state whatever version each was read at.
struct RowSnapshot: Sendable, Equatable {
    var attributes: [AttributeValue?]
    var toOnes: [Int64?]
    /// The stored row's `_version` these values were read at (0: never stored).
    var version: Int64 = 0

    init(attributes: [AttributeValue?], toOnes: [Int64?], version: Int64 = 0) {
        self.attributes = attributes
        self.toOnes = toOnes
        self.version = version
    }

    static func == (lhs: RowSnapshot, rhs: RowSnapshot) -> Bool {
        lhs.attributes == rhs.attributes && lhs.toOnes == rhs.toOnes
    }

    /// A new object's values: every default, no relationships.
    init(defaultsOf info: EntityInfo) {
        // Fresh arrays, not a shared defaults row: a new object is written at once, and the
        // copy-on-write of a shared array copies element by element through the enum's value
        // witness (about 1,400 instructions for 16 attributes), where filling with nil and
        // setting the few defaults is a fraction of it. (`reserveCapacity` then appends: the
        // stdlib's `Array(repeating:count:)` and `Array(unsafeUninitializedCapacity:)` allocate
        // through an unspecialised entry point that looks the storage class's metadata up on
        // every call, about 900 instructions against 350; callgrind.)
        var attributes: [AttributeValue?] = []
        attributes.reserveCapacity(info.attributeTypes.count)
        for _ in info.attributeTypes { attributes.append(nil) }
        for (index, value) in info.nonNilDefaults { attributes[index] = value }
        self.attributes = attributes
        var toOnes: [Int64?] = []
        toOnes.reserveCapacity(info.toOnes.count)
        for _ in info.toOnes { toOnes.append(nil) }
        self.toOnes = toOnes
    }

    /// Reads the row the statement is positioned on (columns as in `EntityInfo.selectSQL`):
    /// column 0 is the primary key, the version follows the to-ones.
    init(statement: Statement, info: EntityInfo, firstColumn: Int32 = 1) {
        // Plain loops over the attribute types (no `Attribute` copies: each holds strings whose
        // retains and releases cost more than reading the column).
        // `reserveCapacity` then appends (see `init(defaultsOf:)` for why not an initialiser).
        let types = info.attributeTypes
        var column = firstColumn
        var attributes: [AttributeValue?] = []
        attributes.reserveCapacity(types.count)
        for type in types {
            attributes.append(RowSnapshot.read(statement, column, as: type))
            column += 1
        }
        let toOneCount = info.toOnes.count
        var toOnes: [Int64?] = []
        toOnes.reserveCapacity(toOneCount)
        for _ in 0..<toOneCount {
            toOnes.append(statement.optionalInt64(at: column))
            column += 1
        }
        self.attributes = attributes
        self.toOnes = toOnes
        version = statement.int64(at: column)
    }

    static func read(_ statement: Statement, _ column: Int32, as type: AttributeType) -> AttributeValue? {
        // Numbers and text: one call into SQLite per column (the optional readers ask for the
        // column's type only when the value reads as NULL would), not a type check and a read.
        switch type {
        case .int16: return statement.optionalInt64(at: column).map { .int16(Int16(truncatingIfNeeded: $0)) }
        case .int32: return statement.optionalInt64(at: column).map { .int32(Int32(truncatingIfNeeded: $0)) }
        case .int64: return statement.optionalInt64(at: column).map(AttributeValue.int64)
        case .double: return statement.optionalDouble(at: column).map(AttributeValue.double)
        case .float: return statement.optionalDouble(at: column).map { .float(Float($0)) }
        case .bool: return statement.optionalInt64(at: column).map { .bool($0 != 0) }
        case .string: return statement.optionalString(at: column).map(AttributeValue.string)
        case .date: return statement.optionalDouble(at: column).map { .date(Date(timeIntervalSinceReferenceDate: $0)) }
        case .binary:
            return statement.isNull(at: column) ? nil : .binary(statement.data(at: column))
        case .uuid:
            guard !statement.isNull(at: column) else { return nil }
            let bytes = statement.data(at: column)
            guard bytes.count == 16 else { return nil }
            return .uuid(bytes.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) })
        case .url: return statement.optionalString(at: column).flatMap(URL.init(string:)).map(AttributeValue.url)
        case .decimal:
            return statement.optionalString(at: column).flatMap { Decimal(string: $0, locale: posixLocale) }.map(AttributeValue.decimal)
        }
    }

    /// Binds every column from parameter `first` on.
    func bind(to statement: Statement, from first: Int32) throws {
        var index = first
        for value in attributes {
            try RowSnapshot.bind(value, to: statement, at: index)
            index += 1
        }
        for key in toOnes {
            if let key { try statement.bind(key, at: index) } else { try statement.bindNull(at: index) }
            index += 1
        }
    }

    /// Binds the row from parameter `first` on (as ``bind(to:from:)``) and runs `statement` once,
    /// its text bound in place (``Statement/withText(_:boundAt:_:)``): no copy of a string.
    func execute(_ statement: Statement, from first: Int32) throws {
        try execute(statement, attribute: 0, at: first)
    }

    private func execute(_ statement: Statement, attribute start: Int, at first: Int32) throws {
        var index = first
        var attribute = start
        while attribute < attributes.count {
            // One switch, one copy of the value (a test for `.string` and then a bind copied it
            // twice: 2% of a batch insert; callgrind).
            switch attributes[attribute] {
            case .string(let text)?:
                let next = attribute + 1, nextIndex = index + 1
                try statement.withText(text, boundAt: index) { try execute(statement, attribute: next, at: nextIndex) }
                return
            case nil: try statement.bindNull(at: index)
            case .int64(let v)?: try statement.bind(v, at: index)
            case .double(let v)?: try statement.bind(v, at: index)
            case .date(let v)?: try statement.bind(v.timeIntervalSinceReferenceDate, at: index)
            case let other?: try statement.bind(other.storageValue, at: index)
            }
            attribute += 1
            index += 1
        }
        for key in toOnes {
            if let key { try statement.bind(key, at: index) } else { try statement.bindNull(at: index) }
            index += 1
        }
        try statement.execute()
    }

    /// Binds a value in its stored form (``AttributeValue/storageValue``, shared with the
    /// condition back ends).
    static func bind(_ value: AttributeValue?, to statement: Statement, at index: Int32) throws {
        // The common types straight to their SQLite call, without the `SQLiteValue` in between.
        switch value {
        case nil: try statement.bindNull(at: index)
        case .int64(let v)?: try statement.bind(v, at: index)
        case .double(let v)?: try statement.bind(v, at: index)
        case .string(let v)?: try statement.bind(v, at: index)
        case .date(let v)?: try statement.bind(v.timeIntervalSinceReferenceDate, at: index)
        case let other?: try statement.bind(other.storageValue, at: index)
        }
    }
}

let posixLocale = Locale(identifier: "en_US_POSIX")
