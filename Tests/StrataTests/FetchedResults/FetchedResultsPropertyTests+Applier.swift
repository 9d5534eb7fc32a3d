import Foundation
import Testing
import StrataTestSupport
@testable import Strata

// The property test's own table-view applier and recording delegate, written apart from the
// library's `FetchedChanges.applied()` so that the two check each other.

// MARK: - An independent applier

struct Refusal: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Applies a change set to `old` as a table view's batch update does, by slot filling: section
/// and object deletions (and move sources) name old positions and are checked against `old`;
/// the new section list has the inserted sections at their indexes and the surviving sections,
/// in order, in the other slots; each new section has inserted and moved-in objects at their
/// items and its surviving objects, in order, in the other slots. Objects of a deleted section
/// that are not reported go with it (UIKit). Updates name the object at both paths.
func applyByTableViewRules(_ changes: FetchedChanges, to old: ControllerLayout) throws -> ControllerLayout {
    var deletedSections = Set<Int>()
    var insertedSections: [Int: String] = [:]
    for change in changes.sections {
        switch change {
        case let .delete(section, index):
            guard old.sections.indices.contains(index) else { throw Refusal("section delete at \(index): the old layout has \(old.sections.count) sections") }
            guard old.sections[index].name == section.name else {
                throw Refusal("section delete of \(section.name) at \(index): the old layout has \(old.sections[index].name) there")
            }
            guard deletedSections.insert(index).inserted else { throw Refusal("section \(index) deleted twice") }
        case let .insert(section, index):
            guard insertedSections[index] == nil else { throw Refusal("two sections inserted at \(index)") }
            guard !old.sections.contains(where: { $0.name == section.name })
                    || old.sections.enumerated().contains(where: { $0.element.name == section.name && deletedSections.contains($0.offset) })
            else { throw Refusal("section \(section.name) inserted at \(index) but the old layout has it and it is not deleted") }
            insertedSections[index] = section.name
        }
    }
    var removed = Set<FetchedIndexPath>()
    var placed: [FetchedIndexPath: ObjectID] = [:]
    var updates: [(ObjectID, FetchedIndexPath)] = []
    func checkOld(_ id: ObjectID, _ path: FetchedIndexPath, _ what: String) throws {
        guard let found = old[path] else { throw Refusal("\(what) \(id.primaryKey) at old \(path): outside the old layout") }
        guard found == id else { throw Refusal("\(what) \(id.primaryKey) at old \(path): the old layout has \(found.primaryKey) there") }
    }
    func remove(_ path: FetchedIndexPath) throws {
        guard removed.insert(path).inserted else { throw Refusal("old \(path) removed twice") }
    }
    func place(_ id: ObjectID, _ path: FetchedIndexPath) throws {
        guard placed[path] == nil else { throw Refusal("new \(path) filled twice") }
        placed[path] = id
    }
    for change in changes.objects {
        switch change {
        case let .delete(id, path):
            try checkOld(id, path, "delete of")
            try remove(path)
        case let .insert(id, path):
            try place(id, path)
        case let .move(id, from, to):
            try checkOld(id, from, "move of")
            try remove(from)
            try place(id, to)
        case let .update(id, from, to):
            try checkOld(id, from, "update of")
            updates.append((id, to))
        }
    }
    var survivors: [ControllerLayout.Section] = []
    for (s, section) in old.sections.enumerated() where !deletedSections.contains(s) {
        let kept = section.ids.enumerated().filter { !removed.contains(FetchedIndexPath(item: $0.offset, section: s)) }.map(\.element)
        survivors.append(ControllerLayout.Section(name: section.name, ids: kept))
    }
    let count = survivors.count + insertedSections.count
    for index in insertedSections.keys where !(0..<count).contains(index) {
        throw Refusal("section inserted at \(index): the new layout has \(count) sections")
    }
    var sections: [ControllerLayout.Section] = []
    var nextSurvivor = 0
    for index in 0..<count {
        if let name = insertedSections[index] {
            sections.append(ControllerLayout.Section(name: name, ids: []))
        } else {
            sections.append(survivors[nextSurvivor])
            nextSurvivor += 1
        }
    }
    for (s, entries) in Dictionary(grouping: placed, by: { $0.key.section }) {
        guard sections.indices.contains(s) else { throw Refusal("object placed in section \(s): the new layout has \(count) sections") }
        let length = sections[s].ids.count + entries.count
        var slots = [ObjectID?](repeating: nil, count: length)
        for (path, id) in entries {
            guard (0..<length).contains(path.item) else {
                throw Refusal("object \(id.primaryKey) placed at \(path): section \(s) has \(length) objects afterwards")
            }
            slots[path.item] = id
        }
        var rest = sections[s].ids.makeIterator()
        sections[s].ids = slots.map { $0 ?? rest.next()! }
    }
    let result = ControllerLayout(sections: sections)
    for (id, to) in updates where result[to] != id {
        throw Refusal("update of \(id.primaryKey) names new \(to), where the new layout has \(result[to].map { "\($0.primaryKey)" } ?? "nothing")")
    }
    return result
}

func render(_ changes: FetchedChanges) -> String {
    let sections = changes.sections.map { change -> String in
        switch change {
        case let .delete(section, index): "section-delete \(section.name)@\(index)"
        case let .insert(section, index): "section-insert \(section.name)@\(index)"
        }
    }
    let objects = changes.objects.map { change -> String in
        switch change {
        case let .delete(id, path): "delete \(id.primaryKey)@\(path)"
        case let .insert(id, path): "insert \(id.primaryKey)@\(path)"
        case let .move(id, from, to): "move \(id.primaryKey) \(from)->\(to)"
        case let .update(id, from, to): "update \(id.primaryKey) \(from)->\(to)"
        }
    }
    return (sections + objects).joined(separator: ", ")
}

// MARK: - The delegate

/// Records every event and every callback, to check that the callbacks spell out the change sets.
final class PropertyRecorder: FetchedResultsControllerDelegate {
    enum Call: Equatable {
        case will
        case section(String, Int, FetchedResultsChangeType)
        case object(ObjectID, FetchedIndexPath?, FetchedResultsChangeType, FetchedIndexPath?)
        case did
        case snapshot(FetchedSnapshot)
    }
    var events: [FetchedResultsEvent] = []
    var calls: [Call] = []

    func controllerWillChangeContent(_ controller: AnyFetchedResultsController) { calls.append(.will) }
    func controller(_ controller: AnyFetchedResultsController, didChange section: FetchedSection, atSectionIndex index: Int,
                    for type: FetchedResultsChangeType) { calls.append(.section(section.name, index, type)) }
    func controller(_ controller: AnyFetchedResultsController, didChange objectID: ObjectID, at indexPath: FetchedIndexPath?,
                    for type: FetchedResultsChangeType, newIndexPath: FetchedIndexPath?) {
        calls.append(.object(objectID, indexPath, type, newIndexPath))
    }
    func controllerDidChangeContent(_ controller: AnyFetchedResultsController) { calls.append(.did) }
    func controller(_ controller: AnyFetchedResultsController, didChangeContentWith snapshot: FetchedSnapshot) { calls.append(.snapshot(snapshot)) }
    func controller(_ controller: AnyFetchedResultsController, didReport event: FetchedResultsEvent) { events.append(event) }

    /// The callbacks a change set should produce.
    static func expectedCalls(_ changes: FetchedChanges) -> [Call] {
        var calls: [Call] = [.will]
        for change in changes.sections {
            switch change {
            case let .delete(section, index): calls.append(.section(section.name, index, .delete))
            case let .insert(section, index): calls.append(.section(section.name, index, .insert))
            }
        }
        for change in changes.objects {
            switch change {
            case let .delete(id, path): calls.append(.object(id, path, .delete, nil))
            case let .insert(id, path): calls.append(.object(id, nil, .insert, path))
            case let .move(id, from, to): calls.append(.object(id, from, .move, to))
            case let .update(id, from, to): calls.append(.object(id, from, .update, to))
            }
        }
        return calls + [.did, .snapshot(changes.after)]
    }
}

