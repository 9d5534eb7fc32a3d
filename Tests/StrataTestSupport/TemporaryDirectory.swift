public import Foundation
public import Strata

/// A fresh folder under the system temp directory, removed when the value is released (also when
/// the test that holds it fails or throws).
///
/// An exit test's child process must not make its own: a child that stops at a precondition (or
/// calls `exit`) runs no deinitializer, so its folder would stay behind. The parent makes the
/// folder and passes its URL in the exit test's capture list; the child uses it through
/// ``init(existing:)``:
///
/// ```swift
/// let directory = TemporaryDirectory()
/// await #expect(processExitsWith: .failure) { [folder = directory.url as URL] in
///     let store = try TestStore(directory: TemporaryDirectory(existing: folder))
///     …
/// }
/// ```
public final class TemporaryDirectory: Sendable {
    public let url: URL
    /// Whether this value made the folder and removes it.
    private let owned: Bool

    public init(_ label: String = "strata-test") {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(label)-\(UUID().uuidString)", isDirectory: true)
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        owned = true
    }

    /// A folder someone else made and removes (an exit test's parent): used, never removed.
    public init(existing url: URL) {
        self.url = url
        owned = false
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
        owned = true
    }

    /// A path inside the folder.
    public func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    deinit {
        if owned { try? FileManager.default.removeItem(at: url) }
    }
}

/// Runs `body` with a fresh folder and removes the folder when `body` returns or throws.
public func withTemporaryDirectory<T>(_ label: String = "strata-test", _ body: (TemporaryDirectory) throws -> T) rethrows -> T {
    let directory = TemporaryDirectory(label)
    return try withExtendedLifetime(directory) { try body(directory) }
}

/// The same for async tests.
public func withTemporaryDirectory<T>(_ label: String = "strata-test", _ body: (TemporaryDirectory) async throws -> T) async rethrows -> T {
    let directory = TemporaryDirectory(label)
    defer { withExtendedLifetime(directory) {} }
    return try await body(directory)
}

extension StoreOptions {
    /// Options of a coordinator that hears of other connections' commits only when the test calls
    /// `processExternalChanges()`: the tests written for "another process, not yet heard of"
    /// (following other connections is on by default and would tell it by itself, at a moment
    /// the test does not choose).
    public static var notFollowing: StoreOptions {
        var options = StoreOptions()
        options.history.followsOtherConnections = false
        return options
    }
}

extension StoreCoordinator {
    /// Waits (up to `timeout`) until this coordinator's follower has caught up with another
    /// connection's commit `generation`; whether it did.
    @discardableResult
    public func waitUntilFollowed(_ generation: Int64, timeout: Duration = .seconds(20)) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while externalChangeStatistics.generation < generation, ContinuousClock.now < deadline { usleep(500) }
        return externalChangeStatistics.generation >= generation
    }
}
