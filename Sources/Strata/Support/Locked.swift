internal import Foundation

/// A value behind an `NSLock`.
///
/// Used instead of `Synchronization.Mutex` because ThreadSanitizer on Linux does not see Mutex's
/// futex-based locking and reports two threads that take the same Mutex in turn as a race; it
/// understands `NSLock` (pthread mutex). CI runs the concurrency suite under ThreadSanitizer.
// @unchecked because: `value` is read and written only inside `lock.withLock`.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        try lock.withLock { try body(&value) }
    }
}
