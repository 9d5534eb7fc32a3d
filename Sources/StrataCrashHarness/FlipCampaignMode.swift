import Foundation
import Strata
import StrataTestSupport

/// `--mode flips --store PRISTINE --seed S --first F --commits N`: flips F ..< F+N of the campaign.
///
/// Each flip XORs one byte of a fresh copy of the pristine store (FlipCampaign.flip), then opens
/// the copy and reads everything (FlipCampaign.dump), then runs `StoreInspector.check()`. One line
/// per flip, written when it is done (a flip that crashes this process has no line: the parent
/// counts it as a crash and starts a new process after it):
///
///     flip <index> offset=<o> page=<p> xor=<x> read=<same|different|corrupt-page|error:<kind>> check=<clean|corrupt>
func flipCampaign(_ options: HarnessOptions) throws {
    let pristine = URL(fileURLWithPath: options.store)
    let original = try Data(contentsOf: pristine)
    let reference = try FlipCampaign.dump(storeAt: pristine)
    let pageSize = Int(original[16]) << 8 | Int(original[17]) << 16
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("strata-flips-\(getpid())-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let copy = folder.appendingPathComponent("store.sqlite")
    for index in options.first..<(options.first + options.commits) {
        let (offset, xor) = FlipCampaign.flip(seed: options.seed, index: index, size: original.count)
        var bytes = original
        bytes[offset] ^= xor
        for suffix in ["-wal", "-shm", "-journal", ".caches"] { try? FileManager.default.removeItem(atPath: copy.path + suffix) }
        try bytes.write(to: copy)
        let read: String
        do {
            read = try FlipCampaign.dump(storeAt: copy) == reference ? "same" : "different"
        } catch StoreError.corruptPage {
            read = "corrupt-page"
        } catch let error as StoreError {
            switch error {
            case .sqlite(let sqlite): read = "error:sqlite-\(sqlite.code.rawValue & 0xff)"
            case .notADatabase: read = "error:not-a-database"
            case .notAStrataStore: read = "error:not-a-strata-store"
            case .modelMismatch: read = "error:model-mismatch"
            case .unsupportedFormat: read = "error:unsupported-format"
            default: read = "error:store"
            }
        } catch {
            read = "error:\(type(of: error))"
        }
        let check: String
        do {
            check = try StoreInspector(url: copy).check().isClean ? "clean" : "corrupt"
        } catch {
            check = "corrupt"        // the inspector refused the file: that is a finding too
        }
        let line = "flip \(index) offset=\(offset) page=\(offset / max(pageSize, 1) + 1) xor=\(xor) read=\(read) check=\(check)\n"
        FileHandle.standardOutput.write(Data(line.utf8))
    }
}
