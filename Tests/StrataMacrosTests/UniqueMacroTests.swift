import MacroTesting
import Testing

/// `@Attribute(.unique)` and `#Unique`: the keys `@Entity` adds to the entity description, and
/// the keys it refuses at compile time.
@Suite(.macros(strataMacros, record: .missing))
struct UniqueMacroTests {
    @Test func keysReachTheEntityDescription() {
        assertMacro {
            """
            @Entity final class Book: ManagedObject {
                #Unique<Book>([\\.title, \\.author], [\\.code])
                @Attribute(.unique) var isbn: String
                var title: String
                var author: Author?
                var code: Int = 0
            }
            """
        } expansion: {
            #"""
            final class Book: ManagedObject {
                var isbn: String {
                    get {
                        Strata._observationAccess(self, \.isbn)
                        return self[attribute: "isbn"] ?? ""
                    }
                    set {
                        Strata._observationMutation(self, \.isbn) {
                            self[attribute: "isbn"] = newValue
                        }
                    }
                }
                var title: String {
                    get {
                        Strata._observationAccess(self, \.title)
                        return self[attribute: "title"] ?? ""
                    }
                    set {
                        Strata._observationMutation(self, \.title) {
                            self[attribute: "title"] = newValue
                        }
                    }
                }
                var author: Author? {
                    get {
                        Strata._observationAccess(self, \.author)
                        return self[_persisted: "author"]
                    }
                    set {
                        Strata._observationMutation(self, \.author) {
                            self[_persisted: "author"] = newValue
                        }
                    }
                }
                var code: Int {
                    get {
                        Strata._observationAccess(self, \.code)
                        return self[attribute: "code"] ?? 0
                    }
                    set {
                        Strata._observationMutation(self, \.code) {
                            self[attribute: "code"] = newValue
                        }
                    }
                }

                static let entityDescription: Strata.Entity = Strata._EntityMacroSupport.entity("Book", class: Book.self, [
                    .attribute(Strata.Attribute("isbn", .string, isOptional: false, isUnique: true)),
                    .attribute(Strata.Attribute("title", .string, isOptional: false)),
                    Strata._EntityMacroSupport.inferred("author", Author.self, isOptional: true),
                    .attribute(Strata.Attribute("code", .int64, isOptional: false, defaultValue: .int64(0))),
                    ], unique: [["title", "author"], ["code"]])

                static var entityName: String {
                    "Book"
                }

                static func propertyName(for keyPath: AnyKeyPath) -> String? {
                    switch keyPath {
                    case \Book.isbn:
                        "isbn"
                    case \Book.title:
                        "title"
                    case \Book.author:
                        "author"
                    case \Book.code:
                        "code"
                    default:
                        nil
                    }
                }

                static func keyPath(forPropertyNamed name: String) -> AnyKeyPath? {
                    switch name {
                    case "isbn":
                        \Book.isbn
                    case "title":
                        \Book.title
                    case "author":
                        \Book.author
                    case "code":
                        \Book.code
                    default:
                        nil
                    }
                }

                override func _notifyObservers(of name: String, willSet: Bool) {
                    switch name {
                    case "isbn":
                        Strata._observationNotify(self, \Book.isbn, willSet: willSet)
                    case "title":
                        Strata._observationNotify(self, \Book.title, willSet: willSet)
                    case "author":
                        Strata._observationNotify(self, \Book.author, willSet: willSet)
                    case "code":
                        Strata._observationNotify(self, \Book.code, willSet: willSet)
                    default:
                        super._notifyObservers(of: name, willSet: willSet)
                    }
                }
            }

            extension Book: Strata.PersistentEntity {
            }
            """#
        }
    }

    @Test func keysThatAreNoAttributeOrToOneAreRefused() {
        assertMacro {
            """
            @Entity final class Book: ManagedObject {
                #Unique<Shelf>([\\.title])
                #Unique<Book>([\\.missing], [\\.loans], [\\.title.count])
                var title: String
                @Relationship(inverse: \\Loan.book) var loans: Set<Loan> = []
            }
            """
        } diagnostics: {
            #"""
            @Entity final class Book: ManagedObject {
                #Unique<Shelf>([\.title])
                ┬────────────────────────
                ╰─ 🛑 #Unique<Shelf> in class 'Book': write #Unique<Book>
                #Unique<Book>([\.missing], [\.loans], [\.title.count])
                                                       ┬────────────
                               │            │          ╰─ 🛑 #Unique takes key paths to the class's own properties, as \.name
                                            ┬──────
                               │            ╰─ 🛑 #Unique names to-many 'loans': a unique key is made of attributes and to-ones
                               ┬────────
                               ╰─ 🛑 #Unique names 'missing', which is not a persistent property of 'Book'
                var title: String
                @Relationship(inverse: \Loan.book) var loans: Set<Loan> = []
            }
            """#
        }
    }
}
