import Foundation
import Testing
@testable import Strata

/// Sequences the controller model test found, shrunk, each kept as a test of its own.
@Suite struct ControllerModelFindingsTests {
    /// The 200,000-batch soak's seed 11818200442803700413, shrunk. Main deletes category 2
    /// unsaved (nullify clears its flagged item's category in main); a background save
    /// re-parents that item to category 3. Main's view of category 3's members came from the
    /// writer (which lists the item) without the item's local change, so the list of categories
    /// with a flagged item gained category 3 and kept it after main's save, whose pending nullify
    /// won. A to-many's members now follow their locally changed to-one.
    @Test func aBackgroundReparentToACategoryMainDeletedUnsaved() throws {
        let problems = try ControllerModelRun.replay([
            ModelBatch(.background, [.insertItem(name: 8, group: 5, score: 6, flag: true, parents: [15, nil, 41, nil]), .insertItem(name: 11, group: 4, score: 4, flag: false, parents: [nil, 14, 54, 46])]),
            ModelBatch(.updateSaveOnly, [.deleteParent(.category, 1)]),
            ModelBatch(.background, [.reparent(57, .category, 29)]),
            ModelBatch(.mainEditsSaveToStore, []),
        ])
        #expect(problems.isEmpty, "\(problems)")
    }

    /// The shrunk sequence below, up to its refresh: main keeps a category's rename over its
    /// delete elsewhere, and a new item on main names it.
    static let categoryKeptOverItsDelete: [ModelBatch] = [
        ModelBatch(.mainSaveThenWriterSave, [.deleteParent(.category, 36), .deleteParent(.category, 34)]),
        ModelBatch(.updateSaveThenMainSaveToStore, [.insertParent(.category, name: 4)]),
        ModelBatch(.raceDeleteThenSaved, [.deleteParent(.category, 30), .insertItem(name: 9, group: 3, score: 7, flag: false, parents: [nil, 22, 1, 16])], way: 1),
        ModelBatch(.externalFollowed, []),
        ModelBatch(.mainEditsSaveToStore, []),
        ModelBatch(.raceDeleteThenSaved, []),
        ModelBatch(.updateSaveOnly, [.renameParent(.category, 19, name: 1)]),
        ModelBatch(.background, [.deleteParent(.category, 60)]),
        ModelBatch(.racePendingToOne, [.deleteParent(.owner, 34), .insertItem(name: 0, group: 1, score: 4, flag: true, parents: [38, nil, nil, nil])], way: 2),
    ]

    /// CI's seed 15541614223810524789, shrunk. An update context renames category 4 into main;
    /// a background save deletes it, and main keeps its rename over the delete (in-memory wins);
    /// an item new on main names it; a refresh of the category finds the row gone. The refresh
    /// let go of the category but not of the item's to-one, which named a row not there. A
    /// refresh that finds a row gone now lets go of it as a merged delete does.
    @Test func refreshOfACategoryKeptOverItsDeleteLetsItsItemsGo() throws {
        let problems = try ControllerModelRun.replay(Self.categoryKeptOverItsDelete + [
            ModelBatch(.refresh, [.refresh(entity: .category, 58, merge: true)]),
        ])
        #expect(problems.isEmpty, "\(problems)")
    }

    /// The same, the category refreshed without merging: known gone, it leaves (not a fault
    /// over a row that is not there), and the item lets go of it.
    @Test func refreshDiscardingOfACategoryKeptOverItsDeleteLetsItsItemsGo() throws {
        let problems = try ControllerModelRun.replay(Self.categoryKeptOverItsDelete + [
            ModelBatch(.refresh, [.refresh(entity: .category, 58, merge: false)]),
        ])
        #expect(problems.isEmpty, "\(problems)")
    }

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

    /// Another coordinator edits an item between main's save and the writer's; the writer's
    /// commit touches the same entity. processExternalChanges() afterwards still reports the
    /// other coordinator's edit (our commit used to mark the entity as seen).
    @Test func externalEditBeforeOurCommitStaysNews() throws {
        let problems = try ControllerModelRun.replay([
            ModelBatch(.background, []),
            ModelBatch(.mainSaveThenWriterSave, [.insertItem(name: 11, group: 5, score: 1, flag: false, parents: [1, 36, nil, 7]), .reparent(55, .shelf, 25)], strictPolicy: true),
        ])
        #expect(problems.isEmpty, "\(problems)")
    }

    @Test func externalEditAfterUnsavedDeleteOnMainStaysNews() throws {
        let problems = try ControllerModelRun.replay([
            ModelBatch(.updateSaveToStore, [.insertItem(name: 8, group: 5, score: 0, flag: true, parents: [nil, 14, 15, 51])]),
            ModelBatch(.mainEdits, [.deleteItem(13)]),
            ModelBatch(.mainSaveThenWriterSave, [.setScore(33, 9)], strictPolicy: true),
        ])
        #expect(problems.isEmpty, "\(problems)")
    }

    /// Issue 20, seed 17338306850906677774 (found by CI's 20,000-batch run of this stop, shrunk
    /// to 15 batches): an item deleted on main, re-pointed at another shelf by a batch request,
    /// then saved; a later cascade from that shelf in an update context still listed the item
    /// and failed with `object Item/6 does not exist in the store`. A cascade now skips members
    /// whose rows are gone at every level: there is nothing left to delete.
    @Test func aCascadeSkipsAMemberWhoseRowIsGone() throws {
        let problems = try ControllerModelRun.replay([
            ModelBatch(.batchRequests, []),
            ModelBatch(.mainEditsSaveToStore, [.insertItem(name: 7, group: 0, score: 2, flag: true, parents: [22, nil, 58, 42])]),
            ModelBatch(.mainEdits, [.deleteItem(39)]),
            ModelBatch(.mainEdits, [.insertItem(name: 11, group: 3, score: 6, flag: false, parents: [nil, 42, 46, nil]), .insertParent(.shelf, name: 3)]),
            ModelBatch(.updateSaveToStore, []),
            ModelBatch(.externalCoordinator, [.deleteParent(.shelf, 57)]),
            ModelBatch(.mainEditsSaveToStore, [.insertItem(name: 5, group: 0, score: 1, flag: true, parents: [49, 29, 38, 48])]),
            ModelBatch(.background, [.insertItem(name: 0, group: 4, score: 9, flag: true, parents: [18, nil, nil, 33])]),
            ModelBatch(.updateSaveThenMainSaveToStore, [.insertItem(name: 6, group: 4, score: 7, flag: true, parents: [nil, 27, 31, 47])]),
            ModelBatch(.externalCoordinator, [.deleteParent(.shelf, 58)]),
            ModelBatch(.updateSaveOnly, [.deleteItem(3)]),
            ModelBatch(.batchRequests, [.reparent(43, .shelf, 55)]),
            ModelBatch(.mainEdits, [.insertItem(name: 0, group: 1, score: 7, flag: false, parents: [35, 47, 0, nil])]),
            ModelBatch(.mainSaveThenWriterSave, []),
            ModelBatch(.updateSaveToStore, [.deleteParent(.shelf, 57)]),
        ])
        #expect(problems.isEmpty, "\(problems)")
    }

    /// Seed 5375751684696830537 (found 2026-11-27 by CI's random seeds), shrunk to 12 batches.
    /// An update context moves an item to category 2 and saves into main only; another
    /// coordinator moves the item to category 4 in the store; main merges that (category 4's
    /// loaded members now list the item, while the item's pending to-one still says 2) and saves
    /// to the store, where its move wins. Category 4's member list in main kept the item after
    /// the save, so the next edit on main, evaluated in memory, listed category 4 among the
    /// categories with a flagged item. A save now realigns every loaded member list with the
    /// to-ones it moves (`realignMembers`).
    @Test func aMoveSavedOverAnotherCoordinatorsMoveLeavesTheThirdOwner() throws {
        let problems = try ControllerModelRun.replay([
            ModelBatch(.mainSaveThenWriterSave, [.deleteItem(10)]),
            ModelBatch(.background, [.deleteItem(9)]),
            ModelBatch(.updateSaveToStore, [.deleteParent(.category, 38)]),
            ModelBatch(.mainEdits, [.deleteItem(41)]),
            ModelBatch(.updateSaveThenMainSaveToStore, [.deleteParent(.shelf, 11), .deleteItem(20)]),
            ModelBatch(.background, [.insertItem(name: 9, group: 4, score: 2, flag: true, parents: [9, 54, 35, 36]), .insertItem(name: 10, group: 3, score: 0, flag: true, parents: [60, 37, 19, 63])]),
            ModelBatch(.updateSaveToStore, [.insertParent(.category, name: 2)]),
            ModelBatch(.updateSaveThenMainSaveToStore, [.deleteItem(26)]),
            ModelBatch(.updateSaveOnly, [.insertParent(.category, name: 1), .reparent(5, .category, 33)]),
            ModelBatch(.externalCoordinator, [.reparent(5, .category, 23)]),
            ModelBatch(.mainEditsSaveToStore, []),
            ModelBatch(.mainEditsSaveToStore, [.setName(60, 11)]),
        ])
        #expect(problems.isEmpty, "\(problems)")
    }
}
