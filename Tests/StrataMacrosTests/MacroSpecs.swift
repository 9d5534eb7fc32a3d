import MacroTesting
import SwiftSyntaxMacroExpansion
import StrataMacros

/// The macros as Strata declares them (with `@Entity`'s conformance, which the compiler passes).
let strataMacros: [String: MacroSpec] = [
    "Entity": MacroSpec(type: EntityMacro.self, conformances: ["PersistentEntity"]),
    "_PersistedProperty": MacroSpec(type: PersistedPropertyMacro.self),
    "Attribute": MacroSpec(type: AttributeMacro.self),
    "Relationship": MacroSpec(type: RelationshipMacro.self),
    "Transient": MacroSpec(type: TransientMacro.self),
    "Unique": MacroSpec(type: UniqueMacro.self),
]
