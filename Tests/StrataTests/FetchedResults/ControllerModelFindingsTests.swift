import Foundation
import Testing
@testable import Strata

/// Sequences the controller model test found, shrunk, each kept as a test of its own.
@Suite struct ControllerModelFindingsTests {
    /// A category refreshed without merging while an item new in main points at it: the
    /// category's members still list the item (they follow the item's to-one), so a list of
    /// categories with a flagged item shows it after the save.
    @Test func refreshDiscardingKeepsMembersOtherObjectsChanged() throws {
        let problems = try ControllerModelRun.replay([
            ModelBatch(.refresh, [.insertItem(name: 2, group: 5, score: 7, flag: true, parents: [20, nil, 44, nil]), .refresh(entity: .category, 32, merge: false)]),
            ModelBatch(.updateSaveToStore, []),
        ])
        #expect(problems.isEmpty, "\(problems)")
    }

    /// An item edited on main and deleted by another coordinator: main's save into the writer and
    /// the writer's save find the row gone and drop the item; every controller drops it too.
    @Test func updateOfARowDeletedElsewhereLeavesEveryList() throws {
        let problems = try ControllerModelRun.replay([
            ModelBatch(.updateSaveThenMainSaveToStore, [.deleteItem(55)]),
            ModelBatch(.mainEdits, [.setFlag(28, false)]),
            ModelBatch(.externalCoordinator, [.deleteItem(16)]),
            ModelBatch(.mainSaveThenWriterSave, []),
        ])
        #expect(problems.isEmpty, "\(problems)")
    }
}
