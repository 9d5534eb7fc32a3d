// swift-tools-version: 6.1
import Foundation
import PackageDescription

// `STRATA_WITHOUT_SYNC=1` (see the root Package.swift) leaves StrataSync out of Strata: the sync
// benchmark (StrataSyncBench) and postgres-nio are then left out here too, so that a build of
// StrataVersus alone (the performance gate) still resolves.
let withoutSync = ProcessInfo.processInfo.environment["STRATA_WITHOUT_SYNC"].map { !$0.isEmpty } ?? false

let package = Package(
    name: "StrataBenchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "Strata", path: ".."),
        .package(url: "https://github.com/ordo-one/package-benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        // Only for the StrataVersus comparison runner (issue 9); never a dependency of Strata itself.
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
    ] + (withoutSync ? [] : [
        // Only for StrataSyncBench (its floor writes and reads PostgreSQL directly).
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
    ]),
    targets: [
        // The raw SQLite C API, for the baseline measurements (the root package's CSQLite is not a product).
        .systemLibrary(
            name: "CSQLiteRaw",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite3"])]
        ),
        .executableTarget(
            name: "StrataBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "package-benchmark"),
                .product(name: "Strata", package: "Strata"),
                "CSQLiteRaw",
            ],
            path: "Benchmarks/StrataBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "package-benchmark")]
        ),
        // `Benchmarks/run`: Strata against raw SQLite and GRDB on the nycflights13 data (issue 9).
        .executableTarget(
            name: "StrataVersus",
            dependencies: [
                .product(name: "Strata", package: "Strata"),
                .product(name: "GRDB", package: "GRDB.swift"),
                "CSQLiteRaw",
            ],
            path: "Sources/StrataVersus"
        ),
    ] + (withoutSync ? [] : [
        // `swift build -c release --product StrataSyncBench`: StrataSync's push, pull and
        // change-to-delegate latency against a PostgreSQL server it starts, beside postgres-nio's floor.
        .executableTarget(
            name: "StrataSyncBench",
            dependencies: [
                .product(name: "Strata", package: "Strata"),
                .product(name: "StrataSync", package: "Strata"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            path: "Sources/StrataSyncBench"
        ),
    ]),
    swiftLanguageModes: [.v6]
)
