import Testing
@testable import Strata

/// The slot table finds every property by name and nothing else: hits are confirmed byte by byte,
/// so names that share length, first and last bytes (one hash) are told apart.
@Suite struct SlotTableTests {
    @Test func findsEveryNameAndRejectsNearMisses() {
        // Same length, first and last byte: "dep_time"/"dxp_time"/"arr_time" collide in pairs.
        var names = ["dep_time", "dxp_time", "arr_time", "air_time", "a", "b", "tailnum", "time_hour",
                     "sched_dep_time", "a_property_name_longer_than_fifteen_bytes", "é_accented"]
        names += (0..<40).map { "p\($0)" }
        let table = SlotTable(names.enumerated().map { ($1, Slot.attribute($0)) })
        for (index, name) in names.enumerated() {
            #expect(table.lookup(name) == .attribute(index), "\(name)")
            // A native (heap) string with the same bytes finds the same slot.
            let native = String(decoding: Array(name.utf8), as: UTF8.self)
            #expect(table.lookup(native) == .attribute(index), "\(name)")
        }
        for miss in ["", "dep_tim", "dep_timee", "dzp_time", "A", "c", "p40", "a_property_name_longer_than_fifteen_bytez", "e_accented"] {
            #expect(table.lookup(miss) == nil, "\(miss)")
        }
        // A substring's string (shared storage) works too.
        let long = "xx tailnum yy"
        let middle = String(long.split(separator: " ")[1])
        #expect(table.lookup(middle) == .attribute(names.firstIndex(of: "tailnum")!))
    }
}
