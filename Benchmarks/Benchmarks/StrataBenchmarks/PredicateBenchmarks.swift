import Benchmark
import CSQLiteRaw
import Strata

// A five-clause predicate over the 100,000 benchmark items, three ways: Strata's in-memory evaluator,
// a Strata fetch (the predicate as bound SQL) and the raw SQLite C API with a hand-written WHERE.
// All three must find the same items as plain Swift does on the generated rows.

/// The predicate every predicate benchmark runs.
let predicateFormat = #"category > 10 AND category < 90 AND isEven == YES AND name BEGINSWITH "a" AND number >= 1000"#

func makePredicate() throws -> Condition { try Condition(predicateFormat) }

/// How many of the generated rows the predicate matches, computed in plain Swift (the names are ASCII).
func expectedPredicateMatches(_ rows: [ItemRow]) -> Int {
    rows.lazy.filter { $0.category > 10 && $0.category < 90 && $0.isEven && $0.name.hasPrefix("a") && $0.number >= 1000 }.count
}

func checkPredicateCount(_ found: Int, expected: Int, _ side: String) throws {
    guard found == expected else {
        throw BenchmarkFailure(description: "\(side) matched \(found) items, expected \(expected)")
    }
}

/// The same WHERE in natural SQL, with bound parameters. BEGINSWITH becomes `substr(name, 1, 1) = ?`
/// (Strata calls its registered `strata_match` function instead, which compares Unicode scalars).
/// `ORDER BY _pk` because a Strata fetch always orders by primary key last.
///
/// `NOT INDEXED`: Strata's SQL wraps each ordering comparison in `coalesce(…, 0)`, which SQLite can't
/// answer from an index, so its fetch scans the table. Left to itself, SQLite would answer this query
/// from the (category, name) index, which for a range covering 79% of the rows is slower than the
/// scan (a row lookup per index entry, then a sort by `_pk`). Both sides scan, so the ratio measures
/// the predicate's evaluation, not the choice of plan.
let rawPredicateSQL = #"SELECT "_pk" FROM "Item" NOT INDEXED WHERE "category" > ? AND "category" < ? AND "isEven" = ? AND substr("name", 1, 1) = ? AND "number" >= ? ORDER BY "_pk""#

extension RawDatabase {
    /// The keys of the rows `rawPredicateSQL` matches.
    func predicateIDs() throws -> [Int64] {
        let statement = try prepare(rawPredicateSQL)
        defer { sqlite3_finalize(statement) }
        try check(sqlite3_bind_int64(statement, 1, 10))
        try check(sqlite3_bind_int64(statement, 2, 90))
        try check(sqlite3_bind_int64(statement, 3, 1))
        try check(sqlite3_bind_text(statement, 4, "a", -1, sqliteTransient))
        try check(sqlite3_bind_int64(statement, 5, 1000))
        var ids: [Int64] = []
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { try check(rc); break }
            ids.append(sqlite3_column_int64(statement, 0))
        }
        return ids
    }
}

/// An open store with every item fetched into one context, for the in-memory benchmark. The objects
/// are only touched inside `context.performAndWait`.
final class PredicateMemoryFixture: @unchecked Sendable {
    let coordinator: StoreCoordinator
    let context: ManagedObjectContext
    let objects: [ManagedObject]
    let condition: Condition
    let expected: Int

    /// Builds a Strata store named `label` and fetches all of its items.
    init(label: String) throws {
        let rows = makeRows()
        let store = try makeStrataStore(TemporaryStore(fresh: label), rows: rows)
        expected = expectedPredicateMatches(rows)
        coordinator = try StoreCoordinator(model: benchmarkModel, url: store.url)
        context = coordinator.newContext()
        let context = context
        objects = try context.performAndWait { try context.fetch(FetchRequest(entityName: "Item")) }
        condition = try makePredicate()
        guard objects.count == objectCount else {
            throw BenchmarkFailure(description: "setup fetched \(objects.count) items, expected \(objectCount)")
        }
    }
}

/// A store plus the expected match count, for the SQL and raw benchmarks.
struct PredicateStore: Sendable {
    let store: TemporaryStore
    let expected: Int

    /// A Strata store named `label`.
    init(strata label: String) throws {
        let rows = makeRows()
        store = try makeStrataStore(TemporaryStore(fresh: label), rows: rows)
        expected = expectedPredicateMatches(rows)
    }

    /// A raw SQLite store named `label`, with the table and index Strata would create.
    init(raw label: String) throws {
        let rows = makeRows()
        store = try makeRawStore(TemporaryStore(fresh: label), rows: rows)
        expected = expectedPredicateMatches(rows)
    }
}

func registerPredicateBenchmarks() {
    // MARK: predicate in memory 100k

    Benchmark("predicate in memory 100k") { (benchmark: Benchmark, fixture: PredicateMemoryFixture) in
        let context = fixture.context
        try context.performAndWait {
            benchmark.startMeasurement()
            // filter(_:_:) binds the condition once, then evaluates each object.
            let matches = try context.filter(fixture.objects, fixture.condition).count
            benchmark.stopMeasurement()
            try checkPredicateCount(matches, expected: fixture.expected, "in-memory evaluation")
        }
    } setup: {
        try PredicateMemoryFixture(label: "predicate-memory")
    } teardown: {
        TemporaryStore.named("predicate-memory").remove()
    }

    // MARK: predicate SQL fetch 100k

    Benchmark("predicate SQL fetch 100k") { (benchmark: Benchmark, fixture: PredicateStore) in
        let coordinator = try StoreCoordinator(model: benchmarkModel, url: fixture.store.url)
        defer { coordinator.close() }
        let context = coordinator.newContext()
        let request = FetchRequest(entityName: "Item", predicate: try makePredicate())
        try context.performAndWait {
            benchmark.startMeasurement()
            let ids = try context.fetchObjectIDs(request)
            benchmark.stopMeasurement()
            try checkPredicateCount(ids.count, expected: fixture.expected, "Strata fetch")
        }
    } setup: {
        try PredicateStore(strata: "predicate-sql")
    } teardown: {
        TemporaryStore.named("predicate-sql").remove()
    }

    // MARK: predicate raw SQL 100k

    Benchmark("predicate raw SQL 100k") { (benchmark: Benchmark, fixture: PredicateStore) in
        let db = try RawDatabase(path: fixture.store.path)
        benchmark.startMeasurement()
        let ids = try db.predicateIDs()
        benchmark.stopMeasurement()
        try checkPredicateCount(ids.count, expected: fixture.expected, "raw SQLite")
    } setup: {
        try PredicateStore(raw: "predicate-raw")
    } teardown: {
        TemporaryStore.named("predicate-raw").remove()
    }
}
