internal import Foundation
internal import Synchronization

/// Named places inside a sync round where a crash test ends the process (SIGKILL) on purpose:
/// `STRATA_SYNC_KILL_POINT=name` (or `name:nth`) in the environment of a process that syncs.
/// Unset, a point costs one atomic load. The convergence test arms them so that kills mid-push,
/// mid-pull and mid-apply are common, not left to timing.
enum SyncKillPoint {
    static let names = ["push.sent", "push.committed", "pull.read", "apply.built", "apply.committed", "enrol.registered"]

    private static let armed: (name: String, nth: Int)? = {
        guard let value = ProcessInfo.processInfo.environment["STRATA_SYNC_KILL_POINT"], !value.isEmpty else { return nil }
        if let colon = value.lastIndex(of: ":"), let nth = Int(value[value.index(after: colon)...]), nth >= 1 {
            return (String(value[..<colon]), nth)
        }
        return (value, 1)
    }()
    private static let hits = Atomic<Int>(0)

    static func hit(_ name: String) {
        guard let armed, armed.name == name else { return }
        if hits.add(1, ordering: .relaxed).newValue >= armed.nth {
            kill(getpid(), SIGKILL)
        }
    }
}
