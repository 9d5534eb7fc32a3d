/// The one string quoter: `text` in double quotes, with `"`, `\`, newline, return and tab
/// escaped as `\"`, `\\`, `\n`, `\r`, `\t`, and every other control character (below U+0020, and
/// U+007F when `escapingDelete`) written by `control`. JSON writes `\u00XX`
/// (``HistoryLog/quote(_:)``); a predicate's format string writes `\u{XX}` (``Condition``).
func quotedString(_ text: String, escapingDelete: Bool, control: (UInt32) -> String) -> String {
    var out = "\""
    out.reserveCapacity(text.utf8.count + 2)
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case _ where scalar.value < 0x20 || (escapingDelete && scalar.value == 0x7F): out += control(scalar.value)
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}
