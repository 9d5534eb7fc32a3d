/// What a save does when an object it writes was changed by someone else since it was read:
/// another context saved it to the store (optimistic locking on the row's version), or, for a
/// child context, the parent context holds other values for it than the child read.
///
/// The names say who wins. "Ours" is the saving context's values, "theirs" the values the other
/// side holds now (the parent's, or the store's). A conflict is *real* only when some value
/// differs: a row saved again with the same values is no conflict under any policy.
///
/// | policy | our update vs their update | our update vs their delete | our delete vs their update |
/// |---|---|---|---|
/// | ``error`` | throws ``MergeConflictError`` | throws | throws |
/// | ``inMemoryWinsPerProperty`` | keys we changed: ours; others: theirs | throws | our delete wins |
/// | ``storeWinsPerProperty`` | keys they changed: theirs; others: ours | their delete wins | throws |
/// | ``overwrite`` | our whole object | throws | our delete wins |
/// | ``rollback`` | their whole object (our changes to it are dropped) | their delete wins | throws |
///
/// The table holds whether the other side's save reached this context first (a merge: a
/// sibling's save, another process's commit that the follower brought) or this context's save met
/// it in the store first: a merge into an object with pending changes leaves the conflict to the
/// save (see <doc:HistoryAndOtherProcesses>, "Who hears a commit").
///
/// Under every policy, a save is refused when a to-one it writes names an object another save
/// deleted after this context read it (the conflict's `theirs` is ``MergeConflict/Value/missing(_:)``):
/// writing it would leave a dangling reference in the store. Core Data refuses such a save too.
///
/// An object deleted on the other side cannot be updated back into existence: only the policies
/// that let their side win resolve it (the object then leaves the saving context). Nor can our
/// delete be taken back once saved: its delete rules already changed related objects (nullified
/// inverses, cascaded deletes) in the same save, so a policy that would keep their row throws
/// instead; roll back (or refresh) and delete again. Core Data's
/// equivalents are `NSErrorMergePolicy`, `NSMergeByPropertyObjectTrumpMergePolicy`,
/// `NSMergeByPropertyStoreTrumpMergePolicy`, `NSOverwriteMergePolicy` and `NSRollbackMergePolicy`.
public enum MergePolicy: String, Sendable, CaseIterable {
    /// Refuse the save and report every conflict (the default, as in Core Data).
    case error
    /// Per property: the values this context changed win; the other side's changes to the
    /// remaining properties are kept.
    case inMemoryWinsPerProperty
    /// Per property: the values the other side changed win; this context's changes to the
    /// remaining properties are kept.
    case storeWinsPerProperty
    /// This context's whole object replaces theirs.
    case overwrite
    /// Their whole object replaces this context's; its pending changes to that object are dropped.
    case rollback
}

/// One property of one object on which a save met someone else's change.
public struct MergeConflict: Sendable, Equatable, CustomStringConvertible {
    /// A property's value as the conflict reports it.
    public enum Value: Sendable, Equatable, CustomStringConvertible {
        /// An attribute's value (`nil`: no value).
        case attribute(AttributeValue?)
        /// A to-one relationship's destination (`nil`: none).
        case object(ObjectID?)
        /// The whole object is deleted on that side.
        case deleted
        /// A to-one destination that side no longer has: ours names an object another save
        /// deleted after this context read it (a reference no policy can write).
        case missing(ObjectID)
        /// The object is named by a to-one of the other object, saved elsewhere after this
        /// context deleted it: the deleted side's rule (deny, cascade, a required to-one) needs
        /// that object (see <doc:ContextsAndSaving>).
        case referenced(by: ObjectID)

        public var description: String {
            switch self {
            case .attribute(let value): value.map { "\($0)" } ?? "nil"
            case .object(let id): id.map { "\($0)" } ?? "nil"
            case .deleted: "(deleted)"
            case .missing(let id): "\(id) (deleted)"
            case .referenced(let id): "named by \(id)"
            }
        }
    }

    public var objectID: ObjectID
    public var key: String
    /// The value this context is saving.
    public var ours: Value
    /// The value this context read before changing it.
    public var original: Value
    /// The value the other side holds now: the parent context's, or the store's for a root save.
    public var theirs: Value
    /// The value in the store file now.
    public var stored: Value

    public var description: String {
        "\(objectID) \(key): ours \(ours), theirs \(theirs), stored \(stored) (read as \(original))"
    }
}

/// A save refused by ``MergePolicy/error`` (or a conflict no policy can resolve). Nothing was
/// written, and every context is exactly as it was before the save.
public struct MergeConflictError: Error, Sendable, Equatable, CustomStringConvertible {
    public var conflicts: [MergeConflict]

    public var description: String {
        "save refused, \(conflicts.count) merge conflict(s):\n" + conflicts.map { "  " + $0.description }.joined(separator: "\n")
    }
}

/// How one conflicting object ends.
enum ConflictOutcome {
    /// Write this row (our values, merged per property as the policy says).
    case write(RowSnapshot)
    /// Write nothing; the object takes their row.
    case adoptTheirs(RowSnapshot)
    /// Write nothing; the object is gone on their side and leaves ours.
    case adoptDeletion
    /// Our delete goes ahead.
    case delete
}

extension MergePolicy {
    /// Resolves one object. `ours` is `nil` for our delete, `theirs` for their delete; `original`
    /// is what we read. Returns `nil` for no real conflict (ours can be written as is), the
    /// outcome otherwise, and throws the object's conflicts when the policy cannot resolve it.
    func resolve(_ info: EntityInfo, _ id: ObjectID, original: RowSnapshot, ours: RowSnapshot?, theirs: RowSnapshot?,
                 stored: () throws -> RowSnapshot?) throws -> ConflictOutcome? {
        if let theirs, theirs == original { return nil }
        if ours == nil, theirs == nil { return .adoptDeletion }
        func conflicts() throws -> [MergeConflict] {
            let stored = try stored()
            return MergePolicy.conflicts(info, id, original: original, ours: ours, theirs: theirs, stored: stored)
        }
        switch (ours, theirs) {
        case let (ours?, theirs?):
            switch self {
            case .error: throw MergeConflictError(conflicts: try conflicts())
            case .overwrite: return .write(ours)
            case .rollback: return .adoptTheirs(theirs)
            case .inMemoryWinsPerProperty: return MergePolicy.outcome(MergePolicy.merge(winner: ours, other: theirs, original: original), theirs)
            case .storeWinsPerProperty: return MergePolicy.outcome(MergePolicy.merge(winner: theirs, other: ours, original: original), theirs)
            }
        case (_?, nil):
            switch self {
            case .rollback, .storeWinsPerProperty: return .adoptDeletion
            case .error, .overwrite, .inMemoryWinsPerProperty: throw MergeConflictError(conflicts: try conflicts())
            }
        case (nil, _?):
            switch self {
            case .error, .rollback, .storeWinsPerProperty: throw MergeConflictError(conflicts: try conflicts())
            case .overwrite, .inMemoryWinsPerProperty: return .delete
            }
        case (nil, nil):
            return .adoptDeletion
        }
    }

    /// Writing `merged` when it differs from `theirs`; taking theirs (nothing to write) otherwise.
    static func outcome(_ merged: RowSnapshot, _ theirs: RowSnapshot) -> ConflictOutcome {
        merged == theirs ? .adoptTheirs(theirs) : .write(merged)
    }

    /// Per property: `winner`'s value where `winner` changed it from `original`, else `other`'s.
    static func merge(winner: RowSnapshot, other: RowSnapshot, original: RowSnapshot) -> RowSnapshot {
        var merged = other
        for i in merged.attributes.indices where winner.attributes[i] != original.attributes[i] {
            merged.setAttribute(winner.attributes[i], at: i)
        }
        for i in merged.toOnes.indices where winner.toOnes[i] != original.toOnes[i] {
            merged.setToOne(winner.toOnes[i], at: i)
        }
        return merged
    }

    /// One conflict per key that either side changed from `original` (or every key when a side
    /// deleted the object).
    static func conflicts(_ info: EntityInfo, _ id: ObjectID, original: RowSnapshot, ours: RowSnapshot?,
                          theirs: RowSnapshot?, stored: RowSnapshot?) -> [MergeConflict] {
        var result: [MergeConflict] = []
        func attribute(_ row: RowSnapshot?, _ i: Int) -> MergeConflict.Value { row.map { .attribute($0.attributes[i]) } ?? .deleted }
        func object(_ row: RowSnapshot?, _ i: Int) -> MergeConflict.Value {
            guard let row else { return .deleted }
            return .object(row.toOnes[i].map { ObjectID(entity: info.toOneDestinationNames[i], primaryKey: $0) })
        }
        let eitherDeleted = ours == nil || theirs == nil
        for (i, property) in info.attributes.enumerated()
        where eitherDeleted || ours?.attributes[i] != original.attributes[i] || theirs?.attributes[i] != original.attributes[i] {
            result.append(MergeConflict(objectID: id, key: property.name, ours: attribute(ours, i), original: attribute(original, i),
                                        theirs: attribute(theirs, i), stored: attribute(stored, i)))
        }
        for (i, relationship) in info.toOnes.enumerated()
        where eitherDeleted || ours?.toOnes[i] != original.toOnes[i] || theirs?.toOnes[i] != original.toOnes[i] {
            result.append(MergeConflict(objectID: id, key: relationship.name, ours: object(ours, i), original: object(original, i),
                                        theirs: object(theirs, i), stored: object(stored, i)))
        }
        return result
    }
}
