import MacroTesting
import Testing

/// What `@Entity` generates for each property shape it supports.
@Suite(.macros(strataMacros, record: .missing))
struct EntityExpansionTests {
    /// The demo's `Good`. The accessors are the demo's hand-written ones, character for character
    /// (`self[attribute: "name"] ?? ""`, `self[attribute: "name"] = newValue`): the generated
    /// property makes the same one subscript call per access, so it costs what the hand-written
    /// one does. The required to-one reads through `_persisted…`, an `@inlinable` forward to
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
                        self[attribute: "name"] ?? ""
                    }
                    set {
                        self[attribute: "name"] = newValue
                    }
                }
                var number: Int64 {
                    get {
                        self[attribute: "number"] ?? 0
                    }
                    set {
                        self[attribute: "number"] = newValue
                    }
                }
                var category: Category {
                    get {
                        self[_persistedRequired: "category"]
                    }
                    set {
                        self[_persisted: "category"] = newValue
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
                        self[attribute: "name"] ?? ""
                    }
                    set {
                        self[attribute: "name"] = newValue
                    }
                }
                var goods: Set<Good> {
                    get {
                        self[toMany: "goods"]
                    }
                    set {
                        self[toMany: "goods"] = newValue
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
                        self[attribute: "text"]
                    }
                    set {
                        self[attribute: "text"] = newValue
                    }
                }
                var count: Int? {
                    get {
                        self[attribute: "count"]
                    }
                    set {
                        self[attribute: "count"] = newValue
                    }
                }
                var i64: Int64? {
                    get {
                        self[attribute: "i64"]
                    }
                    set {
                        self[attribute: "i64"] = newValue
                    }
                }
                var i16: Int16? {
                    get {
                        self[attribute: "i16"]
                    }
                    set {
                        self[attribute: "i16"] = newValue
                    }
                }
                var i32: Int32? {
                    get {
                        self[attribute: "i32"]
                    }
                    set {
                        self[attribute: "i32"] = newValue
                    }
                }
                var dbl: Double? {
                    get {
                        self[attribute: "dbl"]
                    }
                    set {
                        self[attribute: "dbl"] = newValue
                    }
                }
                var flt: Float? {
                    get {
                        self[attribute: "flt"]
                    }
                    set {
                        self[attribute: "flt"] = newValue
                    }
                }
                var flag: Bool? {
                    get {
                        self[attribute: "flag"]
                    }
                    set {
                        self[attribute: "flag"] = newValue
                    }
                }
                var when: Date? {
                    get {
                        self[attribute: "when"]
                    }
                    set {
                        self[attribute: "when"] = newValue
                    }
                }
                var blob: Data? {
                    get {
                        self[attribute: "blob"]
                    }
                    set {
                        self[attribute: "blob"] = newValue
                    }
                }
                var uid: UUID? {
                    get {
                        self[attribute: "uid"]
                    }
                    set {
                        self[attribute: "uid"] = newValue
                    }
                }
                var link: URL? {
                    get {
                        self[attribute: "link"]
                    }
                    set {
                        self[attribute: "link"] = newValue
                    }
                }
                var amount: Decimal? {
                    get {
                        self[attribute: "amount"]
                    }
                    set {
                        self[attribute: "amount"] = newValue
                    }
                }
                var spelled: Optional<String> {
                    get {
                        self[attribute: "spelled"]
                    }
                    set {
                        self[attribute: "spelled"] = newValue
                    }
                }
                var qualified: Foundation.Date? {
                    get {
                        self[attribute: "qualified"]
                    }
                    set {
                        self[attribute: "qualified"] = newValue
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
                        self[attribute: "text"] ?? ""
                    }
                    set {
                        self[attribute: "text"] = newValue
                    }
                }
                var count: Int {
                    get {
                        self[attribute: "count"] ?? 0
                    }
                    set {
                        self[attribute: "count"] = newValue
                    }
                }
                var i16: Int16 {
                    get {
                        self[attribute: "i16"] ?? 0
                    }
                    set {
                        self[attribute: "i16"] = newValue
                    }
                }
                var i32: Int32 {
                    get {
                        self[attribute: "i32"] ?? 0
                    }
                    set {
                        self[attribute: "i32"] = newValue
                    }
                }
                var dbl: Double {
                    get {
                        self[attribute: "dbl"] ?? 0
                    }
                    set {
                        self[attribute: "dbl"] = newValue
                    }
                }
                var flt: Float {
                    get {
                        self[attribute: "flt"] ?? 0
                    }
                    set {
                        self[attribute: "flt"] = newValue
                    }
                }
                var flag: Bool {
                    get {
                        self[attribute: "flag"] ?? false
                    }
                    set {
                        self[attribute: "flag"] = newValue
                    }
                }
                var blob: Data {
                    get {
                        self[attribute: "blob"] ?? Data()
                    }
                    set {
                        self[attribute: "blob"] = newValue
                    }
                }
                var amount: Decimal {
                    get {
                        self[attribute: "amount"] ?? 0
                    }
                    set {
                        self[attribute: "amount"] = newValue
                    }
                }
                var title: String {
                    get {
                        self[attribute: "title"] ?? "Untitled"
                    }
                    set {
                        self[attribute: "title"] = newValue
                    }
                }
                var big: Int {
                    get {
                        self[attribute: "big"] ?? Int.max
                    }
                    set {
                        self[attribute: "big"] = newValue
                    }
                }
                var small: Int16 {
                    get {
                        self[attribute: "small"] ?? -1
                    }
                    set {
                        self[attribute: "small"] = newValue
                    }
                }
                var ratio: Double {
                    get {
                        self[attribute: "ratio"] ?? 0.5
                    }
                    set {
                        self[attribute: "ratio"] = newValue
                    }
                }
                var on: Bool {
                    get {
                        self[attribute: "on"] ?? true
                    }
                    set {
                        self[attribute: "on"] = newValue
                    }
                }
                var start: Date {
                    get {
                        self[attribute: "start"] ?? .distantPast
                    }
                    set {
                        self[attribute: "start"] = newValue
                    }
                }
                var uid: UUID! {
                    get {
                        self[attribute: "uid"]
                    }
                    set {
                        self[attribute: "uid"] = newValue
                    }
                }
                var link: URL! {
                    get {
                        self[attribute: "link"]
                    }
                    set {
                        self[attribute: "link"] = newValue
                    }
                }
                var optionalWithDefault: String? {
                    get {
                        self[attribute: "optionalWithDefault"]
                    }
                    set {
                        self[attribute: "optionalWithDefault"] = newValue
                    }
                }
                var optionalNil: String? {
                    get {
                        self[attribute: "optionalNil"]
                    }
                    set {
                        self[attribute: "optionalNil"] = newValue
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
                        self[attribute: "rank"] ?? 1
                    }
                    set {
                        self[attribute: "rank"] = newValue
                    }
                }
                var code: String {
                    get {
                        self[attribute: "code"] ?? ""
                    }
                    set {
                        self[attribute: "code"] = newValue
                    }
                }
                var when: Date? {
                    get {
                        self[attribute: "when"]
                    }
                    set {
                        self[attribute: "when"] = newValue
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
                        self[attribute: "text"]
                    }
                    set {
                        self[attribute: "text"] = newValue
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
                        self[_persisted: "size"]
                    }
                    set {
                        self[_persisted: "size"] = newValue
                    }
                }
                var finish: Finish {
                    get {
                        self[_persisted: "finish"] ?? .matte
                    }
                    set {
                        self[_persisted: "finish"] = newValue
                    }
                }
                var tags: [String] {
                    get {
                        self[_persisted: "tags"] ?? []
                    }
                    set {
                        self[_persisted: "tags"] = newValue
                    }
                }
                var scores: [String: Int]? {
                    get {
                        self[_persisted: "scores"]
                    }
                    set {
                        self[_persisted: "scores"] = newValue
                    }
                }
                var later: Dimensions! {
                    get {
                        self[_persisted: "later"]
                    }
                    set {
                        self[_persisted: "later"] = newValue
                    }
                }
                var labels: Set<Tag> {
                    get {
                        self[codable: "labels"] ?? []
                    }
                    set {
                        self[codable: "labels"] = newValue
                    }
                }
                var form: Dimensions? {
                    get {
                        self[codable: "form"]
                    }
                    set {
                        self[codable: "form"] = newValue
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
                        self[_persisted: "desk"]
                    }
                    set {
                        self[_persisted: "desk"] = newValue
                    }
                }
                var department: Department? {
                    get {
                        self[toOne: "department"]
                    }
                    set {
                        self[toOne: "department"] = newValue
                    }
                }
                var badge: Badge! {
                    get {
                        self[toOne: "badge"]
                    }
                    set {
                        self[toOne: "badge"] = newValue
                    }
                }
                var mentor: Employee? {
                    get {
                        self[toOne: "mentor"]
                    }
                    set {
                        self[toOne: "mentor"] = newValue
                    }
                }
                var company: Company {
                    get {
                        self[requiredToOne: "company"]
                    }
                    set {
                        self[toOne: "company"] = newValue
                    }
                }
                var projects: Set<Project> {
                    get {
                        self[toMany: "projects"]
                    }
                    set {
                        self[toMany: "projects"] = newValue
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
                        self[attribute: "name"]
                    }
                    set {
                        self[attribute: "name"] = newValue
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
            }

            extension Marker: Strata.PersistentEntity {
            }
            """
        }
    }
}
