internal import Foundation

/// The rejects file: bad rows with line, column and reason, cut back to what the last committed
/// batch had written when a run goes on from a checkpoint.
struct RejectsFile {
    private let url: URL?
    private let json: Bool
    private var size: Int64 = 0

    init(url: URL?, keepingBytes kept: Int64) throws {
        self.url = url
        json = url.map { ["jsonl", "ndjson"].contains($0.pathExtension.lowercased()) } ?? false
        guard let url else { return }
        if !FileManager.default.fileExists(atPath: url.path) { _ = FileManager.default.createFile(atPath: url.path, contents: nil) }
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        try handle.truncate(atOffset: UInt64(kept))
        size = kept
        if kept == 0, !json {
            try handle.write(contentsOf: Data("line,column,reason,row\n".utf8))
            size = Int64("line,column,reason,row\n".utf8.count)
        }
    }

    /// Appends `rejects`; returns the file's size after them.
    mutating func write(_ rejects: [(ImportRejection, [String?])]) throws -> Int64 {
        guard let url, !rejects.isEmpty else { return size }
        var text = ""
        for (rejection, fields) in rejects {
            if json {
                let object: [String: Any] = ["line": rejection.line, "column": rejection.column ?? NSNull(), "reason": rejection.reason,
                                             "row": fields.map { $0 ?? "" }.joined(separator: ",")]
                let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
                text += String(decoding: data, as: UTF8.self) + "\n"
            } else {
                let row = fields.map { $0 ?? "" }.joined(separator: ",")
                text += ["\(rejection.line)", rejection.column ?? "", rejection.reason, row].map(RejectsFile.csvField).joined(separator: ",") + "\n"
            }
        }
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(size))
        let data = Data(text.utf8)
        try handle.write(contentsOf: data)
        size += Int64(data.count)
        return size
    }

    static func csvField(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
