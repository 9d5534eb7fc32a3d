import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// Saves that meet no real conflict, and saves after a resolved one.
extension MergePolicyTests {
    // MARK: 4. No real conflict

    /// A changes X's age and saves, then puts it back and saves again: the row's version moved but
    /// its values are the ones B read, so B's save is no conflict under any policy.
    @Test(arguments: MergePolicy.allCases, Layout.allCases)
    func rowSavedAgainWithTheValuesWeReadIsNoConflict(policy: MergePolicy, layout: Layout) throws {
        let f = try StoreFixture(layout)
        let id = try f.seedAnn()
        let x = try f.b.performAndWait { try f.b.existingObject(with: id) }
        try f.a.performAndWait {
            let ann = try f.a.existingObject(with: id)
            try ann.setValue(Int16(40), forKey: "age")
            try f.a.save()
            try ann.setValue(Int16(30), forKey: "age")
            try f.a.save()
        }
        #expect(try f.generation() == 3)
        let result = try f.b.performAndWait {
            try x.setValue(180.0, forKey: "height")
            f.b.mergePolicy = policy
            let result = try f.b.save()
            #expect(try Person(x) == Person.ann.with(height: 180))
            #expect(!f.b.hasChanges)
            return result
        }
        #expect(result?.generation == 4)
        #expect(try f.stored(id) == Person.ann.with(height: 180))
        #expect(try f.generation() == 4)
    }

    /// Which side changes only the many-to-many `Employee.projects ↔ Project.members` (a join
    /// table): X's row and version are untouched by it.
    enum JoinChange: String, CaseIterable, Sendable {
        /// A adds Apollo to X's projects, saves; B changes X's age.
        case theirsFromTheEmployee
        /// A adds X to Apollo's members, saves; B changes X's age.
        case theirsFromTheProject
        /// A changes X's age, saves; B adds Apollo to X's projects.
        case ours
    }

    @Test(arguments: JoinChange.allCases, Layout.allCases)
    func toManyOnlyChangeIsNoVersionConflict(change: JoinChange, layout: Layout) throws {
        let f = try StoreFixture(layout)
        let (id, project) = try f.a.performAndWait {
            let apollo = try f.a.insert("Project")
            try apollo.setValue("Apollo", forKey: "title")
            let ann = try Self.insertEmployee(f.a, .ann, save: false)
            try f.a.save()
            return (ann.objectID, apollo.objectID)
        }
        let x = try f.b.performAndWait { try f.b.existingObject(with: id) }
        try f.a.performAndWait {
            let ann = try f.a.existingObject(with: id), apollo = try f.a.existingObject(with: project)
            switch change {
            case .theirsFromTheEmployee: try ann.setValue([apollo], forKey: "projects")
            case .theirsFromTheProject: try apollo.setValue([ann], forKey: "members")
            case .ours: try ann.setValue(Int16(40), forKey: "age")
            }
            try f.a.save()
        }
        #expect(try f.generation() == 2)
        try f.b.performAndWait {
            f.b.mergePolicy = .error
            if change == .ours {
                try x.setValue([try f.b.existingObject(with: project)], forKey: "projects")
            } else {
                try x.setValue(Int16(50), forKey: "age")
            }
            let result = try f.b.save()
            #expect(result?.generation == 3)
            #expect(!f.b.hasChanges)
        }
        #expect(try f.generation() == 3)
        #expect(try f.stored(id) == Person.ann.with(age: change == .ours ? 40 : 50))
        #expect(try f.storedSnapshot(id)?["projects"] == [project].description)
        #expect(try f.storedSnapshot(project)?["members"] == [id].description)
    }

    /// A changes X's age to 40 and saves; B, which read X before, changes its age to 50 and adds
    /// Apollo to its projects. Membership is not part of X's row: whatever the policy makes of the
    /// row conflict, B's new join row is written (and kept in memory on both sides).
    @Test(arguments: [MergePolicy.inMemoryWinsPerProperty, .storeWinsPerProperty, .overwrite, .rollback], Layout.allCases)
    func rowConflictKeepsOurJoinChange(policy: MergePolicy, layout: Layout) throws {
        let f = try StoreFixture(layout)
        let (id, project) = try f.a.performAndWait {
            let apollo = try f.a.insert("Project")
            try apollo.setValue("Apollo", forKey: "title")
            let ann = try Self.insertEmployee(f.a, .ann, save: false)
            try f.a.save()
            return (ann.objectID, apollo.objectID)
        }
        let x = try f.b.performAndWait { try f.b.existingObject(with: id) }
        try f.a.performAndWait {
            try f.a.existingObject(with: id).setValue(Int16(40), forKey: "age")
            try f.a.save()
        }
        let age: Int16 = policy == .inMemoryWinsPerProperty || policy == .overwrite ? 50 : 40
        try f.b.performAndWait {
            let apollo = try f.b.existingObject(with: project)
            try x.setValue(Int16(50), forKey: "age")
            try x.setValue([apollo], forKey: "projects")
            f.b.mergePolicy = policy
            let result = try f.b.save()
            #expect(result?.generation == 3)
            #expect(!f.b.hasChanges)
            #expect(try Person(x) == Person.ann.with(age: age))
            #expect(try Self.snapshot(x)["projects"] == [project].description)
            #expect(try Self.snapshot(apollo)["members"] == [id].description)
        }
        #expect(try f.generation() == 3)
        #expect(try f.stored(id) == Person.ann.with(age: age))
        #expect(try f.storedSnapshot(id)?["projects"] == [project].description)
        #expect(try f.storedSnapshot(project)?["members"] == [id].description)
    }

    // MARK: 5. After a resolved conflict

    /// B resolves a conflict with A's save; B's object then carries the row's current version: B
    /// changes the same keys again and saves under `.error` without a conflict. A, which read
    /// before B's saves, then conflicts with exactly B's values.
    @Test(arguments: [MergePolicy.inMemoryWinsPerProperty, .storeWinsPerProperty, .overwrite, .rollback], Layout.allCases)
    func resolvedConflictLeavesTheVersionsCurrent(policy: MergePolicy, layout: Layout) throws {
        let f = try StoreFixture(layout)
        let id = try f.seedAnn()
        let x = try f.b.performAndWait { try f.b.existingObject(with: id) }
        try f.a.performAndWait {
            try f.a.existingObject(with: id).setValue(Int16(40), forKey: "age")
            try f.a.save()
        }
        try f.b.performAndWait {
            try x.setValue(180.0, forKey: "height")
            f.b.mergePolicy = policy
            try f.b.save()
            f.b.mergePolicy = .error
            try x.setValue(Int16(45), forKey: "age")
            try x.setValue(190.0, forKey: "height")
            try f.b.save()
            try x.setValue(Int16(46), forKey: "age")
            try f.b.save()
            #expect(try Person(x) == Person.ann.with(age: 46, height: 190))
        }
        let bSaved = Person.ann.with(age: 46, height: 190)
        #expect(try f.stored(id) == bSaved)
        try f.a.performAndWait {
            let ann = try f.a.existingObject(with: id)
            #expect(try Person(ann) == Person.ann.with(age: 40))     // A never merged B's saves
            try ann.setValue("Anna", forKey: "name")
            let result = Self.attempt { try f.a.save() }
            #expect(Self.conflicts(result) == [
                MergeConflict(objectID: id, key: "name", ours: .attribute(.string("Anna")), original: .attribute(.string("Ann")),
                              theirs: .attribute(.string("Ann")), stored: .attribute(.string("Ann"))),
                MergeConflict(objectID: id, key: "age", ours: .attribute(.int16(40)), original: .attribute(.int16(40)),
                              theirs: .attribute(.int16(46)), stored: .attribute(.int16(46))),
                MergeConflict(objectID: id, key: "height", ours: .attribute(.double(170)), original: .attribute(.double(170)),
                              theirs: .attribute(.double(190)), stored: .attribute(.double(190))),
            ])
            f.a.mergePolicy = .inMemoryWinsPerProperty
            try f.a.save()
            #expect(try Person(ann) == bSaved.with(name: "Anna"))
        }
        #expect(try f.stored(id) == bSaved.with(name: "Anna"))
        // And B, behind A now, conflicts in turn.
        try f.b.performAndWait {
            try x.setValue(Int16(50), forKey: "age")
            let result = Self.attempt { try f.b.save() }
            #expect(Self.conflicts(result)?.map(\.key) == ["name", "age"])
        }
    }
}
