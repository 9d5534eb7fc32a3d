import Foundation

// CPU time, beside wall time: on a loaded machine (this shared 2-core VM) a phase's wall time
// grows with whatever else runs, its CPU seconds much less. The client is this process (every
// thread); the server is the postmaster and every process it started (backends, checkpointer, WAL
// writer, …), the ones that ended included (their times go to the postmaster when it reaps them;
// a zombie, not reaped yet, reads 0).

struct CPUTime {
    var client: Double
    var server: Double

    static func - (a: CPUTime, b: CPUTime) -> CPUTime { CPUTime(client: a.client - b.client, server: a.server - b.server) }

    /// Now, for the server whose postmaster is `postmaster` (0: the server's side reads 0).
    static func now(postmaster: pid_t) -> CPUTime {
        var usage = rusage()
        #if os(Linux)
        getrusage(RUSAGE_SELF.rawValue, &usage)
        #else
        getrusage(RUSAGE_SELF, &usage)
        #endif
        let client = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        guard postmaster > 0 else { return CPUTime(client: client, server: 0) }
        var ticks = 0
        if let own = stat(postmaster) { ticks += own.utime + own.stime + own.cutime + own.cstime }
        let processes = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for name in processes {
            guard let pid = pid_t(name), pid != postmaster, let child = stat(pid), child.ppid == postmaster else { continue }
            ticks += child.utime + child.stime
        }
        return CPUTime(client: client, server: Double(ticks) / Double(sysconf(Int32(_SC_CLK_TCK))))
    }

    /// Fields of /proc/PID/stat (man 5 proc): the parent, and user and system ticks, own and reaped children's.
    private static func stat(_ pid: pid_t) -> (ppid: pid_t, utime: Int, stime: Int, cutime: Int, cstime: Int)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        // After "pid (comm)": field 3 (state) is index 0 here.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 14, let ppid = pid_t(fields[1]), let utime = Int(fields[11]), let stime = Int(fields[12]),
              let cutime = Int(fields[13]), let cstime = Int(fields[14]) else { return nil }
        return (ppid, utime, stime, cutime, cstime)
    }
}
