import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// The library holds no descriptor past `close()`: a coordinator opened and closed many times,
/// each time with everything that opens files (the store connection, a results controller with a
/// cache name, its cache write, a commit and the cache refresh it schedules, which opens a
/// read-only connection of its own), leaves the process with the descriptors it had.
///
/// Counted in an exit test's child process, where nothing else opens or closes descriptors
/// meanwhile. `STRATA_FD_ITERATIONS` sizes the loop (default 10,000, about 45 s on a 2-core VM;
/// the sanitizer runs in CI use fewer). The store lives in `/dev/shm` where there is one: the
/// test is about descriptors, and a disk's `fsync`s would triple its time.
@Suite struct CoordinatorDescriptorTests {
    static let defaultIterations = 10_000

    @Test func openingAndClosingACoordinatorLeavesNoDescriptorOpen() async throws {
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            let iterations = ProcessInfo.processInfo.environment["STRATA_FD_ITERATIONS"].flatMap { Int($0) }
                ?? CoordinatorDescriptorTests.defaultIterations
            let line = CoordinatorDescriptorTests.cycle(iterations)
            FileHandle.standardOutput.write(Data((line + "\n").utf8))
        }
        let output = String(decoding: result?.standardOutputContent ?? [], as: UTF8.self)
        let line = try #require(output.split(separator: "\n").last(where: { $0.hasPrefix("coordinator-descriptors: ") }))
        print(line)
        #expect(line.contains(" problems=0 "), "\(line)")
        #expect(line.contains(" added=none"), "\(line)")
    }

    /// Opens, uses and closes a coordinator `iterations` times; one summary line:
    /// `coordinator-descriptors: cycles=N before=B after=A problems=P seconds=S added=…`.
    static func cycle(_ iterations: Int) -> String {
        let directory = TemporaryDirectory(inMemory: "strata-fd")
        let url = directory.file("goods.sqlite")
        let request = FetchRequest(entityName: "Good", sortKeys: [.ascending("category.name"), .ascending("name")])
        var problems: [String] = []
        let clock = ContinuousClock()
        do {
            let seeding = try PersistentContainer(model: TestModels.goods(), url: url)
            try SectionCacheSmokeTests.seed(seeding)
            seeding.coordinator.close()
        } catch {
            return "coordinator-descriptors: cycles=0 before=0 after=0 problems=1 seconds=0 added=none (seeding failed: \(error))"
        }
        let before = OpenDescriptors.list()
        let started = clock.now
        for iteration in 0..<iterations {
            do {
                let coordinator = try StoreCoordinator(model: TestModels.goods(), url: url)
                // No cache: the fetch rebuilds it and schedules its write.
                try coordinator.deleteCache(named: "goods")
                let context = coordinator.newContext()
                let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: context,
                                                          sectionNameKeyPath: "category.name", cacheName: "goods")
                try context.performAndWait {
                    try controller.performFetch()
                    if controller.cacheStatus != .rebuilt(.missing) { problems.append("\(iteration): fetch \(controller.cacheStatus)") }
                    // A commit to Good: the cache refresh it schedules reads on its own connection.
                    let good = try context.fetch(FetchRequest(entityName: "Good", sortKeys: [.ascending("name")], fetchLimit: 1))[0]
                    try good.setValue(Int64(iteration), forKey: "number")
                    try context.save()
                }
                coordinator.waitForCacheWrites()
                coordinator.close()
            } catch {
                problems.append("\(iteration): \(error)")
            }
            if problems.count > 5 { break }
        }
        let seconds = Double((clock.now - started).components.seconds) + Double((clock.now - started).components.attoseconds) / 1e18
        // The refresh of the last commit wrote a cache that a new controller is served from.
        do {
            let coordinator = try StoreCoordinator(model: TestModels.goods(), url: url)
            let context = coordinator.newContext()
            let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: context,
                                                      sectionNameKeyPath: "category.name", cacheName: "goods")
            let status = try context.performAndWait {
                try controller.performFetch()
                return controller.cacheStatus
            }
            if status != .served { problems.append("after the loop: \(status), not served from the refreshed cache") }
            coordinator.close()
        } catch {
            problems.append("after the loop: \(error)")
        }
        let after = OpenDescriptors.list()
        let added = OpenDescriptors.added(since: before, now: after)
        return "coordinator-descriptors: cycles=\(iterations) before=\(before.count) after=\(after.count) problems=\(problems.count) "
            + "seconds=\(String(format: "%.1f", seconds)) added=\(added.isEmpty ? "none" : added.prefix(10).joined(separator: ", "))"
            + (problems.isEmpty ? "" : " first problems: \(problems.prefix(5).joined(separator: "; "))")
    }
}
