// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "StrataBenchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "Strata", path: ".."),
        .package(url: "https://github.com/ordo-one/package-benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        // Only for the StrataVersus comparison runner (issue 9); never a dependency of Strata itself.
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
    ],
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
    ],
    swiftLanguageModes: [.v6]
)
