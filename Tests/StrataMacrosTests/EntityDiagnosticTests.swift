import MacroTesting
import Testing

/// Every shape `@Entity` refuses, with a message that names the fix.
@Suite(.macros(strataMacros, record: .missing))
struct EntityDiagnosticTests {
    @Test func notAClass() {
        assertMacro {
            """
            @Entity struct Good {
                var name: String
            }
            """
        } diagnostics: {
            """
            @Entity struct Good {
            ┬──────
            ╰─ 🛑 @Entity applies to a class, not a struct: write 'final class Good: ManagedObject'
                var name: String
            }
            """
        }
        assertMacro {
            """
            @Entity enum Kind {
                case a
            }
            """
        } diagnostics: {
            """
            @Entity enum Kind {
            ┬──────
            ╰─ 🛑 @Entity applies to a class, not an enum: write 'final class Kind: ManagedObject'
                case a
            }
            """
        }
        assertMacro {
            """
            @Entity actor Store {
                var name: String = ""
            }
            """
        } diagnostics: {
            """
            @Entity actor Store {
            ┬──────
            ╰─ 🛑 @Entity applies to a class, not an actor: write 'final class Store: ManagedObject'
                var name: String = ""
            }
            """
        }
    }

    @Test func notFinal() {
        assertMacro {
            """
            @Entity class Good: ManagedObject {
                var name: String
            }
            """
        } diagnostics: {
            """
            @Entity class Good: ManagedObject {
                    ┬────
                    ╰─ 🛑 @Entity class 'Good' must be final: write 'final class Good'
                       ✏️ add 'final'
                var name: String
            }
            """
        } fixes: {
            """
            @Entity final class Good: ManagedObject {
                var name: String
            }
            """
        } expansion: {
            #"""
            final class Good: ManagedObject {
                var name: String {
                    get {
                        Strata._observationAccess(self, \.name)
                        return self[attribute: "name"] ?? ""
                    }
                    set {
                        Strata._observationMutation(self, \.name) {
                            self[attribute: "name"] = newValue
                        }
                    }
                }

                static let entityDescription: Strata.Entity = Strata._EntityMacroSupport.entity("Good", class: Good.self, [
                    .attribute(Strata.Attribute("name", .string, isOptional: false)),
                    ])

                static var entityName: String {
                    "Good"
                }

                static func propertyName(for keyPath: AnyKeyPath) -> String? {
                    switch keyPath {
                    case \Good.name:
                        "name"
                    default:
                        nil
                    }
                }

                static func keyPath(forPropertyNamed name: String) -> AnyKeyPath? {
                    switch name {
                    case "name":
                        \Good.name
                    default:
                        nil
                    }
                }

                override func _notifyObservers(of name: String, willSet: Bool) {
                    switch name {
                    case "name":
                        Strata._observationNotify(self, \Good.name, willSet: willSet)
                    default:
                        super._notifyObservers(of: name, willSet: willSet)
                    }
                }
            }

            extension Good: Strata.PersistentEntity {
            }
            """#
        }
    }

    @Test func noManagedObjectSuperclass() {
        assertMacro {
            """
            @Entity final class Good {
                var name: String
            }
            """
        } diagnostics: {
            """
            @Entity final class Good {
                                ┬───
                                ╰─ 🛑 @Entity class 'Good' must inherit from ManagedObject: write 'final class Good: ManagedObject'
                var name: String
            }
            """
        }
        assertMacro {
            """
            @Entity final class Good: NSObject, Codable {
                var name: String
            }
            """
        } diagnostics: {
            """
            @Entity final class Good: NSObject, Codable {
                                ┬───
                                ╰─ 🛑 @Entity class 'Good' must inherit from ManagedObject: write 'final class Good: ManagedObject'
                var name: String
            }
            """
        }
    }

    @Test func generic() {
        assertMacro {
            """
            @Entity final class Box<T>: ManagedObject {
                var name: String
            }
            """
        } diagnostics: {
            """
            @Entity final class Box<T>: ManagedObject {
                                ┬──
                                ╰─ 🛑 @Entity class 'Box' can't be generic: one class is one entity
                var name: String
            }
            """
        }
    }

    @Test func storedLet() {
        assertMacro {
            """
            @Entity final class Good: ManagedObject {
                let name: String
            }
            """
        } diagnostics: {
            """
            @Entity final class Good: ManagedObject {
                let name: String
                ┬──
                ╰─ 🛑 persistent property 'name' must be 'var' (the context sets it): write 'var name', or mark it @Transient
                   ✏️ replace 'let' with 'var'
            }
            """
        } fixes: {
            """
            @Entity final class Good: ManagedObject {
                var name: String
            }
            """
        } expansion: {
            #"""
            final class Good: ManagedObject {
                var name: String {
                    get {
                        Strata._observationAccess(self, \.name)
                        return self[attribute: "name"] ?? ""
                    }
                    set {
                        Strata._observationMutation(self, \.name) {
                            self[attribute: "name"] = newValue
                        }
                    }
                }

                static let entityDescription: Strata.Entity = Strata._EntityMacroSupport.entity("Good", class: Good.self, [
                    .attribute(Strata.Attribute("name", .string, isOptional: false)),
                    ])

                static var entityName: String {
                    "Good"
                }

                static func propertyName(for keyPath: AnyKeyPath) -> String? {
                    switch keyPath {
                    case \Good.name:
                        "name"
                    default:
                        nil
                    }
                }

                static func keyPath(forPropertyNamed name: String) -> AnyKeyPath? {
                    switch name {
                    case "name":
                        \Good.name
                    default:
                        nil
                    }
                }

                override func _notifyObservers(of name: String, willSet: Bool) {
                    switch name {
                    case "name":
                        Strata._observationNotify(self, \Good.name, willSet: willSet)
                    default:
                        super._notifyObservers(of: name, willSet: willSet)
                    }
                }
            }

            extension Good: Strata.PersistentEntity {
            }
            """#
        }
    }

    @Test func unsupportedTypes() {
        assertMacro {
            """
            @Entity final class Good: ManagedObject {
                var pair: (Int, Int)
                var action: () -> Void
                var handler: (@Sendable () -> Void)?
                var anything: any Codable
                var kind: Good.Type
                var nested: String??
            }
            """
        } diagnostics: {
            """
            @Entity final class Good: ManagedObject {
                var pair: (Int, Int)
                          ┬─────────
                          ╰─ 🛑 'pair': a tuple can't be stored: use an attribute type (String, Int, Date, …), an @Entity class (a PersistentEntity) or a Set of one, or a Codable type; or mark the property @Transient
                var action: () -> Void
                            ┬─────────
                            ╰─ 🛑 'action': a function can't be stored: use an attribute type (String, Int, Date, …), an @Entity class (a PersistentEntity) or a Set of one, or a Codable type; or mark the property @Transient
                var handler: (@Sendable () -> Void)?
                             ┬──────────────────────
                             ╰─ 🛑 'handler': a function can't be stored: use an attribute type (String, Int, Date, …), an @Entity class (a PersistentEntity) or a Set of one, or a Codable type; or mark the property @Transient
                var anything: any Codable
                              ┬──────────
                              ╰─ 🛑 'anything': an existential or opaque type can't be stored: use an attribute type (String, Int, Date, …), an @Entity class (a PersistentEntity) or a Set of one, or a Codable type; or mark the property @Transient
                var kind: Good.Type
                          ┬────────
                          ╰─ 🛑 'kind': a metatype can't be stored: use an attribute type (String, Int, Date, …), an @Entity class (a PersistentEntity) or a Set of one, or a Codable type; or mark the property @Transient
                var nested: String??
                            ┬───────
                            ╰─ 🛑 'nested': a doubly optional type can't be stored: declare it 'T?'
            }
            """
        }
    }

    @Test func toManyWithoutInverse() {
        assertMacro {
            """
            @Entity final class Category: ManagedObject {
                var goods: Set<Good> = []
                @Relationship(deleteRule: .cascade) var items: Set<Item>
            }
            """
        } diagnostics: {
            #"""
            @Entity final class Category: ManagedObject {
                var goods: Set<Good> = []
                    ┬────────────────────
                    ╰─ 🛑 to-many relationship 'goods' needs its inverse: write @Relationship(inverse: \Good.property) naming the to-one on Good (one class's macro can't see the other class)
                @Relationship(deleteRule: .cascade) var items: Set<Item>
                ┬──────────────────────────────────
                ╰─ 🛑 to-many relationship 'items' needs its inverse: write @Relationship(inverse: \Item.property) naming the to-one on Item (one class's macro can't see the other class)
            }
            """#
        }
    }

    @Test func toManyShapes() {
        assertMacro {
            """
            @Entity final class Category: ManagedObject {
                @Relationship(inverse: \\Good.category) var goods: Set<Good>?
                @Relationship(inverse: \\Item.category) var items: Set<Item> = [Item()]
                @Relationship(inverse: \\Tag.category) var tags: [Tag]
            }
            """
        } diagnostics: {
            #"""
            @Entity final class Category: ManagedObject {
                @Relationship(inverse: \Good.category) var goods: Set<Good>?
                                                                  ┬─────────
                                                                  ╰─ 🛑 to-many relationship 'goods' is never nil (it may be empty): declare it 'Set<Good>'
                @Relationship(inverse: \Item.category) var items: Set<Item> = [Item()]
                                                                              ┬───────
                                                                              ╰─ 🛑 to-many relationship 'items' starts empty: write '= []' or no initial value
                @Relationship(inverse: \Tag.category) var tags: [Tag]
                                                                ┬────
                                                                ╰─ 🛑 ordered to-many relationships are not supported; use Set<Tag>
            }
            """#
        }
    }

    @Test func relationshipMisuse() {
        assertMacro {
            """
            @Entity final class Good: ManagedObject {
                @Relationship var name: String?
                @Relationship(inverse: \\Good.goods) var category: Category?
                @Relationship(inverse: "goods") var shelf: Shelf?
                @Relationship(inverse: \\.goods) var aisle: Aisle?
                @Relationship(inverse: \\Owner.goods) var owner: Owner? = Owner()
            }
            """
        } diagnostics: {
            #"""
            @Entity final class Good: ManagedObject {
                @Relationship var name: String?
                ┬────────────
                ╰─ 🛑 'name' is a String attribute, not a relationship: remove @Relationship, or use @Attribute for options
                @Relationship(inverse: \Good.goods) var category: Category?
                                       ┬──────────
                                       ╰─ 🛑 the inverse of 'category' is a property of Category: write \Category.goods
                @Relationship(inverse: "goods") var shelf: Shelf?
                                       ┬──────
                                       ╰─ 🛑 the inverse of 'shelf' is a key path to one property of Shelf: write \Shelf.property
                @Relationship(inverse: \.goods) var aisle: Aisle?
                                       ┬──────
                                       ╰─ 🛑 the inverse of 'aisle' is a property of Aisle: write \Aisle.goods
                @Relationship(inverse: \Owner.goods) var owner: Owner? = Owner()
                                                                         ┬──────
                                                                         ╰─ 🛑 relationship 'owner' has no initial value: remove '= Owner()'
            }
            """#
        }
    }

    @Test func attributeOnComputedProperty() {
        assertMacro {
            """
            @Entity final class Good: ManagedObject {
                var name: String?
                @Attribute(.indexed) var shout: String { name?.uppercased() ?? "" }
                @Relationship var first: Good? { nil }
                @Attribute func touch() {}
            }
            """
        } diagnostics: {
            """
            @Entity final class Good: ManagedObject {
                var name: String?
                @Attribute(.indexed) var shout: String { name?.uppercased() ?? "" }
                ┬───────────────────
                ╰─ 🛑 @Attribute applies to a stored property, and 'shout' is computed: remove @Attribute, or make 'shout' a stored 'var'
                @Relationship var first: Good? { nil }
                ┬────────────
                ╰─ 🛑 @Relationship applies to a stored property, and 'first' is computed: remove @Relationship, or make 'first' a stored 'var'
                @Attribute func touch() {}
                ┬─────────
                ╰─ 🛑 @Attribute applies to a stored property of an @Entity class: remove it here
            }
            """
        }
    }

    @Test func transientWithoutInitialValue() {
        assertMacro {
            """
            @Entity final class Good: ManagedObject {
                @Transient var scratch: Int
                @Transient @Attribute var both: Int = 0
            }
            """
        } diagnostics: {
            """
            @Entity final class Good: ManagedObject {
                @Transient var scratch: Int
                               ┬──────
                               ╰─ 🛑 @Transient property 'scratch' needs an initial value: the context creates objects, so no initialiser sets it; write '= value' (or 'nil' for an optional)
                @Transient @Attribute var both: Int = 0
                           ┬─────────
                           ╰─ 🛑 a @Transient property is not stored: remove @Attribute or @Transient
            }
            """
        }
    }

    @Test func requiredWithoutZero() {
        assertMacro {
            """
            @Entity final class Good: ManagedObject {
                var created: Date
                var id: UUID
                var link: URL
                @Attribute var size: Dimensions
            }
            """
        } diagnostics: {
            """
            @Entity final class Good: ManagedObject {
                var created: Date
                    ┬──────
                    ╰─ 🛑 required Date property 'created' has no zero to read before it is set: give it an initial value (its default), or declare it 'Date?' (optional) or 'Date!' (required, nil until set)
                var id: UUID
                    ┬─
                    ╰─ 🛑 required UUID property 'id' has no zero to read before it is set: give it an initial value (its default), or declare it 'UUID?' (optional) or 'UUID!' (required, nil until set)
                var link: URL
                    ┬───
                    ╰─ 🛑 required URL property 'link' has no zero to read before it is set: give it an initial value (its default), or declare it 'URL?' (optional) or 'URL!' (required, nil until set)
                @Attribute var size: Dimensions
                               ┬───
                               ╰─ 🛑 required Codable property 'size' needs an initial value (its default): write '= value', or declare it 'Dimensions?' (optional) or 'Dimensions!' (required, nil until set)
            }
            """
        }
    }

    @Test func initialValuesComputedOnce() {
        assertMacro {
            """
            @Entity final class Good: ManagedObject {
                var created: Date = Date()
                var touched: Date = .now
                var id: UUID = UUID()
            }
            """
        } diagnostics: {
            """
            @Entity final class Good: ManagedObject {
                var created: Date = Date()
                                    ┬─────
                                    ╰─ 🛑 'created': the initial value is the model's default, computed once and shared by every new object, so 'Date()' would be the time the model was built: set 'created' after insert instead
                var touched: Date = .now
                                    ┬───
                                    ╰─ 🛑 'touched': the initial value is the model's default, computed once and shared by every new object, so '.now' would be the time the model was built: set 'touched' after insert instead
                var id: UUID = UUID()
                               ┬─────
                               ╰─ 🛑 'id': the initial value is the model's default, computed once and shared by every new object, so 'UUID()' would be one UUID for all objects: set 'id' after insert instead
            }
            """
        }
    }

    @Test func otherShapes() {
        assertMacro {
            """
            @Entity final class Good: ManagedObject {
                var name = makeName()
                var a, b: Int
                var count: Int = 0 {
                    didSet { print(count) }
                }
                var (x, y): (Int, Int) = (0, 0)
                @Attribute(.spotlight) var code: String
            }
            """
        } diagnostics: {
            """
            @Entity final class Good: ManagedObject {
                var name = makeName()
                    ┬───
                    ╰─ 🛑 persistent property 'name' needs a type annotation: write 'var name: Type'
                var a, b: Int
                ┬────────────
                ╰─ 🛑 declare one persistent property per 'var': write each on its own line
                var count: Int = 0 {
                                   ╰─ 🛑 'count': willSet and didSet are not supported on a persistent property: do the work where it is set, or mark it @Transient
                    didSet { print(count) }
                }
                var (x, y): (Int, Int) = (0, 0)
                    ┬─────
                    ╰─ 🛑 a persistent property needs a plain name: write 'var name: Type'
                @Attribute(.spotlight) var code: String
                           ┬─────────
                           ╰─ 🛑 '.spotlight' is not an @Attribute option: the options are .indexed, .unique and .preserveValueOnDeletion
            }
            """
        }
    }
}
