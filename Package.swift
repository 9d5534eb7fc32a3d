// swift-tools-version: 6.1
import CompilerPluginSupport
import Foundation
import PackageDescription

// `STRATA_PREBUILT_MACROS=/path/to/StrataMacros-tool`: use an `@Entity` plug-in already built
// (by a plain debug build) instead of building it, and swift-syntax with it, again. CI's
// sanitizer builds and the performance gate's release build pass it (with
// `-Xswiftc -load-plugin-executable -Xswiftc PATH#StrataMacros`): the plug-in runs in the
// compiler at build time, so a sanitizer or the optimiser has nothing to add to it, and each of
// those builds spent most of its time compiling swift-syntax. The macro's own tests
// (StrataMacrosTests) are left out of such builds; the plain build runs them.
let prebuiltMacros = ProcessInfo.processInfo.environment["STRATA_PREBUILT_MACROS"].flatMap { $0.isEmpty ? nil : $0 }

// `STRATA_WITHOUT_SYNC=1`: leave out StrataSync, its tests and postgres-nio (SwiftNIO with it).
// CI's sanitizer builds set it: none of their suites touches sync, and each would spend minutes
// compiling SwiftNIO again (the performance gate's build of StrataVersus never needs it). `strata
// sync` is then absent from the command (it is built when StrataSync is).
let withoutSync = ProcessInfo.processInfo.environment["STRATA_WITHOUT_SYNC"].map { !$0.isEmpty } ?? false

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
    ] + (withoutSync ? [] : [
        .library(name: "StrataSync", targets: ["StrataSync"]),
    ]) + [
        // The test suites' child processes (StrataCrashHarness, StrataHistoryWriter) are
        // executable targets only: `swift test` builds them, and no dependent sees them.
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ] + (withoutSync ? [] : [
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
    ]) + (prebuiltMacros != nil ? [] : [
        .package(url: "https://github.com/swiftlang/swift-syntax", from: "602.0.0"),
        .package(url: "https://github.com/pointfreeco/swift-macro-testing", from: "0.7.0"),
    ]),
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
        .target(
            name: "Strata",
            dependencies: ["StrataSQLite", "CZlib", "CStrataThread", .product(name: "Logging", package: "swift-log")]
                + (prebuiltMacros != nil ? [] : ["StrataMacros"]),
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "StrataCLI",
            dependencies: [
                "Strata",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ] + (withoutSync ? [] : ["StrataSync"]),
            swiftSettings: strictSettings
        ),
        .target(
            name: "StrataTestSupport",
            dependencies: ["Strata", "StrataSQLite"],
            path: "Tests/StrataTestSupport",
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
        // The writing child of the two-process external-changes test (ExternalChangesProcessTests).
        .executableTarget(
            name: "StrataHistoryWriter",
            dependencies: ["Strata", "StrataSQLite", "StrataTestSupport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "StrataCrashTests",
            dependencies: ["Strata", "StrataSQLite", "StrataTestSupport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings
        ),
    ] + (withoutSync ? [] : [
        // Sync through PostgreSQL: its own library; the Strata core does not depend on it.
        .target(
            name: "StrataSync",
            dependencies: ["Strata", .product(name: "PostgresNIO", package: "postgres-nio"), .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings
        ),
        // The replica child of the sync convergence test (SyncConvergenceTests).
        .executableTarget(
            name: "StrataSyncReplica",
            dependencies: ["Strata", "StrataSync", "StrataTestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "StrataSyncTests",
            dependencies: ["Strata", "StrataSync", "StrataTestSupport", .product(name: "PostgresNIO", package: "postgres-nio"),
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings
        ),
    ]) + (prebuiltMacros != nil ? [] : [
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
    ]),
    swiftLanguageModes: [.v6]
)
