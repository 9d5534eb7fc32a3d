internal import Foundation
internal import StrataSQLite

/// The string operators, implemented once. SQL calls them through functions registered on the
/// store connection (`strata_fold`, `strata_match`), memory calls them directly, so the two back
/// ends cannot disagree — and `[c]`/`[d]` fold Unicode, where SQLite's `LIKE`, `LOWER` and
/// `NOCASE` only fold ASCII.
///
/// Semantics (documented in the Predicates article):
/// - Strings compare by Unicode scalars (UTF-8 bytes), as SQLite's BINARY collation does; `é`
///   precomposed and `e` + combining accent are different strings unless `[d]` or `[c]` folds them.
/// - `[c]` lowercases (full Unicode mapping), `[d]` removes combining marks after canonical
///   decomposition; a folded string is recomposed (NFC).
/// - CONTAINS, BEGINSWITH, ENDSWITH work on scalars; LIKE's `*` matches any run of scalars and `?`
///   exactly one; MATCHES is an ICU regular expression that must match the whole string.
enum StringMatching {
    static func fold(_ text: String, _ options: Comparison.Options) -> String {
        guard !options.isEmpty else { return text }
        var result = text
        if options.contains(.caseInsensitive) { result = result.lowercased() }
        if options.contains(.diacriticInsensitive) {
            var scalars = String.UnicodeScalarView()
            for scalar in result.decomposedStringWithCanonicalMapping.unicodeScalars
            where scalar.properties.generalCategory != .nonspacingMark {
                scalars.append(scalar)
            }
            result = String(scalars)
        }
        return result.precomposedStringWithCanonicalMapping
    }

    static func fold(_ value: SQLiteValue, _ options: Comparison.Options) -> SQLiteValue {
        guard !options.isEmpty, case .text(let text) = value else { return value }
        return .text(fold(text, options))
    }

    /// Evaluates a string operator on already folded operands; false when either is not text.
    static func evaluate(_ op: Comparison.Operator, _ options: Comparison.Options, _ lhs: SQLiteValue, _ rhs: SQLiteValue) -> Bool {
        guard case .text(let l) = lhs, case .text(let r) = rhs else { return false }
        switch op {
        case .contains: return contains(Array(l.utf8), Array(r.utf8))
        case .beginsWith: return l.utf8.starts(with: r.utf8)
        case .endsWith: return l.utf8.reversed().starts(with: r.utf8.reversed())
        case .like: return like(Array(l.unicodeScalars), Array(r.unicodeScalars))
        case .matches:
            return RegexCache.matches(r, options: options, l)
        default: return false
        }
    }

    private static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty else { return true }
        guard haystack.count >= needle.count else { return false }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if haystack[start..<(start + needle.count)].elementsEqual(needle) { return true }
        }
        return false
    }

    /// Wildcard match with backtracking on the last `*`: O(n·m) at worst.
    private static func like(_ text: [Unicode.Scalar], _ pattern: [Unicode.Scalar]) -> Bool {
        var t = 0, p = 0
        var starP = -1, starT = 0
        while t < text.count {
            if p < pattern.count && (pattern[p] == "?" || (pattern[p] != "*" && pattern[p] == text[t])) {
                t += 1; p += 1
            } else if p < pattern.count && pattern[p] == "*" {
                starP = p; starT = t; p += 1
            } else if starP >= 0 {
                p = starP + 1; starT += 1; t = starT
            } else {
                return false
            }
        }
        while p < pattern.count && pattern[p] == "*" { p += 1 }
        return p == pattern.count
    }

    static let operatorCodes: [Comparison.Operator: Int64] = [.contains: 1, .beginsWith: 2, .endsWith: 3, .like: 4, .matches: 5]
    static let operatorsByCode: [Int64: Comparison.Operator] = Dictionary(uniqueKeysWithValues: operatorCodes.map { ($1, $0) })

    /// Registers `strata_fold(value, options)` and `strata_match(op, options, lhs, rhs)` on a store
    /// connection. `strata_match`'s options may carry ``StringFunctionFastPath/foldLeftOperand``:
    /// `lhs` is then folded here (one call per row instead of two).
    ///
    /// Both have a C fast path (`strata_strings.c`) that answers where the text is ASCII, where
    /// folding is ASCII lowercasing and every operator is byte work; anything else (a non-ASCII
    /// byte, MATCHES) comes here. These closures stay the definition: the predicate differential
    /// tests compare SQL with memory (which calls ``evaluate(_:_:_:_:)`` directly) on Unicode-heavy
    /// and ASCII data.
    static func register(on connection: StrataSQLite.Connection) throws {
        try connection.createStringFunction("strata_fold", argumentCount: 2, fastPath: .fold) { arguments in
            guard case .integer(let flags) = arguments[1] else { return arguments[0] }
            return fold(arguments[0], Comparison.Options(rawValue: Int(flags)))
        }
        try connection.createStringFunction("strata_match", argumentCount: 4, fastPath: .match) { arguments in
            guard case .integer(let code) = arguments[0], let op = operatorsByCode[code],
                  case .integer(let flags) = arguments[1] else { return .integer(0) }
            let options = Comparison.Options(rawValue: Int(flags) & ~StringFunctionFastPath.foldLeftOperand)
            let lhs = Int(flags) & StringFunctionFastPath.foldLeftOperand != 0 ? fold(arguments[2], options) : arguments[2]
            return .integer(evaluate(op, options, lhs, arguments[3]) ? 1 : 0)
        }
        try connection.createCollation("strata_localized") { localizedCompare($0, $1) }
    }

    /// The ordering of `SortKey.Comparison.localized`, shared by SQL (a collation) and memory.
    static func localizedCompare(_ lhs: String, _ rhs: String) -> Int {
        // No locale: on Linux a POSIX locale turns this into a non-transitive order.
        switch lhs.compare(rhs, options: [.caseInsensitive, .numeric]) {
        case .orderedAscending: -1
        case .orderedSame: lhs.utf8.lexicographicallyPrecedes(rhs.utf8) ? -1 : (lhs == rhs ? 0 : 1)
        case .orderedDescending: 1
        }
    }
}

/// Compiled regular expressions, shared by every context and connection.
///
/// Keyed by the pattern's UTF-8 bytes, not by `String`: Swift strings compare by canonical
/// equivalence, so `é` and `e` + U+0301 would share one compiled expression, and a decomposed
/// pattern does not match a precomposed string. Matching runs under the cache's lock, because
/// the thread-safety of a shared `NSRegularExpression` is not documented on Linux. The lock is
/// ``Locked`` (an `NSLock`), not `Synchronization.Mutex`, which ThreadSanitizer cannot see: with a
/// Mutex, every match from two threads in turn was reported as a race.
enum RegexCache {
    private static let cache = Locked<[[UInt8]: NSRegularExpression?]>([:])

    private static func compiled(_ cache: inout [[UInt8]: NSRegularExpression?], _ pattern: String,
                                 _ options: Comparison.Options) -> NSRegularExpression? {
        let key = [UInt8(truncatingIfNeeded: options.rawValue)] + Array(pattern.utf8)
        if let cached = cache[key] { return cached }
        let expression = try? NSRegularExpression(
            pattern: "\\A(?:\(pattern))\\z",
            options: options.contains(.caseInsensitive) ? [.caseInsensitive] : [])
        cache[key] = expression
        return expression
    }

    /// The expression for `pattern`, anchored to match the whole string (`\\A…\\z`: unlike `$`, `\\z`
    /// does not match before a final newline); `nil` when it doesn't compile.
    static func isValid(_ pattern: String, options: Comparison.Options = []) -> Bool {
        cache.withLock { compiled(&$0, pattern, options) != nil }
    }

    /// Whether the whole of `text` matches `pattern`; false when the pattern doesn't compile.
    static func matches(_ pattern: String, options: Comparison.Options = [], _ text: String) -> Bool {
        cache.withLock { cache in
            guard let expression = compiled(&cache, pattern, options) else { return false }
            return expression.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
        }
    }
}

/// SQLite's ordering of values, reproduced: NULL < numbers < text < blob; integers and reals
/// compare exactly; text and blobs by bytes (BINARY collation).
enum ScalarOrder {
    static func compare(_ lhs: SQLiteValue, _ rhs: SQLiteValue) -> Int {
        switch (lhs, rhs) {
        case (.null, .null): return 0
        case (.null, _): return -1
        case (_, .null): return 1
        case let (.integer(a), .integer(b)): return a < b ? -1 : (a == b ? 0 : 1)
        case let (.real(a), .real(b)): return a < b ? -1 : (a == b ? 0 : 1)
        case let (.integer(a), .real(b)): return compare(integer: a, real: b)
        case let (.real(a), .integer(b)): return -compare(integer: b, real: a)
        case (.integer, _), (.real, _): return -1
        case (_, .integer), (_, .real): return 1
        case let (.text(a), .text(b)): return bytes(Array(a.utf8), Array(b.utf8))
        case (.text, .blob): return -1
        case (.blob, .text): return 1
        case let (.blob(a), .blob(b)): return bytes(Array(a), Array(b))
        }
    }

    /// Exact comparison of an integer with a double, as SQLite does (no rounding of the integer).
    static func compare(integer: Int64, real: Double) -> Int {
        if real.isNaN { return 1 }
        if real < -9.223372036854775808e18 { return 1 }
        if real >= 9.223372036854775808e18 { return -1 }
        let truncated = Int64(real.rounded(.down))
        if integer < truncated { return -1 }
        if integer > truncated { return 1 }
        return Double(truncated) < real ? -1 : 0
    }

    static func bytes(_ a: [UInt8], _ b: [UInt8]) -> Int {
        for (x, y) in zip(a, b) where x != y { return x < y ? -1 : 1 }
        return a.count < b.count ? -1 : (a.count == b.count ? 0 : 1)
    }

    /// `IS` semantics: NULL equals NULL.
    static func isEqual(_ lhs: SQLiteValue, _ rhs: SQLiteValue) -> Bool { compare(lhs, rhs) == 0 }
}
