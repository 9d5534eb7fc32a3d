import Foundation
import StrataSQLite
import Testing

/// `Connection.rowIDs(changedIn:by:_:)`: the rows a statement wrote, from SQLite's update hook.
@Suite struct UpdateHookTests {
    @Test func theRowsOfOneTableAndOneKindOfChangeAreCollected() throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE \"Good\"(pk INTEGER PRIMARY KEY, n INTEGER)")
        try db.execute("CREATE TABLE \"Goods\"(pk INTEGER PRIMARY KEY, n INTEGER)")   // a name the first is a prefix of
        for table in ["Good", "Goods"] {
            for key in 1...10 { try db.execute("INSERT INTO \"\(table)\" VALUES (\(key), \(key % 3))") }
        }
        let (_, updated) = try db.rowIDs(changedIn: "Good", by: .update) {
            try db.execute("UPDATE \"Good\" AS t0 SET n = 7 WHERE t0.n = 1")
            try db.execute("UPDATE \"Goods\" SET n = 7")                    // another table: not collected
            try db.execute("DELETE FROM \"Good\" WHERE pk = 2")             // another kind: not collected
        }
        #expect(updated.sorted() == [1, 4, 7, 10])
        let (_, deleted) = try db.rowIDs(changedIn: "Goods", by: .delete) { try db.execute("DELETE FROM \"Goods\" WHERE pk > 8") }
        #expect(deleted.sorted() == [9, 10])
        // The hook is gone afterwards: nothing is collected outside the body.
        let (_, none) = db.rowIDs(changedIn: "Good", by: .update) {}
        try db.execute("UPDATE \"Good\" SET n = 8")
        #expect(none.isEmpty)
    }
}
