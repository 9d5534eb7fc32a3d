public import Foundation

/// A value as SQLite stores it: one of its five storage classes.
public enum SQLiteValue: Sendable, Hashable, CustomStringConvertible {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)

    public var description: String {
        switch self {
        case .null: "NULL"
        case .integer(let value): String(value)
        case .real(let value): String(value)
        case .text(let value): "'\(value.replacingOccurrences(of: "'", with: "''"))'"
        case .blob(let value): "x'\(value.map { String(format: "%02x", $0) }.joined())'"
        }
    }

    public var isNull: Bool { if case .null = self { true } else { false } }
}
