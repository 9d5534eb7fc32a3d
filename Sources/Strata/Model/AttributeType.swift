/// The type of an attribute, and how it is stored in SQLite.
///
/// | type | Swift | SQLite column |
/// |---|---|---|
/// | `int16`, `int32`, `int64` | `Int16`, `Int32`, `Int64` | INTEGER |
/// | `double`, `float` | `Double`, `Float` | untyped (8-byte IEEE, so `-0.0` and infinities survive; NaN is refused because SQLite stores it as NULL) |
/// | `bool` | `Bool` | INTEGER 0/1 |
/// | `string` | `String` | TEXT (UTF-8) |
/// | `date` | `Date` | REAL seconds since 2001-01-01 (Foundation's own representation: exact) |
/// | `binary` | `Data` | BLOB |
/// | `uuid` | `UUID` | BLOB (16 bytes) |
/// | `url` | `URL` | TEXT (`absoluteString`) |
/// | `decimal` | `Decimal` | TEXT (exact); sorts numerically via `CAST(… AS REAL)` |
public enum AttributeType: String, Codable, Sendable, CaseIterable {
    case int16, int32, int64, double, float, bool, string, date, binary, uuid, url, decimal

    /// The declared column type. Doubles and floats are declared without a type so that SQLite
    /// applies no REAL affinity (which would store `-0.0` as the integer `0`).
    var columnDeclaration: String {
        switch self {
        case .int16, .int32, .int64, .bool: "INTEGER"
        case .double, .float: ""
        case .string, .url, .decimal: "TEXT"
        case .date: "REAL"
        case .binary, .uuid: "BLOB"
        }
    }

    var isNumeric: Bool {
        switch self {
        case .int16, .int32, .int64, .double, .float, .decimal: true
        default: false
        }
    }
}
