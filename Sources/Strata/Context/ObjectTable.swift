/// A context's objects by ID: its identity map (`registered`), its pending inserts, updates and
/// deletes, and the objects a change removes (kept for its notification).
///
/// A `[ObjectID: ManagedObject]` holds each entry's 16-byte key beside the object, 24 bytes a
/// bucket; this table holds only the object (8 bytes), and finds the key in the object itself
/// (its interned entity name and primary key). An import holds every new object in two tables
/// until its save ends (measured in Benchmarks/results/HISTORY.md).
///
/// Laid out as a compact ordered dictionary: the objects sit in an array in the order they were
/// added (`entries`), and an open-addressed index (linear probing, at most 3/4 full) maps a
/// key's hash to its entry. An index slot is a control byte (0 when empty, else 0x80 and 7 bits
/// of the key's hash, so a probe looks at an object only when those bits match: 1 in 128 for a
/// different key) and a 4-byte entry number. Iterating walks the entries in order, so a save's
/// passes over its new objects (validation, the rows to write, accepting the values) visit them
/// in the order they were made, usually their order in memory (allocated one after another),
/// where hash order reached the 341,572 objects of an import at random addresses, long out of
/// the cache, on each pass (Benchmarks/results/HISTORY.md has the measurements). Removal leaves a
/// hole in the entries (skipped by iteration, dropped when the table is rebuilt) and shifts the
/// index entries after it back (no tombstones). A value type with copy-on-write, like the dictionary it
/// replaces.
struct ObjectTable: Sequence, ExpressibleByDictionaryLiteral {
    private var storage: Storage?

    init() {}

    init(dictionaryLiteral elements: (ObjectID, ManagedObject)...) {
        for (id, object) in elements { self[id] = object }
    }

    var count: Int { storage?.count ?? 0 }
    /// Entries used, objects and holes (for tests: a rebuild drops the holes, so after one it
    /// equals `count`).
    var entriesUsed: Int { storage?.used ?? 0 }
    /// Entries the storage has room for, used or not (tests: adding past it rebuilds).
    var entryCapacity: Int { storage?.entryCapacity ?? 0 }
    var isEmpty: Bool { count == 0 }

    subscript(id: ObjectID) -> ManagedObject? {
        get {
            guard let storage else { return nil }
            let (slot, found) = storage.find(id.tableHash, primaryKey: id.primaryKey, entity: id.entityBits)
            return found ? storage.object(at: slot) : nil
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
            rebuild(capacity: storage.unsafelyUnwrapped.capacity)
        }
        let current = storage.unsafelyUnwrapped
        let (slot, found) = current.find(id.tableHash, primaryKey: id.primaryKey, entity: id.entityBits)
        return found ? current.remove(at: slot) : nil
    }

    mutating func reserveCapacity(_ minimumCount: Int) {
        let needed = Storage.capacity(for: minimumCount)
        if needed > (storage?.capacity ?? 0) { rebuild(capacity: needed) }
    }

    mutating func removeAll() { storage = nil }

    /// The objects, in the order they were added (a replaced object keeps its place).
    var values: Values { Values(table: self) }
    /// The objects' IDs, in the order of `values`.
    var keys: LazyMapSequence<Values, ObjectID> { values.lazy.map(\.objectID) }

    /// `consuming` here and in `Storage.insert`: the object the setter was given moves into its
    /// entry, where a borrowed one was retained to be stored and its owner released after.
    private mutating func insert(_ object: consuming ManagedObject, id: ObjectID) {
        assert(object.objectID == id, "ObjectTable: \(object.objectID) stored under \(id)")
        let hash = id.tableHash
        // The common case first: this table's own storage, with room (or the key already in it).
        // `isKnownUniquelyReferenced` on the optional itself: no retain and release around it,
        // which a force-unwrapped `storage!` cost on every insert.
        if isKnownUniquelyReferenced(&storage) {
            // The storage through an unmanaged reference: `self` holds it throughout and nothing
            // here replaces `storage`, and a strong local cost a retain and a release per insert
            // (callgrind). The entry is claimed inside, the object moved into it outside (a
            // closure cannot consume it).
            let current = Unmanaged.passUnretained(storage.unsafelyUnwrapped)
            let (entry, found) = current._withUnsafeGuaranteedRef { $0.claimEntry(hash, primaryKey: id.primaryKey, entity: id.entityBits) }
            if let entry {
                ObjectTable.place(object, in: entry, found: found)
                return
            }
        }
        // Shared storage with room is copied as it is; full storage (its entries used up, by
        // objects or holes) is rebuilt with room for half as many again as it holds, so the
        // rebuilds of a table that only adds, or adds and removes, cost O(1) an insert.
        if let current = storage, current.used < current.entryCapacity {
            rebuild(capacity: current.capacity)
        } else {
            rebuild(capacity: Storage.capacity(for: count + 1 + count / 2))
        }
        // Room was made above: the entry is claimed.
        let (entry, found) = storage.unsafelyUnwrapped.claimEntry(hash, primaryKey: id.primaryKey, entity: id.entityBits)
        ObjectTable.place(object, in: entry.unsafelyUnwrapped, found: found)
    }

    /// Moves `object` into an entry `claimEntry` returned: over the key's old object when
    /// `found`, into the new (uninitialised) entry otherwise.
    @inline(__always)
    private static func place(_ object: consuming ManagedObject, in entry: UnsafeMutablePointer<ManagedObject?>, found: Bool) {
        if found { entry.pointee = consume object } else { entry.initialize(to: consume object) }
    }

    /// Adds `objects`, whose keys the caller knows are neither in the table nor repeated among
    /// them (a fetch into a context that holds no object: every row is new). One uniqueness
    /// check and at most one growth for all of them, and a loop that looks for no key: about 55
    /// instructions an object fewer than an insert each (callgrind, a fetch of every flight).
    mutating func insertNew(_ objects: UnsafeBufferPointer<ManagedObject>) {
        guard !objects.isEmpty else { return }
        if !isKnownUniquelyReferenced(&storage)
            || storage.unsafelyUnwrapped.used + objects.count > storage.unsafelyUnwrapped.entryCapacity {
            rebuild(capacity: Swift.max(Storage.capacity(for: count + objects.count), storage?.capacity ?? 0))
        }
        storage.unsafelyUnwrapped.appendNew(objects)
    }

    /// Makes `storage` this table's own, with `capacity` slots (at least enough for its
    /// objects), its objects in order and without holes.
    private mutating func rebuild(capacity: Int) {
        let new = Storage(capacity: Swift.max(capacity, Storage.capacity(for: count)))
        if isKnownUniquelyReferenced(&storage) {
            // Storage no one else holds: its objects move, with no retain and release each (an
            // import grows its tables by moving every object about twice).
            storage.unsafelyUnwrapped.moveAll(into: new)
        } else if let old = storage {
            for index in 0..<old.used {
                if let object = old.entries[index] { new.append(object) }
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
                while index < storage.used {
                    defer { index += 1 }
                    if let object = storage.entries[index] { return object }
                }
                return nil
            }
        }
    }

    /// The entries and their index. Mutated only when uniquely referenced (copy-on-write above).
    final class Storage {
        /// Index slots: a power of two.
        let capacity: Int
        let mask: Int
        /// Entries: 3/4 of the slots (the most the index holds).
        let entryCapacity: Int
        /// Objects held (entries that are not holes).
        var count = 0
        /// Entries initialised (objects and holes): `entries[0..<used]`.
        var used = 0
        let entries: UnsafeMutablePointer<ManagedObject?>
        /// Per slot: the entry's number (read only where the control byte is not 0).
        let slots: UnsafeMutablePointer<UInt32>
        let controls: UnsafeMutablePointer<UInt8>

        init(capacity: Int) {
            precondition(capacity <= 1 << 32, "ObjectTable: more than 2^32 slots")
            self.capacity = capacity
            mask = capacity - 1
            entryCapacity = capacity / 4 * 3
            entries = .allocate(capacity: entryCapacity)
            slots = .allocate(capacity: capacity)
            controls = .allocate(capacity: capacity)
            controls.initialize(repeating: 0, count: capacity)
        }

        deinit {
            // Storage emptied by `moveAll` (a table that grew) has nothing to release.
            entries.deinitialize(count: used)
            entries.deallocate()
            slots.deallocate()
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

        /// The object of an occupied slot.
        @inline(__always)
        func object(at slot: Int) -> ManagedObject {
            entries[Int(slots[slot])].unsafelyUnwrapped
        }

        /// The slot holding the key, or the empty slot where it would go.
        @inline(__always)
        func find(_ hash: UInt64, primaryKey: Int64, entity: UInt) -> (slot: Int, found: Bool) {
            let control = Storage.control(hash)
            var slot = Int(truncatingIfNeeded: hash) & mask
            while true {
                let here = controls[slot]
                if here == 0 { return (slot, false) }
                if here == control {
                    let object = self.object(at: slot)
                    if object.primaryKey == primaryKey && object.info.internedName.address == entity { return (slot, true) }
                }
                slot = (slot &+ 1) & mask
            }
        }

        /// The entry where the key's object goes: its own (`found`: initialised, holding the
        /// object to replace) or, when there is room, a new one (uninitialised, indexed and
        /// counted already: the caller initialises it at once). Nil when the key is new and the
        /// entries are used up.
        @inline(__always)
        func claimEntry(_ hash: UInt64, primaryKey: Int64, entity: UInt) -> (UnsafeMutablePointer<ManagedObject?>?, found: Bool) {
            let (slot, found) = find(hash, primaryKey: primaryKey, entity: entity)
            if found { return (entries + Int(slots[slot]), true) }
            guard used < entryCapacity else { return (nil, false) }
            controls[slot] = Storage.control(hash)
            slots[slot] = UInt32(truncatingIfNeeded: used)
            used += 1
            count += 1
            return (entries + (used - 1), false)
        }

        /// Puts `object` in the next entry and indexes it in the empty `slot`.
        @inline(__always)
        private func appendEntry(_ object: consuming ManagedObject, indexedAt slot: Int, hash: UInt64) {
            controls[slot] = Storage.control(hash)
            slots[slot] = UInt32(truncatingIfNeeded: used)
            (entries + used).initialize(to: consume object)
            used += 1
            count += 1
        }

        /// Appends `object`, whose key is not in the table, and indexes it in the first free
        /// slot of its probe sequence (rebuilding: no equality to check).
        func append(_ object: consuming ManagedObject) {
            let hash = Storage.hash(object)
            var slot = Int(truncatingIfNeeded: hash) & mask
            while controls[slot] != 0 { slot = (slot &+ 1) & mask }
            appendEntry(object, indexedAt: slot, hash: hash)
        }

        /// Appends `objects` (``ObjectTable/insertNew(_:)``: keys new, room made).
        func appendNew(_ objects: UnsafeBufferPointer<ManagedObject>) {
            precondition(used + objects.count <= entryCapacity, "ObjectTable: no room made for \(objects.count) objects")
            for object in objects {
                assert(!find(Storage.hash(object), primaryKey: object.primaryKey, entity: object.info.internedName.address).found,
                       "ObjectTable: \(object.objectID) inserted as new twice")
                append(object)
            }
        }

        /// Moves every object, in order, into `new` and leaves this storage empty (its entries
        /// uninitialised, `used` 0: its `deinit` releases nothing).
        func moveAll(into new: Storage) {
            for index in 0..<used {
                if let object = (entries + index).move() { new.append(object) }
            }
            used = 0
            count = 0
        }

        /// Empties `slot` (its entry becomes a hole) and moves back the index entries after it
        /// that would no longer be found.
        func remove(at slot: Int) -> ManagedObject? {
            let entry = Int(slots[slot])
            let removed = entries[entry]
            entries[entry] = nil
            count -= 1
            // Holes at the end are given back (a table used as a stack keeps no holes).
            if entry == used - 1 {
                while used > 0, entries[used - 1] == nil {
                    (entries + used - 1).deinitialize(count: 1)
                    used -= 1
                }
            }
            var hole = slot
            var next = (slot + 1) & mask
            while controls[next] != 0 {
                let home = Int(truncatingIfNeeded: Storage.hash(object(at: next))) & mask
                // The entry at `next` may fill the hole when its home slot is not cyclically
                // within (hole, next].
                let stays = hole <= next ? (home > hole && home <= next) : (home > hole || home <= next)
                if !stays {
                    slots[hole] = slots[next]
                    controls[hole] = controls[next]
                    hole = next
                }
                next = (next + 1) & mask
            }
            controls[hole] = 0
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
