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

    @Test func everyMigrationKillPointLeavesTheOldStoreOrTheNewOne() throws {
        let old = TestModels.goods(), new = TestModels.goodsWithSectionName()
        var hit = 0, asOld = 0, asNew = 0, problems: [String] = []
        for configuration in CrashConfiguration.all {
            for point in Self.points {
                let directory = TemporaryDirectory("strata-crash-migration")
                let store = directory.file("goods.sqlite")
                let warm = try HarnessProcess.run(store: store, configuration: configuration, seed: 7, commits: 6)
                #expect(warm.ending == .exited(0), "\(configuration): \(warm.summary)")
                let acked = Set(warm.acks.map(\.marker))
                let killed = try HarnessProcess.run(store: store, configuration: configuration, mode: "migrate", seed: 8, commits: 0,
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
                problems += try Self.check(store, as: model, configuration: configuration, acked: acked, "\(configuration) \(point)")
                // Whatever it holds, opening with the new model (migrating if needed) works and keeps everything.
                problems += try Self.check(store, as: new, configuration: configuration, acked: acked, "\(configuration) \(point) re-migrated",
                                           migrate: true)
            }
        }
        print("migration-crash: kill-points-hit=\(hit)/\(Self.points.count * CrashConfiguration.all.count) old=\(asOld) new=\(asNew) problems=\(problems.count)")
        #expect(hit == Self.points.count * CrashConfiguration.all.count)
        #expect(problems.isEmpty, "\(problems)")
    }

    /// Opens `store` as `model` and checks integrity, every acknowledged marker, and (for the new
    /// model) that every good has the filled default.
    static func check(_ store: URL, as model: Model, configuration: CrashConfiguration, acked: Set<String>, _ label: String,
                      migrate: Bool = false) throws -> [String] {
        var options = configuration.storeOptions
        if migrate { options.migration = .lightweight() }
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
