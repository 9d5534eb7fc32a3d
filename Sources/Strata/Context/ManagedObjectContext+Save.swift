internal import Foundation

extension ManagedObjectContext {
    /// Validates every pending change, then commits them in one `BEGIN IMMEDIATE … COMMIT` that
    /// writes the rows, bumps the store generation by exactly 1, stamps the touched entities'
    /// generations and sets a fresh nonce.
    ///
    /// A context without changes runs no statement and returns `nil`.
    ///
    /// - Throws: ``ValidationError`` listing every failure (object, key, rule), or a
    ///   ``StoreError``. When it throws, the context and the store are exactly as they were.
    @discardableResult
    public func save() throws -> CommitResult? {
        assertOnQueue()
        guard hasChanges else { return nil }
        try validateForSave()
        let changes = try pendingStoreChanges()
        guard !changes.isEmpty else {
            acceptPendingChanges()
            return nil
        }
        let result = try coordinator.commit(changes)
        acceptPendingChanges()
        return result
    }

    /// What a save would write, gathered without touching any object.
    func pendingStoreChanges() throws -> StoreChanges {
        var changes = StoreChanges()
        for object in inserted.values {
            changes.inserted.append((object.info, object.objectID.primaryKey, object.current))
            changes.touchedEntities.insert(object.info.name)
            collectJoinChanges(object, into: &changes)
        }
        for object in updated.values where hasPendingDifference(object) {
            if object.current != object.committed {
                changes.updated.append((object.info, object.objectID.primaryKey, object.current))
            }
            changes.touchedEntities.insert(object.info.name)
            collectJoinChanges(object, into: &changes)
        }
        for object in deleted.values {
            changes.deleted.append((object.info, object.objectID.primaryKey))
            changes.touchedEntities.insert(object.info.name)
            for storage in object.info.toManyStorage {
                if case let .joinTable(table, own, _) = storage {
                    changes.joinRowsOfDeleted.append((table, own, object.objectID.primaryKey))
                }
            }
        }
        return changes
    }

    /// Join-table rows come from the side whose key is column `a`, so each pair is written once.
    private func collectJoinChanges(_ object: ManagedObject, into changes: inout StoreChanges) {
        for (index, storage) in object.info.toManyStorage.enumerated() {
            guard case let .joinTable(table, own, _) = storage, own == "\"a\"" else { continue }
            let key = object.objectID.primaryKey
            for other in object.toMany[index].added { changes.joinInserts.append((table, key, other)) }
            for other in object.toMany[index].removed { changes.joinDeletes.append((table, key, other)) }
        }
    }

    /// After a successful commit: the current values become the committed ones.
    func acceptPendingChanges() {
        for object in Array(inserted.values) + Array(updated.values) {
            object.committed = object.current
            for index in object.toMany.indices {
                let state = object.toMany[index]
                if let committed = state.committed { object.toMany[index].committed = state.value(committed: committed) }
                object.toMany[index].added = []
                object.toMany[index].removed = []
            }
            object.state = .clean
        }
        for object in deleted.values {
            object.state = .invalid
            registered[object.objectID] = nil
        }
        inserted = [:]
        updated = [:]
        deleted = [:]
    }

    // MARK: Validation

    /// Checks required values, ranges, lengths, regular expressions and deny rules. Reads related
    /// rows where a rule needs them; changes nothing.
    func validateForSave() throws {
        var failures: [ValidationFailure] = []
        for object in inserted.values { failures += try validate(object) }
        for object in updated.values { failures += try validate(object) }
        // Report in object-ID order (then key), deny failures last; sorting the few failures is
        // cheaper than sorting every object of a large save.
        failures.sort { ($0.objectID, $0.key) < ($1.objectID, $1.key) }
        for object in deleted.values.sorted(by: { $0.objectID < $1.objectID }) {
            for relationship in object.info.entity.relationships where relationship.deleteRule == .deny {
                let remaining = try relatedObjects(object, relationship.name).filter { $0.state != .deleted }
                if !remaining.isEmpty {
                    failures.append(ValidationFailure(
                        objectID: object.objectID, key: relationship.name, rule: .deny,
                        message: "cannot delete while \(relationship.name) holds \(remaining.map(\.objectID.description).joined(separator: ", "))"))
                }
            }
        }
        if !failures.isEmpty { throw ValidationError(failures: failures) }
    }

    func validate(_ object: ManagedObject) throws -> [ValidationFailure] {
        var failures: [ValidationFailure] = []
        func fail(_ key: String, _ rule: ValidationFailure.Rule, _ message: String) {
            failures.append(ValidationFailure(objectID: object.objectID, key: key, rule: rule, message: message))
        }
        let info = object.info
        for (index, attribute) in info.attributes.enumerated() {
            guard let value = object.current.attributes[index] else {
                if !attribute.isOptional { fail(attribute.name, .required, "a value is required") }
                continue
            }
            if let number = value.numericValue {
                if let min = attribute.minValue, number < min { fail(attribute.name, .minValue, "\(value) is less than \(min)") }
                if let max = attribute.maxValue, number > max { fail(attribute.name, .maxValue, "\(value) is greater than \(max)") }
            }
            let length: Int? = switch value {
            case .string(let text): text.count
            case .binary(let data): data.count
            default: nil
            }
            if let length {
                if let min = attribute.minLength, length < min { fail(attribute.name, .minLength, "length \(length) is less than \(min)") }
                if let max = attribute.maxLength, length > max { fail(attribute.name, .maxLength, "length \(length) is greater than \(max)") }
            }
            if let pattern = attribute.regex, case .string(let text) = value, !RegexCache.matches(pattern, text) {
                fail(attribute.name, .regex, "\"\(text)\" does not match /\(pattern)/")
            }
        }
        for (index, relationship) in info.toOnes.enumerated() where !relationship.isOptional {
            if object.current.toOnes[index] == nil { fail(relationship.name, .required, "a \(relationship.destination) is required") }
        }
        for (index, relationship) in info.toManys.enumerated() where !relationship.isOptional {
            if try toManyKeys(object, index).isEmpty { fail(relationship.name, .required, "at least one \(relationship.destination) is required") }
        }
        return failures
    }
}
