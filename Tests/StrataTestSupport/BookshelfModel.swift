public import Strata

extension TestModels {
    /// Shelves and books across a one-to-many relationship, built from `Model`/`Entity` values:
    /// `Shelf(label)` ←→ `Book(title, pages, shelf)` (the to-one optional, deleting a shelf
    /// nullifies its books' `shelf`). The two-process external-changes test
    /// (Tests/StrataCrashTests/ExternalChangesProcessTests.swift) and its writer child
    /// (Sources/StrataHistoryWriter) both open the store with it.
    public static func bookshelf() -> Model {
        try! Model(version: "bookshelf-1", entities: [
            Entity("Shelf", attributes: [Attribute("label", .string, isOptional: false)],
                   relationships: [Relationship("books", .toMany, to: "Book", inverse: "shelf", deleteRule: .nullify)]),
            Entity("Book", attributes: [
                Attribute("title", .string, isOptional: false),
                Attribute("pages", .int64, isOptional: false, defaultValue: .int64(0)),
            ], relationships: [Relationship("shelf", .toOne, to: "Shelf", inverse: "books")]),
        ])
    }
}
