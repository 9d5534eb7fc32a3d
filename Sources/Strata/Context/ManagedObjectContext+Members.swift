internal import Foundation

/// After a save: the member lists of to-manys this context has loaded, kept in line with what
/// the save made the level above's (objects it moved, objects it deleted).
extension ManagedObjectContext {
    /// The saved objects whose to-one a save moves (its value read from the level above, before,
    /// differs from the one saved): each becomes a member of its new owner's loaded to-many only.
    struct MemberMoves {
        /// Destination entity → index of the inverse to-many there → (moved object's key, its owner now).
        var byEntity: [String: [Int: [(key: Int64, owner: Int64?)]]] = [:]

        mutating func note(_ object: ManagedObject, final: RowSnapshot) {
            guard let before = object.committed, !object.info.toOneInverseSlots.isEmpty else { return }
            for (slot, inverse) in object.info.toOneInverseSlots.enumerated() {
                guard case .toMany(let index)? = inverse, before.toOnes[slot] != final.toOnes[slot] else { continue }
                byEntity[object.info.toOneDestinations[slot], default: [:]][index, default: []]
                    .append((object.primaryKey, final.toOnes[slot]))
            }
        }
    }

    /// After a save, before its values become the committed ones: every loaded to-many of this
    /// context lists a moved object only if it is the object's owner now. While the move was
    /// pending, reads already followed the object's to-one (``toManyKeys(_:_:)``); but a merge
    /// could have put the object in a third owner's list meanwhile (another coordinator moved
    /// the row there under the local change), and once the save makes the move the level
    /// above's, that list would still name it, and a fetch evaluated in memory
    /// (`ANY items.flag == YES` with changes pending) would list the owner (model test seed
    /// 5375751684696830537). Costs nothing when the save moves no object.
    func realignMembers(_ moves: MemberMoves) {
        guard !moves.byEntity.isEmpty else { return }
        for owner in registered.values where !owner.toMany.isEmpty {
            guard let byIndex = moves.byEntity[owner.info.name] else { continue }
            for (index, moved) in byIndex where owner.toMany[index].committed != nil {
                for move in moved {
                    if move.owner == owner.primaryKey {
                        owner.toMany[index].committed!.insert(move.key)
                    } else {
                        owner.toMany[index].committed!.remove(move.key)
                    }
                }
            }
        }
    }

    /// After a save: the objects it deleted leave every loaded to-many of this context. While
    /// the deletion was pending, reads left them out (``applyLocalMembership(to:owner:info:index:)``);
    /// once saved, it is the parent's, and a member list loaded here while it was pending could
    /// still name the object (when a batch request re-pointed its row at an owner its inverse
    /// was never removed from: `StaleMemberTests`).
    func forgetDeletedMembers(_ gone: ObjectTable.Values) {
        guard !gone.isEmpty else { return }
        var keysByEntity: [String: Set<Int64>] = [:]
        for object in gone { keysByEntity[object.info.name, default: []].insert(object.primaryKey) }
        for object in registered.values where !object.toMany.isEmpty {
            for index in object.toMany.indices where object.toMany[index].committed != nil {
                guard let keys = keysByEntity[object.info.toManys[index].destination] else { continue }
                object.toMany[index].committed!.subtract(keys)
            }
        }
    }
}
