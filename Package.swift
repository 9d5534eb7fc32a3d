// swift-tools-version: 6.1
import CompilerPluginSupport
import PackageDescription

let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "Strata",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "Strata", targets: ["Strata"]),
        .library(name: "StrataSQLite", targets: ["StrataSQLite"]),
        .executable(name: "strata", targets: ["StrataCLI"]),
        .executable(name: "strata-crash-harness", targets: ["StrataCrashHarness"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swiftlang/swift-syntax", from: "602.0.0"),
        .package(url: "https://github.com/pointfreeco/swift-macro-testing", from: "0.7.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite3"])]
        ),
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"]), .brew(["zlib"])]
        ),
        // Strata's page-checksum VFS shim (C: it runs on every page SQLite reads or writes).
        .target(
            name: "CStrataVFS",
            dependencies: ["CSQLite"]
        ),
        // The calling thread's identity without a call (a header of one inline function), for
        // the queue check every object access makes.
        .target(name: "CStrataThread"),
        .target(
            name: "StrataSQLite",
            dependencies: ["CSQLite", "CStrataVFS"],
            swiftSettings: strictSettings
        ),
        // The `@Entity` macro family's implementation: a compiler plug-in, run at build time only.
        .macro(
            name: "StrataMacros",
            dependencies: [
                .product(name: "SwiftSyntax", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftSyntaxBuilder", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
                .product(name: "SwiftDiagnostics", package: "swift-syntax"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "Strata",
            dependencies: ["StrataSQLite", "CZlib", "CStrataThread", "StrataMacros", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "StrataCLI",
            dependencies: [
                "Strata",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "StrataTestSupport",
            dependencies: ["Strata", "StrataSQLite"],
            path: "Tests/StrataTestSupport",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "StrataMacrosTests",
            dependencies: [
                "StrataMacros",
                .product(name: "MacroTesting", package: "swift-macro-testing"),
                .product(name: "SwiftParser", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacroExpansion", package: "swift-syntax"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "StrataSQLiteTests",
            dependencies: ["StrataSQLite", "StrataTestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "StrataTests",
            dependencies: ["Strata", "StrataSQLite", "StrataTestSupport"],
            swiftSettings: strictSettings
        ),
        // What a package that depends on Strata sees: `import Strata`, never `@testable`.
        .testTarget(
            name: "StrataPublicAPITests",
            dependencies: ["Strata", "StrataTestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "StrataCLITests",
            dependencies: ["StrataTestSupport", "StrataSQLite", "Strata"],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "StrataCrashHarness",
            dependencies: ["Strata", "StrataSQLite", "StrataTestSupport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "StrataCrashTests",
            dependencies: ["Strata", "StrataSQLite", "StrataTestSupport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
