internal import CSQLite
internal import CStrataVFS
internal import Foundation

// SQLITE_TRANSIENT: SQLite copies result bytes.
private let transientResult = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// A Swift function callable from SQL, with its arguments as ``SQLiteValue``s.
public typealias SQLFunction = ([SQLiteValue]) throws -> SQLiteValue

/// A Swift comparison usable as an SQLite collation: negative, zero or positive.
public typealias SQLCollation = (String, String) -> Int

/// The C fast path of a string function (`Connection.createStringFunction`).
public enum StringFunctionFastPath: Sendable {
    /// `fold(value, options)`: ASCII lowercasing for option bit 1, ASCII unchanged otherwise.
    case fold
    /// `match(op, options, lhs, rhs)`: CONTAINS (1), BEGINSWITH (2), ENDSWITH (3), LIKE (4) on
    /// an ASCII `lhs`; options bit ``foldLeftOperand`` folds `lhs` first.
    case match

    /// Option bit of a `match` function: its left operand arrives unfolded.
    public static let foldLeftOperand = Int(STRATA_MATCH_FOLD_LHS)
}

private final class FunctionBox {
    let body: SQLFunction
    init(_ body: @escaping SQLFunction) { self.body = body }

    /// Runs the box at `pointer` on SQLite's arguments and sets the call's result.
    static func call(_ pointer: UnsafeMutableRawPointer?, _ context: OpaquePointer?, _ count: Int32,
                     _ values: UnsafeMutablePointer<OpaquePointer?>?) {
        let box = Unmanaged<FunctionBox>.fromOpaque(pointer!).takeUnretainedValue()
        var arguments: [SQLiteValue] = []
        arguments.reserveCapacity(Int(count))
        for index in 0..<Int(count) { arguments.append(SQLiteValue(sqlite: values![index])) }
        do {
            switch try box.body(arguments) {
            case .null: sqlite3_result_null(context)
            case .integer(let value): sqlite3_result_int64(context, value)
            case .real(let value): sqlite3_result_double(context, value)
            case .text(let value):
                value.withCString { text in
                    sqlite3_result_text64(context, text, sqlite3_uint64(value.utf8.count), transientResult, UInt8(SQLITE_UTF8))
                }
            case .blob(let value):
                value.withUnsafeBytes { sqlite3_result_blob64(context, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), sqlite3_uint64($0.count), transientResult) }
            }
        } catch {
            sqlite3_result_error(context, "\(error)", -1)
        }
    }
}

private final class CollationBox {
    let body: SQLCollation
    init(_ body: @escaping SQLCollation) { self.body = body }
}

extension Connection {
    /// Registers `body` as the SQL function `name` taking `argumentCount` arguments (-1: any).
    /// Deterministic functions may be used in indexes and are evaluated once per constant argument.
    ///
    /// A thrown error becomes an SQL error whose message is the error's description.
    public func createFunction(_ name: String, argumentCount: Int32, deterministic: Bool = true,
                               _ body: @escaping SQLFunction) throws {
        let box = Unmanaged.passRetained(FunctionBox(body)).toOpaque()
        var flags = SQLITE_UTF8
        if deterministic { flags |= SQLITE_DETERMINISTIC }
        let code = sqlite3_create_function_v2(
            liveHandle, name, argumentCount, flags, box,
            { context, count, values in
                FunctionBox.call(sqlite3_user_data(context), context, count, values)
            },
            nil, nil,
            { box in if let box { Unmanaged<FunctionBox>.fromOpaque(box).release() } })
        guard code == SQLITE_OK else { throw self.error(code: code, sql: nil) }
    }

    /// Registers one of Strata's string functions (deterministic): C answers ASCII text (see
    /// `strata_strings.h`) and calls `body` for everything else, so `body` alone defines the
    /// function's results and C only skips the Swift strings where bytes give the same answer.
    public func createStringFunction(_ name: String, argumentCount: Int32, fastPath: StringFunctionFastPath,
                                     _ body: @escaping SQLFunction) throws {
        let box = Unmanaged.passRetained(FunctionBox(body)).toOpaque()
        let code = strata_register_string_function(
            liveHandle, name, argumentCount, fastPath == .fold ? StrataStringFold : StrataStringMatch, box,
            { context, count, values in
                FunctionBox.call(strata_string_function_box(context), context, count, values)
            },
            { box in if let box { Unmanaged<FunctionBox>.fromOpaque(box).release() } })
        guard code == SQLITE_OK else { throw self.error(code: code, sql: nil) }
    }

    /// Registers `body` as the collation `name` (`ORDER BY x COLLATE name`).
    public func createCollation(_ name: String, _ body: @escaping SQLCollation) throws {
        let box = Unmanaged.passRetained(CollationBox(body)).toOpaque()
        let code = sqlite3_create_collation_v2(
            liveHandle, name, SQLITE_UTF8, box,
            { box, leftCount, left, rightCount, right in
                let box = Unmanaged<CollationBox>.fromOpaque(box!).takeUnretainedValue()
                let l = String(decoding: UnsafeRawBufferPointer(start: left, count: Int(leftCount)), as: UTF8.self)
                let r = String(decoding: UnsafeRawBufferPointer(start: right, count: Int(rightCount)), as: UTF8.self)
                return Int32(clamping: box.body(l, r))
            },
            { box in if let box { Unmanaged<CollationBox>.fromOpaque(box).release() } })
        guard code == SQLITE_OK else { throw self.error(code: code, sql: nil) }
    }
}

extension SQLiteValue {
    init(sqlite value: OpaquePointer?) {
        switch sqlite3_value_type(value) {
        case SQLITE_INTEGER: self = .integer(sqlite3_value_int64(value))
        case SQLITE_FLOAT: self = .real(sqlite3_value_double(value))
        case SQLITE_TEXT:
            let count = Int(sqlite3_value_bytes(value))
            if let text = sqlite3_value_text(value) {
                self = .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
            } else {
                self = .text("")
            }
        case SQLITE_BLOB:
            let count = Int(sqlite3_value_bytes(value))
            if let bytes = sqlite3_value_blob(value) { self = .blob(Data(bytes: bytes, count: count)) } else { self = .blob(Data()) }
        default: self = .null
        }
    }
}
