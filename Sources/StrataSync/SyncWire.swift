internal import Foundation
public import Strata

/// One row change as the server's log holds it (the `changes` JSON of a transaction, an array of
/// these): the entity, the key (the same on every replica), and the values written.
public struct SyncChange: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable { case insert, update, delete }

    public var kind: Kind
    public var entity: String
    public var key: Int64
    /// The attributes written: an insert's every attribute, an update's changed ones (`nil`: cleared).
    public var attributes: [String: AttributeValue?]
    /// The to-one relationships written: the destination's key, or `nil`.
    public var toOnes: [String: Int64?]

    public init(kind: Kind, entity: String, key: Int64, attributes: [String: AttributeValue?] = [:], toOnes: [String: Int64?] = [:]) {
        self.kind = kind
        self.entity = entity
        self.key = key
        self.attributes = attributes
        self.toOnes = toOnes
    }

    private enum CodingKeys: String, CodingKey { case kind = "op", entity = "e", key = "k", attributes = "a", toOnes = "r" }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        kind = try container.decode(Kind.self, forKey: .kind)
        entity = try container.decode(String.self, forKey: .entity)
        key = try container.decode(Int64.self, forKey: .key)
        attributes = try container.decodeIfPresent([String: AttributeValue?].self, forKey: .attributes) ?? [:]
        toOnes = try container.decodeIfPresent([String: Int64?].self, forKey: .toOnes) ?? [:]
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind, forKey: .kind)
        try container.encode(entity, forKey: .entity)
        try container.encode(key, forKey: .key)
        if !attributes.isEmpty { try container.encode(attributes, forKey: .attributes) }
        if !toOnes.isEmpty { try container.encode(toOnes, forKey: .toOnes) }
    }
}

/// One transaction of the server's log: its place in the server's order (`seq`, 1, 2, 3, … in
/// the order pushes committed), the replica that pushed it and the local generation it had there.
public struct SyncTransaction: Sendable, Equatable {
    public var seq: Int64
    public var replica: Int64
    public var localGeneration: Int64
    /// `save`, a batch request's kind, or `seed` (a store's rows when sync was switched on).
    public var kind: String
    public var changes: [SyncChange]
}

enum SyncJSON {
    static func encode(_ changes: [SyncChange]) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(changes), as: UTF8.self)
    }

    static func decode(_ text: String, seq: Int64) throws -> [SyncChange] {
        do {
            return try JSONDecoder().decode([SyncChange].self, from: Data(text.utf8))
        } catch {
            throw SyncError.undecodableTransaction(seq: seq, reason: String(describing: error))
        }
    }
}

extension SyncChange {
    /// The change a local history record pushes: an insert with the row's values (as read with
    /// the history), an update with the values it wrote, a delete. `nil` for an insert whose row
    /// a later commit deleted: nothing of it is pushed (its updates and its delete then name a
    /// row no replica has, and do nothing).
    init?(_ change: HistoryChange) {
        let id = change.objectID
        switch change.kind {
        case .insert:
            guard let row = change.row else { return nil }
            self.init(kind: .insert, entity: id.entityName, key: id.primaryKey, attributes: row.attributes,
                      toOnes: row.toOnes.mapValues { $0?.primaryKey })
        case .update:
            self.init(kind: .update, entity: id.entityName, key: id.primaryKey, attributes: change.attributes,
                      toOnes: change.toOnes.mapValues { $0?.primaryKey })
        case .delete:
            self.init(kind: .delete, entity: id.entityName, key: id.primaryKey)
        }
    }
}
