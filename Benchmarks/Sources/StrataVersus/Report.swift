import Foundation

// The summary: the machine, one table of medians and goals for the real data, one for the growth
// curve (cost per row at each size, and whether it stays linear), and the measured regions.

struct Machine {
    var cpu: String
    var cores: Int
    var memory: String
    var kernel: String
    var swift: String
    var sqlite: String

    static func current() -> Machine {
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let cpu = cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }
            .flatMap { $0.split(separator: ":", maxSplits: 1).last }
            .map { $0.trimmingCharacters(in: .whitespaces) } ?? "unknown CPU"
        let gib = Double(ProcessInfo.processInfo.physicalMemory) / Double(1 << 30)
        let kernel = ((try? String(contentsOfFile: "/proc/sys/kernel/osrelease", encoding: .utf8)) ?? "unknown")
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return Machine(cpu: cpu, cores: ProcessInfo.processInfo.activeProcessorCount,
                       memory: String(format: "%.1f GiB RAM", gib), kernel: "Linux \(kernel)",
                       swift: swiftVersion(), sqlite: "SQLite \(sqliteVersion)")
    }

    /// `swift --version`'s version (the toolchain `swift run` used), or "Swift (unknown)".
    private static func swiftVersion() -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["swift", "--version"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return "Swift (unknown)" }
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard let range = output.range(of: #"Swift version [0-9][^ ]*"#, options: .regularExpression) else { return "Swift (unknown)" }
        return String(output[range]).replacingOccurrences(of: "Swift version", with: "Swift")
    }

    var line: String {
        "\(cpu) · \(cores) cores · \(memory) · \(kernel) · \(swift) (release build) · \(sqlite) · GRDB \(grdbVersion)"
    }
}

struct Report {
    var date: String
    var machine: Machine
    var runDescription: String
    var rows: [ResultRow]
    var sizes: [Int]
    /// Markdown added at the end (the concurrent-reads latency table).
    var sections: [String] = []

    func markdown() -> String {
        var out: [String] = []
        out.append("# Strata vs raw SQLite vs GRDB on nycflights13 — \(date)")
        out.append("")
        out.append("Machine: \(machine.line)")
        out.append("")
        out.append(runDescription)
        out.append("")
        out.append("Medians. Times compare only within this run (these machines drift by up to 2× between runs): read the ratios.")
        out.append("")

        let main = rows.filter { $0.unit != .nanosecondsPerRow }
        if !main.isEmpty {
            out.append("| workload | rows | raw SQLite | GRDB | Strata | Strata/raw | Strata/GRDB | goal | met |")
            out.append("|---|---:|---:|---:|---:|---:|---:|---|---|")
            var group = ""
            for row in main {
                if row.group != group {
                    group = row.group
                    out.append("| **\(group)** | | | | | | | | |")
                }
                out.append(line(row))
            }
            out.append("")
        }

        let growth = rows.filter { $0.unit == .nanosecondsPerRow }
        if !growth.isEmpty {
            out.append("Growth curve (synthetic flights made from the real ones; cost per row):")
            out.append("")
            out.append("| workload | flights | raw SQLite | GRDB | Strata | Strata/raw | Strata/GRDB | goal | met |")
            out.append("|---|---:|---:|---:|---:|---:|---:|---|---|")
            var names: [String] = []
            for row in growth where !names.contains(row.workload) { names.append(row.workload) }
            for name in names {
                let series = growth.filter { $0.workload == name }.sorted { ($0.rows ?? 0) < ($1.rows ?? 0) }
                for row in series { out.append(line(row)) }
                if let verdict = linearity(series) { out.append(verdict) }
            }
            out.append("")
        }

        let notes = rows.filter { $0.note != nil }
        if !notes.isEmpty {
            out.append("Measured regions and details:")
            out.append("")
            for row in notes {
                let rows = row.rows.map { " (\(formatCount($0)) rows)" } ?? ""
                out.append("- \(row.workload)\(rows): \(row.note!)")
            }
            out.append("")
        }
        for section in sections {
            out.append(section)
            out.append("")
        }
        return out.joined(separator: "\n")
    }

    private func line(_ row: ResultRow) -> String {
        func value(_ c: Contender) -> String { row.values[c].map(row.unit.format) ?? "" }
        let met = row.met.map { $0 ? "yes" : "**no**" } ?? ""
        return "| \(row.workload) | \(row.rows.map(formatCount) ?? "") | \(value(.raw)) | \(value(.grdb)) | \(value(.strata)) | "
            + "\(formatRatio(row.ratio(.raw))) | \(formatRatio(row.ratio(.grdb))) | \(row.goal ?? "") | \(met) |"
    }

    /// Per-row cost at the largest size over the smallest, per contender. Goal: Strata's stays
    /// within 1.5× (linear), or within raw SQLite's own growth when SQLite itself grows faster.
    private func linearity(_ series: [ResultRow]) -> String? {
        guard series.count >= 2, let first = series.first, let last = series.last,
              let firstRows = first.rows, let lastRows = last.rows else { return nil }
        func growth(_ c: Contender) -> Double? {
            guard let a = first.values[c], let b = last.values[c], a > 0 else { return nil }
            return b / a
        }
        let strata = growth(.strata)
        let limit = max(1.5, growth(.raw) ?? 1.5)
        let met = strata.map { $0 <= limit }
        let sizes = "\(shortCount(firstRows))→\(shortCount(lastRows))"
        return "| ↳ per-row growth \(sizes) | | \(formatRatio(growth(.raw))) | \(formatRatio(growth(.grdb))) | \(formatRatio(strata)) | | | "
            + "linear: ≤ 1.5× (or ≤ raw's) | \(met.map { $0 ? "yes" : "**no**" } ?? "") |"
    }
}
