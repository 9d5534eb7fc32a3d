import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// Every `migration.*` kill point, in every configuration: the harness migrates a goods store to
/// the next model version (a new required attribute with a default) and is killed there. After
/// each kill the store opens as the old model with all its data, or as the new model with all of
/// it — never a mix — and it can then be migrated (again) to the new model.
@Suite(.serialized, .enabled(if: ProcessInfo.processInfo.environment["STRATA_CRASH_SUITE"] == "1"))
struct MigrationCrashTests {
    static let points = ["migration.begin", "migration.tables.renamed", "migration.schema.created", "migration.rows.copied",
                         "migration.old.dropped", "migration.meta.updated", "migration.committed"]

    /// The mapping path's points: the new store is built beside the old one and renamed over it.
    static let mappingPoints = ["migration.begin", "migration.mapping.schema", "migration.mapping.rows",
                                "migration.mapping.built", "migration.mapping.swapped"]

    @Test func everyMigrationKillPointLeavesTheOldStoreOrTheNewOne() throws {
        let tally = try Self.killEveryPoint(Self.points, harnessMode: "migrate", migration: .lightweight())
        print("migration-crash: kill-points-hit=\(tally.hit)/\(Self.points.count * CrashConfiguration.all.count) old=\(tally.old) new=\(tally.new) problems=\(tally.problems.count)")
        #expect(tally.hit == Self.points.count * CrashConfiguration.all.count)
        #expect(tally.problems.isEmpty, "\(tally.problems)")
    }

    @Test func everyMappingMigrationKillPointLeavesTheOldStoreOrTheNewOne() throws {
        let tally = try Self.killEveryPoint(Self.mappingPoints, harnessMode: "migrate-mapping",
                                            migration: .mapped(mappings: [TestModels.goodsSectionMapping()]))
        print("mapping-migration-crash: kill-points-hit=\(tally.hit)/\(Self.mappingPoints.count * CrashConfiguration.all.count) old=\(tally.old) new=\(tally.new) problems=\(tally.problems.count)")
        #expect(tally.hit == Self.mappingPoints.count * CrashConfiguration.all.count)
        #expect(tally.problems.isEmpty, "\(tally.problems)")
        // The swap happened at the last point only: before it, the old store; after, the new one.
        #expect(tally.new == CrashConfiguration.all.count)
    }

    /// Warms a goods store, kills the harness migrating it at each of `points` in every
    /// configuration, then checks the store opens as one version with all acknowledged data and
    /// migrates afterwards.
    static func killEveryPoint(_ points: [String], harnessMode: String, migration: MigrationMode) throws
        -> (hit: Int, old: Int, new: Int, problems: [String]) {
        let old = TestModels.goods(), new = TestModels.goodsWithSectionName()
        var hit = 0, asOld = 0, asNew = 0, problems: [String] = []
        for configuration in CrashConfiguration.all {
            for point in points {
                let directory = TemporaryDirectory("strata-crash-migration")
                let store = directory.file("goods.sqlite")
                let warm = try HarnessProcess.run(store: store, configuration: configuration, seed: 7, commits: 6)
                #expect(warm.ending == .exited(0), "\(configuration): \(warm.summary)")
                let acked = Set(warm.acks.map(\.marker))
                let killed = try HarnessProcess.run(store: store, configuration: configuration, mode: harnessMode, seed: 8, commits: 0,
                                                    killPoint: point)
                if killed.ending == .killed { hit += 1 } else { problems.append("\(configuration) \(point): not hit, \(killed.summary)") }

                // Which model does the store hold now? (The inspector rolls a hot journal back first.)
                let hash = try StoreInspector(url: store).metadata().modelHash
                let model: Model
                if hash == old.versionHash {
                    model = old
                    asOld += 1
                } else if hash == new.versionHash {
                    model = new
                    asNew += 1
                } else {
                    problems.append("\(configuration) \(point): the store holds model hash \(hash), neither version")
                    continue
                }
                problems += try check(store, as: model, configuration: configuration, acked: acked, "\(configuration) \(point)")
                // Whatever it holds, opening with the new model (migrating if needed) works and keeps everything.
                problems += try check(store, as: new, configuration: configuration, acked: acked, "\(configuration) \(point) re-migrated",
                                      migration: migration)
            }
        }
        return (hit, asOld, asNew, problems)
    }

    /// Opens `store` as `model` and checks integrity, every acknowledged marker, and (for the new
    /// model) that every good has the filled default.
    static func check(_ store: URL, as model: Model, configuration: CrashConfiguration, acked: Set<String>, _ label: String,
                      migration: MigrationMode = .none) throws -> [String] {
        var options = configuration.storeOptions
        options.migration = migration
        let coordinator: StoreCoordinator
        do {
            coordinator = try StoreCoordinator(model: model, url: store, options: options)
        } catch {
            return ["\(label): opening as \(model.versionIdentifier) failed: \(error)"]
        }
        defer { coordinator.close() }
        var problems: [String] = []
        let context = coordinator.newContext()
        try context.performAndWait {
            let goods = try context.fetch(FetchRequest(entityName: "Good"))
            let names = Set(try goods.compactMap { try $0.value(forKey: "name") as? String })
            let missing = acked.subtracting(names)
            if !missing.isEmpty { problems.append("\(label): missing \(missing.sorted())") }
            if model.entity(named: "Good")?.attributes.contains(where: { $0.name == "sectionName" }) == true {
                let sections = Set(try goods.map { try $0.value(forKey: "sectionName") as? String })
                if sections != ["Staff"] && !goods.isEmpty { problems.append("\(label): sectionName values \(sections)") }
            }
        }
        return problems
    }
}
