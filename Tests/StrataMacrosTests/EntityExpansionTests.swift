import MacroTesting
import Testing

/// What `@Entity` generates for each property shape it supports.
@Suite(.macros(strataMacros, record: .missing))
struct EntityExpansionTests {
    /// The demo's `Good`. Each accessor makes the demo's hand-written subscript call
    /// (`self[attribute: "name"] ?? ""`, `self[attribute: "name"] = newValue`), told to the
    /// `Observation` module around it: `_observationAccess` (one flag read when the context does
    /// not observe) and `_observationMutation` (one load when the object has no registrar). The
    /// required to-one reads through `_persisted…`, an `@inlinable` forward to
    /// `self[requiredToOne:]` / `self[toOne:]`.
    @Test func demoGood() {
        assertMacro {
            """
            @Entity final class Good: ManagedObject {
                @Attribute(maxLength: 80) var name: String
                @Attribute(minValue: 0) var number: Int64 = 0
                var category: Category
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
                var number: Int64 {
                    get {
                        Strata._observationAccess(self, \.number)
                        return self[attribute: "number"] ?? 0
                    }
                    set {
                        Strata._observationMutation(self, \.number) {
                            self[attribute: "number"] = newValue
                        }
                    }
                }
                var category: Category {
                    get {
                        Strata._observationAccess(self, \.category)
                        return self[_persistedRequired: "category"]
                    }
                    set {
                        Strata._observationMutation(self, \.category) {
                            self[_persisted: "category"] = newValue
                        }
                    }
                }

                static let entityDescription: Strata.Entity = Strata._EntityMacroSupport.entity("Good", class: Good.self, [
                    .attribute(Strata.Attribute("name", .string, isOptional: false, maxLength: 80)),
                    .attribute(Strata.Attribute("number", .int64, isOptional: false, defaultValue: .int64(0), minValue: 0)),
                    Strata._EntityMacroSupport.inferred("category", Category.self, isOptional: false),
                    ])

                static var entityName: String {
                    "Good"
                }

                static func propertyName(for keyPath: AnyKeyPath) -> String? {
                    switch keyPath {
                    case \Good.name:
                        "name"
                    case \Good.number:
                        "number"
                    case \Good.category:
                        "category"
                    default:
                        nil
                    }
                }

                static func keyPath(forPropertyNamed name: String) -> AnyKeyPath? {
                    switch name {
                    case "name":
                        \Good.name
                    case "number":
                        \Good.number
                    case "category":
                        \Good.category
                    default:
                        nil
                    }
                }

                override func _notifyObservers(of name: String, willSet: Bool) {
                    switch name {
                    case "name":
                        Strata._observationNotify(self, \Good.name, willSet: willSet)
                    case "number":
                        Strata._observationNotify(self, \Good.number, willSet: willSet)
                    case "category":
                        Strata._observationNotify(self, \Good.category, willSet: willSet)
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

    @Test func demoCategoryWithIndexAndToManyInverse() {
        assertMacro {
            """
            @Entity final class Category: ManagedObject {
                @Attribute(.indexed) var name: String
                @Relationship(inverse: \\Good.category, deleteRule: .cascade) var goods: Set<Good> = []
            }
            """
        } expansion: {
            #"""
            final class Category: ManagedObject {
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
                var goods: Set<Good> {
                    get {
                        Strata._observationAccess(self, \.goods)
                        return self[toMany: "goods"]
                    }
                    set {
                        Strata._observationMutation(self, \.goods) {
                            self[toMany: "goods"] = newValue
                        }
                    }
                }

                static let entityDescription: Strata.Entity = Strata._EntityMacroSupport.entity("Category", class: Category.self, [
                    .attribute(Strata.Attribute("name", .string, isOptional: false, isIndexed: true)),
                    Strata._EntityMacroSupport.toMany("goods", Good.self, inverse: "category", deleteRule: .cascade),
                    ])

                static var entityName: String {
                    "Category"
                }

                static func propertyName(for keyPath: AnyKeyPath) -> String? {
                    switch keyPath {
                    case \Category.name:
                        "name"
                    case \Category.goods:
                        "goods"
                    default:
                        nil
                    }
                }

                static func keyPath(forPropertyNamed name: String) -> AnyKeyPath? {
                    switch name {
                    case "name":
                        \Category.name
                    case "goods":
                        \Category.goods
                    default:
                        nil
                    }
                }

                override func _notifyObservers(of name: String, willSet: Bool) {
                    switch name {
                    case "name":
                        Strata._observationNotify(self, \Category.name, willSet: willSet)
                    case "goods":
                        Strata._observationNotify(self, \Category.goods, willSet: willSet)
                    default:
                        super._notifyObservers(of: name, willSet: willSet)
                    }
                }
            }

            extension Category: Strata.PersistentEntity {
            }
            """#
        }
    }

    @Test func everyAttributeTypeOptional() {
        assertMacro {
            """
            @Entity final class Sample: ManagedObject {
                var text: String?
                var count: Int?
                var i64: Int64?
                var i16: Int16?
                var i32: Int32?
                var dbl: Double?
                var flt: Float?
                var flag: Bool?
                var when: Date?
                var blob: Data?
                var uid: UUID?
                var link: URL?
                var amount: Decimal?
                var spelled: Optional<String>
                var qualified: Foundation.Date?
            }
            """
        } expansion: {
            #"""
            final class Sample: ManagedObject {
                var text: String? {
                    get {
                        Strata._observationAccess(self, \.text)
                        return self[attribute: "text"]
                    }
                    set {
                        Strata._observationMutation(self, \.text) {
                            self[attribute: "text"] = newValue
                        }
                    }
                }
                var count: Int? {
                    get {
                        Strata._observationAccess(self, \.count)
                        return self[attribute: "count"]
                    }
                    set {
                        Strata._observationMutation(self, \.count) {
                            self[attribute: "count"] = newValue
                        }
                    }
                }
                var i64: Int64? {
                    get {
                        Strata._observationAccess(self, \.i64)
                        return self[attribute: "i64"]
                    }
                    set {
                        Strata._observationMutation(self, \.i64) {
                            self[attribute: "i64"] = newValue
                        }
                    }
                }
                var i16: Int16? {
                    get {
                        Strata._observationAccess(self, \.i16)
                        return self[attribute: "i16"]
                    }
                    set {
                        Strata._observationMutation(self, \.i16) {
                            self[attribute: "i16"] = newValue
                        }
                    }
                }
                var i32: Int32? {
                    get {
                        Strata._observationAccess(self, \.i32)
                        return self[attribute: "i32"]
                    }
                    set {
                        Strata._observationMutation(self, \.i32) {
                            self[attribute: "i32"] = newValue
                        }
                    }
                }
                var dbl: Double? {
                    get {
                        Strata._observationAccess(self, \.dbl)
                        return self[attribute: "dbl"]
                    }
                    set {
                        Strata._observationMutation(self, \.dbl) {
                            self[attribute: "dbl"] = newValue
                        }
                    }
                }
                var flt: Float? {
                    get {
                        Strata._observationAccess(self, \.flt)
                        return self[attribute: "flt"]
                    }
                    set {
                        Strata._observationMutation(self, \.flt) {
                            self[attribute: "flt"] = newValue
                        }
                    }
                }
                var flag: Bool? {
                    get {
                        Strata._observationAccess(self, \.flag)
                        return self[attribute: "flag"]
                    }
                    set {
                        Strata._observationMutation(self, \.flag) {
                            self[attribute: "flag"] = newValue
                        }
                    }
                }
                var when: Date? {
                    get {
                        Strata._observationAccess(self, \.when)
                        return self[attribute: "when"]
                    }
                    set {
                        Strata._observationMutation(self, \.when) {
                            self[attribute: "when"] = newValue
                        }
                    }
                }
                var blob: Data? {
                    get {
                        Strata._observationAccess(self, \.blob)
                        return self[attribute: "blob"]
                    }
                    set {
                        Strata._observationMutation(self, \.blob) {
                            self[attribute: "blob"] = newValue
                        }
                    }
                }
                var uid: UUID? {
                    get {
                        Strata._observationAccess(self, \.uid)
                        return self[attribute: "uid"]
                    }
                    set {
                        Strata._observationMutation(self, \.uid) {
                            self[attribute: "uid"] = newValue
                        }
                    }
                }
                var link: URL? {
                    get {
                        Strata._observationAccess(self, \.link)
                        return self[attribute: "link"]
                    }
                    set {
                        Strata._observationMutation(self, \.link) {
                            self[attribute: "link"] = newValue
                        }
                    }
                }
                var amount: Decimal? {
                    get {
                        Strata._observationAccess(self, \.amount)
                        return self[attribute: "amount"]
                    }
                    set {
                        Strata._observationMutation(self, \.amount) {
                            self[attribute: "amount"] = newValue
                        }
                    }
                }
                var spelled: Optional<String> {
                    get {
                        Strata._observationAccess(self, \.spelled)
                        return self[attribute: "spelled"]
                    }
                    set {
                        Strata._observationMutation(self, \.spelled) {
                            self[attribute: "spelled"] = newValue
                        }
                    }
                }
                var qualified: Foundation.Date? {
                    get {
                        Strata._observationAccess(self, \.qualified)
                        return self[attribute: "qualified"]
                    }
                    set {
                        Strata._observationMutation(self, \.qualified) {
                            self[attribute: "qualified"] = newValue
                        }
                    }
                }

                static let entityDescription: Strata.Entity = Strata._EntityMacroSupport.entity("Sample", class: Sample.self, [
                    .attribute(Strata.Attribute("text", .string)),
                    .attribute(Strata.Attribute("count", .int64)),
                    .attribute(Strata.Attribute("i64", .int64)),
                    .attribute(Strata.Attribute("i16", .int16)),
                    .attribute(Strata.Attribute("i32", .int32)),
                    .attribute(Strata.Attribute("dbl", .double)),
                    .attribute(Strata.Attribute("flt", .float)),
                    .attribute(Strata.Attribute("flag", .bool)),
                    .attribute(Strata.Attribute("when", .date)),
                    .attribute(Strata.Attribute("blob", .binary)),
                    .attribute(Strata.Attribute("uid", .uuid)),
                    .attribute(Strata.Attribute("link", .url)),
                    .attribute(Strata.Attribute("amount", .decimal)),
                    .attribute(Strata.Attribute("spelled", .string)),
                    .attribute(Strata.Attribute("qualified", .date)),
                    ])

                static var entityName: String {
                    "Sample"
                }

                static func propertyName(for keyPath: AnyKeyPath) -> String? {
                    switch keyPath {
                    case \Sample.text:
                        "text"
                    case \Sample.count:
                        "count"
                    case \Sample.i64:
                        "i64"
                    case \Sample.i16:
                        "i16"
                    case \Sample.i32:
                        "i32"
                    case \Sample.dbl:
                        "dbl"
                    case \Sample.flt:
                        "flt"
                    case \Sample.flag:
                        "flag"
                    case \Sample.when:
                        "when"
                    case \Sample.blob:
                        "blob"
                    case \Sample.uid:
                        "uid"
                    case \Sample.link:
                        "link"
                    case \Sample.amount:
                        "amount"
                    case \Sample.spelled:
                        "spelled"
                    case \Sample.qualified:
                        "qualified"
                    default:
                        nil
                    }
                }

                static func keyPath(forPropertyNamed name: String) -> AnyKeyPath? {
                    switch name {
                    case "text":
                        \Sample.text
                    case "count":
                        \Sample.count
                    case "i64":
                        \Sample.i64
                    case "i16":
                        \Sample.i16
                    case "i32":
                        \Sample.i32
                    case "dbl":
                        \Sample.dbl
                    case "flt":
                        \Sample.flt
                    case "flag":
                        \Sample.flag
                    case "when":
                        \Sample.when
                    case "blob":
                        \Sample.blob
                    case "uid":
                        \Sample.uid
                    case "link":
                        \Sample.link
                    case "amount":
                        \Sample.amount
                    case "spelled":
                        \Sample.spelled
                    case "qualified":
                        \Sample.qualified
                    default:
                        nil
                    }
                }

                override func _notifyObservers(of name: String, willSet: Bool) {
                    switch name {
                    case "text":
                        Strata._observationNotify(self, \Sample.text, willSet: willSet)
                    case "count":
                        Strata._observationNotify(self, \Sample.count, willSet: willSet)
                    case "i64":
                        Strata._observationNotify(self, \Sample.i64, willSet: willSet)
                    case "i16":
                        Strata._observationNotify(self, \Sample.i16, willSet: willSet)
                    case "i32":
                        Strata._observationNotify(self, \Sample.i32, willSet: willSet)
                    case "dbl":
                        Strata._observationNotify(self, \Sample.dbl, willSet: willSet)
                    case "flt":
                        Strata._observationNotify(self, \Sample.flt, willSet: willSet)
                    case "flag":
                        Strata._observationNotify(self, \Sample.flag, willSet: willSet)
                    case "when":
                        Strata._observationNotify(self, \Sample.when, willSet: willSet)
                    case "blob":
                        Strata._observationNotify(self, \Sample.blob, willSet: willSet)
                    case "uid":
                        Strata._observationNotify(self, \Sample.uid, willSet: willSet)
                    case "link":
                        Strata._observationNotify(self, \Sample.link, willSet: willSet)
                    case "amount":
                        Strata._observationNotify(self, \Sample.amount, willSet: willSet)
                    case "spelled":
                        Strata._observationNotify(self, \Sample.spelled, willSet: willSet)
                    case "qualified":
                        Strata._observationNotify(self, \Sample.qualified, willSet: willSet)
                    default:
                        super._notifyObservers(of: name, willSet: willSet)
                    }
                }
            }

            extension Sample: Strata.PersistentEntity {
            }
            """#
        }
    }

    @Test func requiredAttributesReadTheirDefaultOrZero() {
        assertMacro {
            """
            @Entity final class Defaults: ManagedObject {
                var text: String
                var count: Int
                var i16: Int16
                var i32: Int32
                var dbl: Double
                var flt: Float
                var flag: Bool
                var blob: Data
                var amount: Decimal
                var title: String = "Untitled"
                var big: Int = Int.max
                var small: Int16 = -1
                var ratio: Double = 0.5
                var on: Bool = true
                var start: Date = .distantPast
                var uid: UUID!
                var link: URL!
                var optionalWithDefault: String? = "x"
                var optionalNil: String? = nil
            }
            """
        } expansion: {
            #"""
            final class Defaults: ManagedObject {
                var text: String {
                    get {
                        Strata._observationAccess(self, \.text)
                        return self[attribute: "text"] ?? ""
                    }
                    set {
                        Strata._observationMutation(self, \.text) {
                            self[attribute: "text"] = newValue
                        }
                    }
                }
                var count: Int {
                    get {
                        Strata._observationAccess(self, \.count)
                        return self[attribute: "count"] ?? 0
                    }
                    set {
                        Strata._observationMutation(self, \.count) {
                            self[attribute: "count"] = newValue
                        }
                    }
                }
                var i16: Int16 {
                    get {
                        Strata._observationAccess(self, \.i16)
                        return self[attribute: "i16"] ?? 0
                    }
                    set {
                        Strata._observationMutation(self, \.i16) {
                            self[attribute: "i16"] = newValue
                        }
                    }
                }
                var i32: Int32 {
                    get {
                        Strata._observationAccess(self, \.i32)
                        return self[attribute: "i32"] ?? 0
                    }
                    set {
                        Strata._observationMutation(self, \.i32) {
                            self[attribute: "i32"] = newValue
                        }
                    }
                }
                var dbl: Double {
                    get {
                        Strata._observationAccess(self, \.dbl)
                        return self[attribute: "dbl"] ?? 0
                    }
                    set {
                        Strata._observationMutation(self, \.dbl) {
                            self[attribute: "dbl"] = newValue
                        }
                    }
                }
                var flt: Float {
                    get {
                        Strata._observationAccess(self, \.flt)
                        return self[attribute: "flt"] ?? 0
                    }
                    set {
                        Strata._observationMutation(self, \.flt) {
                            self[attribute: "flt"] = newValue
                        }
                    }
                }
                var flag: Bool {
                    get {
                        Strata._observationAccess(self, \.flag)
                        return self[attribute: "flag"] ?? false
                    }
                    set {
                        Strata._observationMutation(self, \.flag) {
                            self[attribute: "flag"] = newValue
                        }
                    }
                }
                var blob: Data {
                    get {
                        Strata._observationAccess(self, \.blob)
                        return self[attribute: "blob"] ?? Data()
                    }
                    set {
                        Strata._observationMutation(self, \.blob) {
                            self[attribute: "blob"] = newValue
                        }
                    }
                }
                var amount: Decimal {
                    get {
                        Strata._observationAccess(self, \.amount)
                        return self[attribute: "amount"] ?? 0
                    }
                    set {
                        Strata._observationMutation(self, \.amount) {
                            self[attribute: "amount"] = newValue
                        }
                    }
                }
                var title: String {
                    get {
                        Strata._observationAccess(self, \.title)
                        return self[attribute: "title"] ?? "Untitled"
                    }
                    set {
                        Strata._observationMutation(self, \.title) {
                            self[attribute: "title"] = newValue
                        }
                    }
                }
                var big: Int {
                    get {
                        Strata._observationAccess(self, \.big)
                        return self[attribute: "big"] ?? Int.max
                    }
                    set {
                        Strata._observationMutation(self, \.big) {
                            self[attribute: "big"] = newValue
                        }
                    }
                }
                var small: Int16 {
                    get {
                        Strata._observationAccess(self, \.small)
                        return self[attribute: "small"] ?? -1
                    }
                    set {
                        Strata._observationMutation(self, \.small) {
                            self[attribute: "small"] = newValue
                        }
                    }
                }
                var ratio: Double {
                    get {
                        Strata._observationAccess(self, \.ratio)
                        return self[attribute: "ratio"] ?? 0.5
                    }
                    set {
                        Strata._observationMutation(self, \.ratio) {
                            self[attribute: "ratio"] = newValue
                        }
                    }
                }
                var on: Bool {
                    get {
                        Strata._observationAccess(self, \.on)
                        return self[attribute: "on"] ?? true
                    }
                    set {
                        Strata._observationMutation(self, \.on) {
                            self[attribute: "on"] = newValue
                        }
                    }
                }
                var start: Date {
                    get {
                        Strata._observationAccess(self, \.start)
                        return self[attribute: "start"] ?? .distantPast
                    }
                    set {
                        Strata._observationMutation(self, \.start) {
                            self[attribute: "start"] = newValue
                        }
                    }
                }
                var uid: UUID! {
                    get {
                        Strata._observationAccess(self, \.uid)
                        return self[attribute: "uid"]
                    }
                    set {
                        Strata._observationMutation(self, \.uid) {
                            self[attribute: "uid"] = newValue
                        }
                    }
                }
                var link: URL! {
                    get {
                        Strata._observationAccess(self, \.link)
                        return self[attribute: "link"]
                    }
                    set {
                        Strata._observationMutation(self, \.link) {
                            self[attribute: "link"] = newValue
                        }
                    }
                }
                var optionalWithDefault: String? {
                    get {
                        Strata._observationAccess(self, \.optionalWithDefault)
                        return self[attribute: "optionalWithDefault"]
                    }
                    set {
                        Strata._observationMutation(self, \.optionalWithDefault) {
                            self[attribute: "optionalWithDefault"] = newValue
                        }
                    }
                }
                var optionalNil: String? {
                    get {
                        Strata._observationAccess(self, \.optionalNil)
                        return self[attribute: "optionalNil"]
                    }
                    set {
                        Strata._observationMutation(self, \.optionalNil) {
                            self[attribute: "optionalNil"] = newValue
                        }
                    }
                }

                static let entityDescription: Strata.Entity = Strata._EntityMacroSupport.entity("Defaults", class: Defaults.self, [
                    .attribute(Strata.Attribute("text", .string, isOptional: false)),
                    .attribute(Strata.Attribute("count", .int64, isOptional: false)),
                    .attribute(Strata.Attribute("i16", .int16, isOptional: false)),
                    .attribute(Strata.Attribute("i32", .int32, isOptional: false)),
                    .attribute(Strata.Attribute("dbl", .double, isOptional: false)),
                    .attribute(Strata.Attribute("flt", .float, isOptional: false)),
                    .attribute(Strata.Attribute("flag", .bool, isOptional: false)),
                    .attribute(Strata.Attribute("blob", .binary, isOptional: false)),
                    .attribute(Strata.Attribute("amount", .decimal, isOptional: false)),
                    .attribute(Strata.Attribute("title", .string, isOptional: false, defaultValue: .string("Untitled"))),
                    .attribute(Strata.Attribute("big", .int64, isOptional: false, defaultValue: .int64(Int64(Int.max)))),
                    .attribute(Strata.Attribute("small", .int16, isOptional: false, defaultValue: .int16(-1))),
                    .attribute(Strata.Attribute("ratio", .double, isOptional: false, defaultValue: .double(0.5))),
                    .attribute(Strata.Attribute("on", .bool, isOptional: false, defaultValue: .bool(true))),
                    .attribute(Strata.Attribute("start", .date, isOptional: false, defaultValue: .date(.distantPast))),
                    .attribute(Strata.Attribute("uid", .uuid, isOptional: false)),
                    .attribute(Strata.Attribute("link", .url, isOptional: false)),
                    .attribute(Strata.Attribute("optionalWithDefault", .string, defaultValue: .string("x"))),
                    .attribute(Strata.Attribute("optionalNil", .string)),
                    ])

                static var entityName: String {
                    "Defaults"
                }

                static func propertyName(for keyPath: AnyKeyPath) -> String? {
                    switch keyPath {
                    case \Defaults.text:
                        "text"
                    case \Defaults.count:
                        "count"
                    case \Defaults.i16:
                        "i16"
                    case \Defaults.i32:
                        "i32"
                    case \Defaults.dbl:
                        "dbl"
                    case \Defaults.flt:
                        "flt"
                    case \Defaults.flag:
                        "flag"
                    case \Defaults.blob:
                        "blob"
                    case \Defaults.amount:
                        "amount"
                    case \Defaults.title:
                        "title"
                    case \Defaults.big:
                        "big"
                    case \Defaults.small:
                        "small"
                    case \Defaults.ratio:
                        "ratio"
                    case \Defaults.on:
                        "on"
                    case \Defaults.start:
                        "start"
                    case \Defaults.uid:
                        "uid"
                    case \Defaults.link:
                        "link"
                    case \Defaults.optionalWithDefault:
                        "optionalWithDefault"
                    case \Defaults.optionalNil:
                        "optionalNil"
                    default:
                        nil
                    }
                }

                static func keyPath(forPropertyNamed name: String) -> AnyKeyPath? {
                    switch name {
                    case "text":
                        \Defaults.text
                    case "count":
                        \Defaults.count
                    case "i16":
                        \Defaults.i16
                    case "i32":
                        \Defaults.i32
                    case "dbl":
                        \Defaults.dbl
                    case "flt":
                        \Defaults.flt
                    case "flag":
                        \Defaults.flag
                    case "blob":
                        \Defaults.blob
                    case "amount":
                        \Defaults.amount
                    case "title":
                        \Defaults.title
                    case "big":
                        \Defaults.big
                    case "small":
                        \Defaults.small
                    case "ratio":
                        \Defaults.ratio
                    case "on":
                        \Defaults.on
                    case "start":
                        \Defaults.start
                    case "uid":
                        \Defaults.uid
                    case "link":
                        \Defaults.link
                    case "optionalWithDefault":
                        \Defaults.optionalWithDefault
                    case "optionalNil":
                        \Defaults.optionalNil
                    default:
                        nil
                    }
                }

                override func _notifyObservers(of name: String, willSet: Bool) {
                    switch name {
                    case "text":
                        Strata._observationNotify(self, \Defaults.text, willSet: willSet)
                    case "count":
                        Strata._observationNotify(self, \Defaults.count, willSet: willSet)
                    case "i16":
                        Strata._observationNotify(self, \Defaults.i16, willSet: willSet)
                    case "i32":
                        Strata._observationNotify(self, \Defaults.i32, willSet: willSet)
                    case "dbl":
                        Strata._observationNotify(self, \Defaults.dbl, willSet: willSet)
                    case "flt":
                        Strata._observationNotify(self, \Defaults.flt, willSet: willSet)
                    case "flag":
                        Strata._observationNotify(self, \Defaults.flag, willSet: willSet)
                    case "blob":
                        Strata._observationNotify(self, \Defaults.blob, willSet: willSet)
                    case "amount":
                        Strata._observationNotify(self, \Defaults.amount, willSet: willSet)
                    case "title":
                        Strata._observationNotify(self, \Defaults.title, willSet: willSet)
                    case "big":
                        Strata._observationNotify(self, \Defaults.big, willSet: willSet)
                    case "small":
                        Strata._observationNotify(self, \Defaults.small, willSet: willSet)
                    case "ratio":
                        Strata._observationNotify(self, \Defaults.ratio, willSet: willSet)
                    case "on":
                        Strata._observationNotify(self, \Defaults.on, willSet: willSet)
                    case "start":
                        Strata._observationNotify(self, \Defaults.start, willSet: willSet)
                    case "uid":
                        Strata._observationNotify(self, \Defaults.uid, willSet: willSet)
                    case "link":
                        Strata._observationNotify(self, \Defaults.link, willSet: willSet)
                    case "optionalWithDefault":
                        Strata._observationNotify(self, \Defaults.optionalWithDefault, willSet: willSet)
                    case "optionalNil":
                        Strata._observationNotify(self, \Defaults.optionalNil, willSet: willSet)
                    default:
                        super._notifyObservers(of: name, willSet: willSet)
                    }
                }
            }

            extension Defaults: Strata.PersistentEntity {
            }
            """#
        }
    }

    @Test func attributeOptions() {
        assertMacro {
            """
            @Entity final class Rules: ManagedObject {
                @Attribute(.indexed, minValue: 1, maxValue: 9, renamingIdentifier: "level") var rank: Int32 = 1
                @Attribute(minLength: 1, maxLength: 40, regex: "[a-z]+") var code: String
                @Attribute(.indexed) var when: Date?
            }
            """
        } expansion: {
            #"""
            final class Rules: ManagedObject {
                var rank: Int32 {
                    get {
                        Strata._observationAccess(self, \.rank)
                        return self[attribute: "rank"] ?? 1
                    }
                    set {
                        Strata._observationMutation(self, \.rank) {
                            self[attribute: "rank"] = newValue
                        }
                    }
                }
                var code: String {
                    get {
                        Strata._observationAccess(self, \.code)
                        return self[attribute: "code"] ?? ""
                    }
                    set {
                        Strata._observationMutation(self, \.code) {
                            self[attribute: "code"] = newValue
                        }
                    }
                }
                var when: Date? {
                    get {
                        Strata._observationAccess(self, \.when)
                        return self[attribute: "when"]
                    }
                    set {
                        Strata._observationMutation(self, \.when) {
                            self[attribute: "when"] = newValue
                        }
                    }
                }

                static let entityDescription: Strata.Entity = Strata._EntityMacroSupport.entity("Rules", class: Rules.self, [
                    .attribute(Strata.Attribute("rank", .int32, isOptional: false, defaultValue: .int32(1), minValue: 1, maxValue: 9, isIndexed: true, renamingIdentifier: "level")),
                    .attribute(Strata.Attribute("code", .string, isOptional: false, minLength: 1, maxLength: 40, regex: "[a-z]+")),
                    .attribute(Strata.Attribute("when", .date, isIndexed: true)),
                    ])

                static var entityName: String {
                    "Rules"
                }

                static func propertyName(for keyPath: AnyKeyPath) -> String? {
                    switch keyPath {
                    case \Rules.rank:
                        "rank"
                    case \Rules.code:
                        "code"
                    case \Rules.when:
                        "when"
                    default:
                        nil
                    }
                }

                static func keyPath(forPropertyNamed name: String) -> AnyKeyPath? {
                    switch name {
                    case "rank":
                        \Rules.rank
                    case "code":
                        \Rules.code
                    case "when":
                        \Rules.when
                    default:
                        nil
                    }
                }

                override func _notifyObservers(of name: String, willSet: Bool) {
                    switch name {
                    case "rank":
                        Strata._observationNotify(self, \Rules.rank, willSet: willSet)
                    case "code":
                        Strata._observationNotify(self, \Rules.code, willSet: willSet)
                    case "when":
                        Strata._observationNotify(self, \Rules.when, willSet: willSet)
                    default:
                        super._notifyObservers(of: name, willSet: willSet)
                    }
                }
            }

            extension Rules: Strata.PersistentEntity {
            }
            """#
        }
    }

    @Test func transientStaticComputedAndLazyPropertiesAreLeftAlone() {
        assertMacro {
            """
            @Entity final class Note: ManagedObject {
                var text: String?
                @Transient var scratch = 0
                @Transient var cache: [String: Int] = [:]
                static var shared = 0
                var shout: String { text?.uppercased() ?? "" }
                lazy var words: [String] = []
                func touch() {}
            }
            """
        } expansion: {
            #"""
            final class Note: ManagedObject {
                var text: String? {
                    get {
                        Strata._observationAccess(self, \.text)
                        return self[attribute: "text"]
                    }
                    set {
                        Strata._observationMutation(self, \.text) {
                            self[attribute: "text"] = newValue
                        }
                    }
                }
                var scratch = 0
                var cache: [String: Int] = [:]
                static var shared = 0
                var shout: String { text?.uppercased() ?? "" }
                lazy var words: [String] = []
                func touch() {}

                static let entityDescription: Strata.Entity = Strata._EntityMacroSupport.entity("Note", class: Note.self, [
                    .attribute(Strata.Attribute("text", .string)),
                    ])

                static var entityName: String {
                    "Note"
                }

                static func propertyName(for keyPath: AnyKeyPath) -> String? {
                    switch keyPath {
                    case \Note.text:
                        "text"
                    default:
                        nil
                    }
                }

                static func keyPath(forPropertyNamed name: String) -> AnyKeyPath? {
                    switch name {
                    case "text":
                        \Note.text
                    default:
                        nil
                    }
                }

                override func _notifyObservers(of name: String, willSet: Bool) {
                    switch name {
                    case "text":
                        Strata._observationNotify(self, \Note.text, willSet: willSet)
                    default:
                        super._notifyObservers(of: name, willSet: willSet)
                    }
                }
            }

            extension Note: Strata.PersistentEntity {
            }
            """#
        }
    }

    @Test func codableProperties() {
        assertMacro {
            """
            @Entity final class Gadget: ManagedObject {
                var size: Dimensions?
                var finish: Finish = .matte
                var tags: [String] = []
                var scores: [String: Int]?
                var later: Dimensions!
                @Attribute var labels: Set<Tag> = []
                @Attribute(renamingIdentifier: "shape") var form: Dimensions?
            }
            """
        } expansion: {
            #"""
            final class Gadget: ManagedObject {
                var size: Dimensions? {
                    get {
                        Strata._observationAccess(self, \.size)
                        return self[_persisted: "size"]
                    }
                    set {
                        Strata._observationMutation(self, \.size) {
                            self[_persisted: "size"] = newValue
                        }
                    }
                }
                var finish: Finish {
                    get {
                        Strata._observationAccess(self, \.finish)
                        return self[_persisted: "finish"] ?? .matte
                    }
                    set {
                        Strata._observationMutation(self, \.finish) {
                            self[_persisted: "finish"] = newValue
                        }
                    }
                }
                var tags: [String] {
                    get {
                        Strata._observationAccess(self, \.tags)
                        return self[_persisted: "tags"] ?? []
                    }
                    set {
                        Strata._observationMutation(self, \.tags) {
                            self[_persisted: "tags"] = newValue
                        }
                    }
                }
                var scores: [String: Int]? {
                    get {
                        Strata._observationAccess(self, \.scores)
                        return self[_persisted: "scores"]
                    }
                    set {
                        Strata._observationMutation(self, \.scores) {
                            self[_persisted: "scores"] = newValue
                        }
                    }
                }
                var later: Dimensions! {
                    get {
                        Strata._observationAccess(self, \.later)
                        return self[_persisted: "later"]
                    }
                    set {
                        Strata._observationMutation(self, \.later) {
                            self[_persisted: "later"] = newValue
                        }
                    }
                }
                var labels: Set<Tag> {
                    get {
                        Strata._observationAccess(self, \.labels)
                        return self[codable: "labels"] ?? []
                    }
                    set {
                        Strata._observationMutation(self, \.labels) {
                            self[codable: "labels"] = newValue
                        }
                    }
                }
                var form: Dimensions? {
                    get {
                        Strata._observationAccess(self, \.form)
                        return self[codable: "form"]
                    }
                    set {
                        Strata._observationMutation(self, \.form) {
                            self[codable: "form"] = newValue
                        }
                    }
                }

                static let entityDescription: Strata.Entity = Strata._EntityMacroSupport.entity("Gadget", class: Gadget.self, [
                    Strata._EntityMacroSupport.inferred("size", Dimensions.self, isOptional: true),
                    Strata._EntityMacroSupport.inferred("finish", Finish.self, isOptional: false, defaultValue: .matte),
                    Strata._EntityMacroSupport.inferred("tags", [String].self, isOptional: false, defaultValue: []),
                    Strata._EntityMacroSupport.inferred("scores", [String: Int].self, isOptional: true),
                    Strata._EntityMacroSupport.inferred("later", Dimensions.self, isOptional: false),
                    Strata._EntityMacroSupport.codable(Strata.Attribute("labels", .binary, isOptional: false), Set<Tag>.self, defaultValue: []),
                    Strata._EntityMacroSupport.codable(Strata.Attribute("form", .binary, renamingIdentifier: "shape"), Dimensions.self),
                    ])

                static var entityName: String {
                    "Gadget"
                }

                static func propertyName(for keyPath: AnyKeyPath) -> String? {
                    switch keyPath {
                    case \Gadget.size:
                        "size"
                    case \Gadget.finish:
                        "finish"
                    case \Gadget.tags:
                        "tags"
                    case \Gadget.scores:
                        "scores"
                    case \Gadget.later:
                        "later"
                    case \Gadget.labels:
                        "labels"
                    case \Gadget.form:
                        "form"
                    default:
                        nil
                    }
                }

                static func keyPath(forPropertyNamed name: String) -> AnyKeyPath? {
                    switch name {
                    case "size":
                        \Gadget.size
                    case "finish":
                        \Gadget.finish
                    case "tags":
                        \Gadget.tags
                    case "scores":
                        \Gadget.scores
                    case "later":
                        \Gadget.later
                    case "labels":
                        \Gadget.labels
                    case "form":
                        \Gadget.form
                    default:
                        nil
                    }
                }

                override func _notifyObservers(of name: String, willSet: Bool) {
                    switch name {
                    case "size":
                        Strata._observationNotify(self, \Gadget.size, willSet: willSet)
                    case "finish":
                        Strata._observationNotify(self, \Gadget.finish, willSet: willSet)
                    case "tags":
                        Strata._observationNotify(self, \Gadget.tags, willSet: willSet)
                    case "scores":
                        Strata._observationNotify(self, \Gadget.scores, willSet: willSet)
                    case "later":
                        Strata._observationNotify(self, \Gadget.later, willSet: willSet)
                    case "labels":
                        Strata._observationNotify(self, \Gadget.labels, willSet: willSet)
                    case "form":
                        Strata._observationNotify(self, \Gadget.form, willSet: willSet)
                    default:
                        super._notifyObservers(of: name, willSet: willSet)
                    }
                }
            }

            extension Gadget: Strata.PersistentEntity {
            }
            """#
        }
    }

    @Test func toOneRelationships() {
        assertMacro {
            """
            @Entity final class Employee: ManagedObject {
                var desk: Desk?
                @Relationship(inverse: \\Department.employees, deleteRule: .nullify, renamingIdentifier: "team") var department: Department?
                @Relationship(inverse: \\Badge.owner, deleteRule: .cascade) var badge: Badge!
                @Relationship var mentor: Employee?
                @Relationship(inverse: \\Company.staff) var company: Company
                @Relationship(inverse: \\Project.members) var projects: Set<Project> = []
            }
            """
        } expansion: {
            #"""
            final class Employee: ManagedObject {
                var desk: Desk? {
                    get {
                        Strata._observationAccess(self, \.desk)
                        return self[_persisted: "desk"]
                    }
                    set {
                        Strata._observationMutation(self, \.desk) {
                            self[_persisted: "desk"] = newValue
                        }
                    }
                }
                var department: Department? {
                    get {
                        Strata._observationAccess(self, \.department)
                        return self[toOne: "department"]
                    }
                    set {
                        Strata._observationMutation(self, \.department) {
                            self[toOne: "department"] = newValue
                        }
                    }
                }
                var badge: Badge! {
                    get {
                        Strata._observationAccess(self, \.badge)
                        return self[toOne: "badge"]
                    }
                    set {
                        Strata._observationMutation(self, \.badge) {
                            self[toOne: "badge"] = newValue
                        }
                    }
                }
                var mentor: Employee? {
                    get {
                        Strata._observationAccess(self, \.mentor)
                        return self[toOne: "mentor"]
                    }
                    set {
                        Strata._observationMutation(self, \.mentor) {
                            self[toOne: "mentor"] = newValue
                        }
                    }
                }
                var company: Company {
                    get {
                        Strata._observationAccess(self, \.company)
                        return self[requiredToOne: "company"]
                    }
                    set {
                        Strata._observationMutation(self, \.company) {
                            self[toOne: "company"] = newValue
                        }
                    }
                }
                var projects: Set<Project> {
                    get {
                        Strata._observationAccess(self, \.projects)
                        return self[toMany: "projects"]
                    }
                    set {
                        Strata._observationMutation(self, \.projects) {
                            self[toMany: "projects"] = newValue
                        }
                    }
                }

                static let entityDescription: Strata.Entity = Strata._EntityMacroSupport.entity("Employee", class: Employee.self, [
                    Strata._EntityMacroSupport.inferred("desk", Desk.self, isOptional: true),
                    Strata._EntityMacroSupport.toOne("department", Department.self, isOptional: true, inverse: "employees", deleteRule: .nullify, renamingIdentifier: "team"),
                    Strata._EntityMacroSupport.toOne("badge", Badge.self, isOptional: false, inverse: "owner", deleteRule: .cascade),
                    Strata._EntityMacroSupport.toOne("mentor", Employee.self, isOptional: true),
                    Strata._EntityMacroSupport.toOne("company", Company.self, isOptional: false, inverse: "staff"),
                    Strata._EntityMacroSupport.toMany("projects", Project.self, inverse: "members"),
                    ])

                static var entityName: String {
                    "Employee"
                }

                static func propertyName(for keyPath: AnyKeyPath) -> String? {
                    switch keyPath {
                    case \Employee.desk:
                        "desk"
                    case \Employee.department:
                        "department"
                    case \Employee.badge:
                        "badge"
                    case \Employee.mentor:
                        "mentor"
                    case \Employee.company:
                        "company"
                    case \Employee.projects:
                        "projects"
                    default:
                        nil
                    }
                }

                static func keyPath(forPropertyNamed name: String) -> AnyKeyPath? {
                    switch name {
                    case "desk":
                        \Employee.desk
                    case "department":
                        \Employee.department
                    case "badge":
                        \Employee.badge
                    case "mentor":
                        \Employee.mentor
                    case "company":
                        \Employee.company
                    case "projects":
                        \Employee.projects
                    default:
                        nil
                    }
                }

                override func _notifyObservers(of name: String, willSet: Bool) {
                    switch name {
                    case "desk":
                        Strata._observationNotify(self, \Employee.desk, willSet: willSet)
                    case "department":
                        Strata._observationNotify(self, \Employee.department, willSet: willSet)
                    case "badge":
                        Strata._observationNotify(self, \Employee.badge, willSet: willSet)
                    case "mentor":
                        Strata._observationNotify(self, \Employee.mentor, willSet: willSet)
                    case "company":
                        Strata._observationNotify(self, \Employee.company, willSet: willSet)
                    case "projects":
                        Strata._observationNotify(self, \Employee.projects, willSet: willSet)
                    default:
                        super._notifyObservers(of: name, willSet: willSet)
                    }
                }
            }

            extension Employee: Strata.PersistentEntity {
            }
            """#
        }
    }

    @Test func entityNameOverrideAndPublicClass() {
        assertMacro {
            """
            @Entity("Item") public final class Thing: Strata.ManagedObject {
                public var name: String?
            }
            """
        } expansion: {
            #"""
            public final class Thing: Strata.ManagedObject {
                public var name: String? {
                    get {
                        Strata._observationAccess(self, \.name)
                        return self[attribute: "name"]
                    }
                    set {
                        Strata._observationMutation(self, \.name) {
                            self[attribute: "name"] = newValue
                        }
                    }
                }

                public static let entityDescription: Strata.Entity = Strata._EntityMacroSupport.entity("Item", class: Thing.self, [
                    .attribute(Strata.Attribute("name", .string)),
                    ])

                public static var entityName: String {
                    "Item"
                }

                public static func propertyName(for keyPath: AnyKeyPath) -> String? {
                    switch keyPath {
                    case \Thing.name:
                        "name"
                    default:
                        nil
                    }
                }

                public static func keyPath(forPropertyNamed name: String) -> AnyKeyPath? {
                    switch name {
                    case "name":
                        \Thing.name
                    default:
                        nil
                    }
                }

                public override func _notifyObservers(of name: String, willSet: Bool) {
                    switch name {
                    case "name":
                        Strata._observationNotify(self, \Thing.name, willSet: willSet)
                    default:
                        super._notifyObservers(of: name, willSet: willSet)
                    }
                }
            }

            extension Thing: Strata.PersistentEntity {
            }
            """#
        }
    }

    @Test func emptyEntity() {
        assertMacro {
            """
            @Entity final class Marker: ManagedObject {
            }
            """
        } expansion: {
            """
            final class Marker: ManagedObject {

                static let entityDescription: Strata.Entity = Strata._EntityMacroSupport.entity("Marker", class: Marker.self, [])

                static var entityName: String {
                    "Marker"
                }

                static func propertyName(for keyPath: AnyKeyPath) -> String? {
                    switch keyPath {
                    default:
                        nil
                    }
                }

                static func keyPath(forPropertyNamed name: String) -> AnyKeyPath? {
                    switch name {
                    default:
                        nil
                    }
                }

                override func _notifyObservers(of name: String, willSet: Bool) {
                    switch name {
                    default:
                        super._notifyObservers(of: name, willSet: willSet)
                    }
                }
            }

            extension Marker: Strata.PersistentEntity {
            }
            """
        }
    }
}
