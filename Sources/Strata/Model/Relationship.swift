/// A relationship from one entity to another.
///
/// Storage: a to-one is a column holding the destination's primary key (one-to-one stores it on
/// both sides); a to-many whose inverse is to-one is derived from that inverse column; a
/// many-to-many is a join table. A to-many must name its inverse.
public struct Relationship: Sendable, Hashable, Codable {
    public enum Kind: String, Sendable, Codable { case toOne, toMany }

    /// What deleting the source object does to the destination objects.
    public enum DeleteRule: String, Sendable, Codable {
        /// Remove the deleted object from the destinations' inverse relationship.
        case nullify
        /// Delete the destination objects too.
        case cascade
        /// Refuse the save while any destination object remains.
        case deny
        /// Do nothing: the destinations keep pointing at a deleted object (you tidy up).
        case noAction
    }

    public var name: String
    public var destination: String
    public var inverse: String?
    public var kind: Kind
    public var deleteRule: DeleteRule
    /// A non-optional to-one must point at an object when saved; a non-optional to-many must not be empty.
    public var isOptional: Bool
    public var renamingIdentifier: String?

    public init(
        _ name: String, _ kind: Kind, to destination: String, inverse: String? = nil,
        deleteRule: DeleteRule = .nullify, isOptional: Bool = true, renamingIdentifier: String? = nil
    ) {
        self.name = name
        self.kind = kind
        self.destination = destination
        self.inverse = inverse
        self.deleteRule = deleteRule
        self.isOptional = isOptional
        self.renamingIdentifier = renamingIdentifier
    }

    public var isToMany: Bool { kind == .toMany }
}
