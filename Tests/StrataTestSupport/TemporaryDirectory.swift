public import Foundation

/// A fresh folder under the system temp directory, removed when the value is released.
public final class TemporaryDirectory: Sendable {
    public let url: URL

    public init(_ label: String = "strata-test") {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(label)-\(UUID().uuidString)", isDirectory: true)
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// A fresh folder in memory (`/dev/shm`, where `fsync` costs nothing) when there is one, else
    /// under the system temp directory: for tests that open files many times and do not test
    /// durability.
    public init(inMemory label: String) {
        let shm = "/dev/shm"
        let parent = FileManager.default.isWritableFile(atPath: shm) ? URL(fileURLWithPath: shm, isDirectory: true)
                                                                       : FileManager.default.temporaryDirectory
        url = parent.appendingPathComponent("\(label)-\(UUID().uuidString)", isDirectory: true)
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// A path inside the folder.
    public func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    deinit { try? FileManager.default.removeItem(at: url) }
}
