/// A format string that is not a valid condition: where, what was found and what was expected.
///
/// ```
/// expected a value after '>', found end of predicate at line 1, column 9 (expected a key path, a string, …)
///   height >
///           ^
/// ```
public struct ConditionParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    /// What the parser would have accepted here.
    public var expected: String
    /// 1-based line and column (in Unicode scalars).
    public var line: Int
    public var column: Int
    /// The offending line with a caret under the position.
    public var excerpt: String

    init(message: String, expected: String, format: String, offset: Int) {
        self.message = message
        self.expected = expected
        let scalars = Array(format.unicodeScalars)
        let clamped = max(0, min(offset, scalars.count))
        var line = 1, lineStart = 0
        for index in 0..<clamped where scalars[index] == "\n" {
            line += 1
            lineStart = index + 1
        }
        var lineEnd = lineStart
        while lineEnd < scalars.count && scalars[lineEnd] != "\n" { lineEnd += 1 }
        self.line = line
        column = clamped - lineStart + 1
        var text = String(String.UnicodeScalarView(scalars[lineStart..<lineEnd]))
        var caretColumn = column - 1
        if text.unicodeScalars.count > 120 {
            let start = max(0, caretColumn - 60)
            text = String(String.UnicodeScalarView(Array(text.unicodeScalars)[start..<min(text.unicodeScalars.count, start + 120)]))
            caretColumn -= start
        }
        excerpt = "  " + text + "\n  " + String(repeating: " ", count: caretColumn) + "^"
    }

    public var description: String {
        "\(message) at line \(line), column \(column) (expected \(expected))\n\(excerpt)"
    }
}
