import Foundation
import Testing
@testable import Strata

@Suite struct ModelTests {
    static func goods(reversed: Bool = false, numberType: AttributeType = .int64, defaultName: String = "x") throws -> Model {
        var good = [
            Attribute("name", .string, isOptional: false, defaultValue: .string(defaultName)),
            Attribute("number", numberType),
        ]
        var entities = [
            Entity("Category", attributes: [Attribute("name", .string)],
                   relationships: [Relationship("goods", .toMany, to: "Good", inverse: "category")]),
            Entity("Good", attributes: good, relationships: [Relationship("category", .toOne, to: "Category", inverse: "goods")]),
        ]
        if reversed {
            good.reverse()
            entities = [Entity("Good", attributes: good, relationships: entities[1].relationships), entities[0]]
        }
        return try Model(version: "1", entities: entities)
    }

    @Test func versionHashIgnoresDeclarationOrder() throws {
        #expect(try Self.goods().versionHash == Self.goods(reversed: true).versionHash)
        #expect(try Self.goods().entityVersionHashes == Self.goods(reversed: true).entityVersionHashes)
        #expect(try Self.goods().versionHash.count == 64)
    }

    @Test func versionHashFollowsStorageNotDefaults() throws {
        let base = try Self.goods()
        #expect(try Self.goods(numberType: .int32).versionHash != base.versionHash)
        #expect(try Self.goods(numberType: .int32).entityVersionHashes["Category"] == base.entityVersionHashes["Category"])
        #expect(try Self.goods(defaultName: "other").versionHash == base.versionHash)
    }

    @Test func versionHashIsStableAcrossRuns() throws {
        // A literal: if this changes, every existing store would be refused. Change it only with a migration story.
        let model = try Model(version: "1", entities: [Entity("A", attributes: [Attribute("x", .int64)])])
        #expect(model.versionHash == SHA256.hex(Array(
            "A=\(SHA256.hex(Array("entity A\nattribute x int64 optional=true indexed=false".utf8)))".utf8)))
        #expect(SHA256.hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hex([UInt8]()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test func canonicalTextOfRelationshipsAndIndexesIsStable() throws {
        // The text each entity's hash is taken over, written out: an entity with attributes,
        // both kinds of relationship and compound indexes (a store records these hashes).
        let model = try Model(version: "1", entities: [
            Entity("Shelf", attributes: [Attribute("name", .string, isOptional: false, isIndexed: true), Attribute("at", .date)],
                   relationships: [Relationship("items", .toMany, to: "Item", inverse: "shelf")],
                   compoundIndexes: [["name", "at"], ["at"]]),
            Entity("Item", attributes: [Attribute("n", .int32)],
                   relationships: [Relationship("shelf", .toOne, to: "Shelf", inverse: "items", isOptional: false)]),
        ])
        let shelf = "entity Shelf\nattribute at date optional=true indexed=false\nattribute name string optional=false indexed=true"
            + "\nrelationship items toMany Item inverse=shelf optional=true\nindex at\nindex name,at"
        let item = "entity Item\nattribute n int32 optional=true indexed=false\nrelationship shelf toOne Shelf inverse=items optional=false"
        #expect(model.entityVersionHashes["Shelf"] == SHA256.hex(Array(shelf.utf8)))
        #expect(model.entityVersionHashes["Item"] == SHA256.hex(Array(item.utf8)))
    }

    @Test func jsonRoundTripsExactly() throws {
        let defaults: [Attribute] = [
            Attribute("i16", .int16, defaultValue: .int16(.min)), Attribute("i32", .int32, defaultValue: .int32(.max)),
            Attribute("i64", .int64, defaultValue: .int64(.min), minValue: -5, maxValue: 1e300),
            Attribute("dbl", .double, defaultValue: .double(-0.0)), Attribute("dbl2", .double, defaultValue: .double(.leastNonzeroMagnitude)),
            Attribute("flt", .float, defaultValue: .float(.infinity)), Attribute("flag", .bool, defaultValue: .bool(true)),
            Attribute("text", .string, defaultValue: .string("Żółć \"quoted\"\n🇵🇱"), minLength: 1, maxLength: 9, regex: "[a-z]+\\d?"),
            Attribute("when", .date, defaultValue: .date(Date(timeIntervalSinceReferenceDate: 123.456_789_012))),
            Attribute("blob", .binary, defaultValue: .binary(Data([0, 1, 255]))),
            Attribute("uid", .uuid, defaultValue: .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!)),
            Attribute("link", .url, defaultValue: .url(URL(string: "https://example.com/a?b=c#d")!)),
            Attribute("amount", .decimal, defaultValue: .decimal(Decimal(string: "12345678901234567890.123456789")!), isIndexed: true,
                      renamingIdentifier: "price"),
        ]
        let model = try Model(version: "7", entities: [
            Entity("Everything", attributes: defaults, relationships: [Relationship("tags", .toMany, to: "Tag", inverse: "things", deleteRule: .deny, isOptional: false)],
                   compoundIndexes: [["i64", "text"]], renamingIdentifier: "Old"),
            Entity("Tag", attributes: [Attribute("name", .string)],
                   relationships: [Relationship("things", .toMany, to: "Everything", inverse: "tags")]),
        ])
        let json = model.jsonData()
        let decoded = try Model(json: json)
        #expect(decoded == model)
        #expect(decoded.versionHash == model.versionHash)
        #expect(decoded.jsonData() == json)
        guard case .double(let zero)? = decoded.entity(named: "Everything")?.attribute(named: "dbl")?.defaultValue else {
            Issue.record("dbl default lost"); return
        }
        #expect(zero.sign == .minus)
    }

    @Test func invalidModelsNameEveryProblem() {
        #expect(throws: ModelError.self) {
            try Model(entities: [Entity("A", relationships: [Relationship("bs", .toMany, to: "B")])])
        }
        do {
            _ = try Model(entities: [
                Entity("A", attributes: [Attribute("x", .int64, defaultValue: .string("no")), Attribute("x", .string)],
                       relationships: [Relationship("b", .toOne, to: "Missing")]),
                Entity("strata_meta"),
            ])
            Issue.record("expected a ModelError")
        } catch let error as ModelError {
            #expect(error.problems.contains("A.x is defined twice"))
            #expect(error.problems.contains("A.x: default \"no\" is a string, not a int64"))
            #expect(error.problems.contains("A.b: destination entity Missing does not exist"))
            #expect(error.problems.contains { $0.hasPrefix("entity name 'strata_meta'") })
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}
