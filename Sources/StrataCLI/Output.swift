import Foundation
import Strata

/// Aligned text columns for terminal output: numbers right-aligned, text left-aligned, two
/// spaces between columns, no trailing spaces.
struct Table {
    enum Alignment { case left, right }

    var columns: [(title: String, alignment: Alignment)]
    var rows: [[String]] = []

    init(_ columns: [(String, Alignment)]) {
        self.columns = columns.map { (title: $0.0, alignment: $0.1) }
    }

    mutating func append(_ row: [String]) { rows.append(row) }

    /// The table as lines; `header: false` leaves out the titles.
    func lines(header: Bool = true, indent: String = "") -> [String] {
        let all = (header ? [columns.map(\.title)] : []) + rows
        var widths = columns.map { _ in 0 }
        for row in all { for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) } }
        return all.map { row in
            let cells = row.enumerated().map { index, cell -> String in
                let padding = String(repeating: " ", count: widths[index] - cell.count)
                switch columns[index].alignment {
                case .left: return index == row.count - 1 ? cell : cell + padding
                case .right: return padding + cell
                }
            }
            return indent + cells.joined(separator: "  ").replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)
        }
    }

    func print(header: Bool = true, indent: String = "") {
        for line in lines(header: header, indent: indent) { Swift.print(line) }
    }
}

enum Format {
    /// `412 B`, `12.3 KB`, `4.5 MB`, `1.2 GB` (1 KB = 1024 bytes).
    static func bytes(_ count: Int64) -> String {
        let units = ["KB", "MB", "GB", "TB"]
        guard count >= 1024 else { return "\(count) B" }
        var value = Double(count) / 1024
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return String(format: value >= 100 ? "%.0f %@" : "%.1f %@", value, units[unit])
    }

    /// Lower-case hexadecimal, as `store info` shows nonces.
    static func hex(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined() }

    /// `valid`, `stale (entity-changed)`, `corrupt (checksum-mismatch)`.
    static func status(_ report: CacheReport) -> String {
        guard report.status != .valid else { return report.status.rawValue }
        return "\(report.status.rawValue) (\(report.reason ?? "unknown"))"
    }

    /// A bar of `width` eighths-of-a-cell for `value` out of `maximum`, at least one eighth when
    /// `value` is positive.
    static func bar(_ value: Int, of maximum: Int, width: Int = 40) -> String {
        guard maximum > 0, value > 0 else { return "" }
        let eighths = max(1, Int((Double(value) / Double(maximum) * Double(width * 8)).rounded()))
        let partials = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"]
        return String(repeating: "█", count: eighths / 8) + partials[eighths % 8]
    }

    /// `items` joined with `separator`, wrapped into lines of at most `width` characters.
    static func wrapped(_ items: [String], width: Int = 96, separator: String = "  ", indent: String = "  ") -> [String] {
        var lines: [String] = []
        var line = ""
        for item in items {
            if !line.isEmpty, indent.count + line.count + separator.count + item.count > width {
                lines.append(indent + line)
                line = ""
            }
            line += (line.isEmpty ? "" : separator) + item
        }
        if !line.isEmpty { lines.append(indent + line) }
        return lines
    }

    /// `1 cache`, `3 caches`.
    static func count(_ number: Int, _ singular: String, _ plural: String? = nil) -> String {
        "\(number) \(number == 1 ? singular : plural ?? singular + "s")"
    }
}

/// `--json` output: sorted keys, pretty printed, slashes unescaped, one trailing newline. The
/// "Command-line tool" article documents every field.
func printJSON<T: Encodable>(_ value: T) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
    print(String(decoding: try encoder.encode(value), as: UTF8.self))
}
