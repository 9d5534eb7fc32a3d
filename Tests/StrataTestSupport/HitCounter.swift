import Synchronization

/// How many times something ran, counted from any thread: an observation's `onChange`, a
/// stream's consumer.
public final class HitCounter: Sendable {
    private let count = Mutex(0)

    public init() {}

    public var value: Int { count.withLock { $0 } }

    public func hit() { count.withLock { $0 += 1 } }
}
