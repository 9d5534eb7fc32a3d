// StrataCrashHarness: the child process of the crash suite (Tests/StrataCrashTests).
//
// It opens a store through a PersistentContainer, keeps a results controller with a cache name
// on main, runs a seeded workload (update → main → writer saves) and acknowledges every commit on
// stdout after COMMIT returned:
//
//     ack <generation> <marker> <section counts, comma-separated>
//
// The parent kills it at a named kill point (STRATA_KILL_POINT=name[:nth], armed by the library)
// or at a random time, then checks the store. Usage:
//
//     StrataCrashHarness --store PATH [--seed N] [--commits N] [--journal wal|delete]
//                          [--synchronous full|normal]
//                          [--mode run|recover|seed-scenario|torn-commit|migrate|migrate-mapping|exit-without-close|flips|add-checksums]

import Foundation
import Logging
@_spi(Testing) import Strata
import StrataTestSupport

// The crash suite's kill points: a program linking Strata ignores STRATA_KILL_POINT unless it
// opts in, as this harness does.
KillPoint.armFromEnvironment()
let arguments = Array(CommandLine.arguments.dropFirst())
let options: HarnessOptions
do {
    options = try HarnessOptions.parse(arguments)
} catch {
    FileHandle.standardError.write(Data("StrataCrashHarness: \(error)\n\(HarnessOptions.usage)\n".utf8))
    exit(64)
}

if options.mode == .exitWithoutClose {
    // Before the logging bootstrap: this mode is an app that never configures swift-log. It
    // returns, and main ends here (no exit call, no close()).
    do {
        try exitWithoutClose(options)
    } catch {
        FileHandle.standardError.write(Data("StrataCrashHarness: \(error)\n".utf8))
        exit(1)
    }
} else {
    // Only warnings and errors reach stderr: the parent reads it only to explain a failure.
    LoggingSystem.bootstrap { label in
        var handler = StreamLogHandler.standardError(label: label)
        handler.logLevel = .warning
        return handler
    }

    do {
        if options.mode == .tornCommit { try tornCommit(options) }
        if options.mode == .addChecksums {
            let changed = try StoreCoordinator.addPageChecksums(toStoreAt: URL(fileURLWithPath: options.store))
            FileHandle.standardOutput.write(Data("checksums added=\(changed)\n".utf8))
            exit(0)
        }
        if options.mode == .flips {
            try flipCampaign(options)
            exit(0)
        }
        if options.mode == .migrate || options.mode == .migrateMapping {
            // Opens the goods store with the next model version, migrating it (kill points migration.*):
            // inferred (one transaction) or through a mapping model (built beside, then swapped in).
            var storeOptions = StoreOptions()
            storeOptions.journalMode = options.journal == .delete ? .delete : .wal
            storeOptions.synchronous = options.synchronous == .full ? .full : .normal
            storeOptions.migration = options.mode == .migrate ? .lightweight() : .mapped(mappings: [TestModels.goodsSectionMapping()])
            let coordinator = try StoreCoordinator(model: TestModels.goodsWithSectionName(), url: URL(fileURLWithPath: options.store),
                                                   options: storeOptions)
            FileHandle.standardOutput.write(Data("migrated \(try coordinator.metadata().modelVersion)\n".utf8))
            coordinator.close()
            exit(0)
        }
        try Harness(options).run()
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("StrataCrashHarness: \(error)\n".utf8))
        exit(1)
    }
}
