/// A context's objects by ID: its identity map (`registered`), its pending inserts, updates and
/// deletes, and the objects a change removes (kept for its notification).
///
/// A `[ObjectID: ManagedObject]` holds each entry's 16-byte key beside the object, 24 bytes a
/// bucket; this table holds only the object (8 bytes) and one control byte, and finds the key in
/// the object itself (its interned entity name and primary key). An import holds every new object
/// in two tables until its save ends: its peak went from 418 to 371 bytes per object above raw
/// SQLite's (see the Performance article).
///
/// Open addressing with linear probing, at most 3/4 full. A control byte is 0 for an empty slot,
/// else 0x80 and 7 bits of the key's hash, so a probe looks at an object only when those bits
/// match (1 in 128 for a different key). Removal shifts the entries after it back (no
/// tombstones). A value type with copy-on-write, like the dictionary it replaces; iteration order
/// is unspecified.
struct ObjectTable: Sequence, ExpressibleByDictionaryLiteral {
    private var storage: Storage?

    init() {}

    init(dictionaryLiteral elements: (ObjectID, ManagedObject)...) {
        for (id, object) in elements { self[id] = object }
    }

    var count: Int { storage?.count ?? 0 }
    var isEmpty: Bool { count == 0 }

    subscript(id: ObjectID) -> ManagedObject? {
        get {
            guard let storage else { return nil }
            let (slot, found) = storage.find(id.tableHash, primaryKey: id.primaryKey, entity: id.entityBits)
            return found ? storage.objects[slot] : nil
        }
        set {
            guard let object = newValue else {
                _ = removeValue(forKey: id)
                return
            }
            insert(object, id: id)
        }
    }

    /// Removes the object of `id`, returning it.
    @discardableResult
    mutating func removeValue(forKey id: ObjectID) -> ManagedObject? {
        guard storage != nil else { return nil }
        // No reference to the storage is held across the uniqueness check (one would make it
        // fail). Shared storage is copied only when the key is there.
        if !isKnownUniquelyReferenced(&storage) {
            guard self[id] != nil else { return nil }
            makeUnique(capacity: storage.unsafelyUnwrapped.capacity)
        }
        let current = storage.unsafelyUnwrapped
        let (slot, found) = current.find(id.tableHash, primaryKey: id.primaryKey, entity: id.entityBits)
        return found ? current.remove(at: slot) : nil
    }

    mutating func reserveCapacity(_ minimumCount: Int) {
        let needed = Storage.capacity(for: minimumCount)
        if needed > (storage?.capacity ?? 0) { makeUnique(capacity: needed) }
    }

    mutating func removeAll() { storage = nil }

    /// The objects, in no particular order.
    var values: Values { Values(table: self) }
    /// The objects' IDs, in no particular order.
    var keys: LazyMapSequence<Values, ObjectID> { values.lazy.map(\.objectID) }

    /// `consuming` here and in `Storage.insert`: the object the setter was given moves into its
    /// slot, where a borrowed one was retained to be stored and its owner released after.
    private mutating func insert(_ object: consuming ManagedObject, id: ObjectID) {
        assert(object.objectID == id, "ObjectTable: \(object.objectID) stored under \(id)")
        let hash = id.tableHash
        // The common case first: this table's own storage, with room (or the key already in it).
        // `isKnownUniquelyReferenced` on the optional itself: no retain and release around it,
        // which a force-unwrapped `storage!` cost on every insert.
        if isKnownUniquelyReferenced(&storage) {
            let current = storage.unsafelyUnwrapped
            if current.count + 1 <= current.capacity / 4 * 3
                || current.find(hash, primaryKey: id.primaryKey, entity: id.entityBits).found {
                current.insert(consume object, hash: hash, primaryKey: id.primaryKey, entity: id.entityBits)
                return
            }
        }
        makeUnique(capacity: Storage.capacity(for: count + 1))
        storage.unsafelyUnwrapped.insert(consume object, hash: hash, primaryKey: id.primaryKey, entity: id.entityBits)
    }

    /// Makes `storage` this table's own, with at least `capacity` slots.
    private mutating func makeUnique(capacity: Int) {
        if isKnownUniquelyReferenced(&storage), storage.unsafelyUnwrapped.capacity >= capacity { return }
        let new = Storage(capacity: Swift.max(capacity, storage?.capacity ?? 0))
        if isKnownUniquelyReferenced(&storage) {
            // Growing storage no one else holds: its objects move, with no retain and release
            // each (an import grows its tables by moving every object about twice).
            storage.unsafelyUnwrapped.moveAll(into: new)
        } else if let old = storage {
            for index in 0..<old.capacity where old.controls[index] != 0 {
                new.place(old.objects[index].unsafelyUnwrapped)
            }
        }
        storage = new
    }

    func makeIterator() -> Iterator { Iterator(values: values.makeIterator()) }

    struct Iterator: IteratorProtocol {
        var values: Values.Iterator
        mutating func next() -> (key: ObjectID, value: ManagedObject)? {
            values.next().map { ($0.objectID, $0) }
        }
    }

    /// The objects of a table (a snapshot: the table may change while it is walked).
    struct Values: Sequence {
        let storage: Storage?
        let count: Int
        var isEmpty: Bool { count == 0 }

        init(table: ObjectTable) {
            storage = table.storage
            count = table.count
        }

        func makeIterator() -> Iterator { Iterator(storage: storage) }
        var underestimatedCount: Int { count }

        struct Iterator: IteratorProtocol {
            let storage: Storage?
            var index = 0
            mutating func next() -> ManagedObject? {
                guard let storage else { return nil }
                while index < storage.capacity {
                    defer { index += 1 }
                    if storage.controls[index] != 0 { return storage.objects[index] }
                }
                return nil
            }
        }
    }

    /// The slots. Mutated only when uniquely referenced (copy-on-write above).
    final class Storage {
        let capacity: Int
        let mask: Int
        var count = 0
        let objects: UnsafeMutablePointer<ManagedObject?>
        let controls: UnsafeMutablePointer<UInt8>

        init(capacity: Int) {
            self.capacity = capacity
            mask = capacity - 1
            objects = .allocate(capacity: capacity)
            objects.initialize(repeating: nil, count: capacity)
            controls = .allocate(capacity: capacity)
            controls.initialize(repeating: 0, count: capacity)
        }

        deinit {
            // Storage emptied by `moveAll` (a table that grew) holds nothing: no walk over its
            // slots (an import's tables grow about twenty times).
            if count > 0 { objects.deinitialize(count: capacity) }
            objects.deallocate()
            controls.deallocate()
        }

        /// The smallest power of two, at least 8, that holds `count` entries at most 3/4 full.
        static func capacity(for count: Int) -> Int {
            var capacity = 8
            while capacity / 4 * 3 < count { capacity *= 2 }
            return capacity
        }

        static func hash(_ object: ManagedObject) -> UInt64 {
            ObjectID.tableHash(entity: object.info.internedName.address, primaryKey: object.primaryKey)
        }

        @inline(__always)
        static func control(_ hash: UInt64) -> UInt8 { UInt8(truncatingIfNeeded: hash >> 57) | 0x80 }

        /// The slot holding the key, or the empty slot where it would go.
        @inline(__always)
        func find(_ hash: UInt64, primaryKey: Int64, entity: UInt) -> (slot: Int, found: Bool) {
            let control = Storage.control(hash)
            var slot = Int(truncatingIfNeeded: hash) & mask
            while true {
                let here = controls[slot]
                if here == 0 { return (slot, false) }
                if here == control {
                    let object = objects[slot].unsafelyUnwrapped
                    if object.primaryKey == primaryKey && object.info.internedName.address == entity { return (slot, true) }
                }
                slot = (slot &+ 1) & mask
            }
        }

        func insert(_ object: consuming ManagedObject, hash: UInt64, primaryKey: Int64, entity: UInt) {
            let (slot, found) = find(hash, primaryKey: primaryKey, entity: entity)
            objects[slot] = consume object
            if !found {
                controls[slot] = Storage.control(hash)
                count += 1
            }
        }

        /// Puts `object`, whose key is not in the table, in the first free slot of its probe
        /// sequence (growing and copying: no equality to check).
        func place(_ object: consuming ManagedObject) {
            let hash = Storage.hash(object)
            var slot = Int(truncatingIfNeeded: hash) & mask
            while controls[slot] != 0 { slot = (slot &+ 1) & mask }
            controls[slot] = Storage.control(hash)
            (objects + slot).pointee = consume object
            count += 1
        }

        /// Moves every object into `new` and leaves this storage empty.
        func moveAll(into new: Storage) {
            for index in 0..<capacity where controls[index] != 0 {
                if let object = (objects + index).move() { new.place(object) }
                (objects + index).initialize(to: nil)
                controls[index] = 0
            }
            count = 0
        }

        /// Empties `slot` and moves back the entries after it that would no longer be found.
        func remove(at slot: Int) -> ManagedObject? {
            let removed = objects[slot]
            var hole = slot
            var next = (slot + 1) & mask
            while controls[next] != 0 {
                let home = Int(truncatingIfNeeded: Storage.hash(objects[next].unsafelyUnwrapped)) & mask
                // The entry at `next` may fill the hole when its home slot is not cyclically
                // within (hole, next].
                let stays = hole <= next ? (home > hole && home <= next) : (home > hole || home <= next)
                if !stays {
                    objects[hole] = objects[next]
                    controls[hole] = controls[next]
                    hole = next
                }
                next = (next + 1) & mask
            }
            objects[hole] = nil
            controls[hole] = 0
            count -= 1
            return removed
        }
    }
}

extension ObjectID {
    /// The entity part of the ID (its interned name's address), for ``ObjectTable``.
    var entityBits: UInt { entityAddress }

    /// The hash ``ObjectTable`` places an ID by: the key and entity mixed (splitmix64's
    /// finaliser), so sequential keys spread over the whole table.
    var tableHash: UInt64 { ObjectID.tableHash(entity: entityBits, primaryKey: primaryKey) }

    @inline(__always)
    static func tableHash(entity: UInt, primaryKey: Int64) -> UInt64 {
        var x = UInt64(bitPattern: primaryKey) ^ (UInt64(entity) &<< 16)
        x = (x ^ (x >> 30)) &* 0xBF58_476D_1CE4_E5B9
        x = (x ^ (x >> 27)) &* 0x94D0_49BB_1331_11EB
        return x ^ (x >> 31)
    }
}
