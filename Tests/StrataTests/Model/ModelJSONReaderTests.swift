import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// `Model(json:)` reads with `ModelJSONReader` and falls back to `JSONDecoder`: the model it
/// returns must be `JSONDecoder`'s, on every test model and on thousands of mutations of their
/// JSON (where the reader must never accept what `JSONDecoder` refuses, or read it otherwise).
@Suite struct ModelJSONReaderTests {
    /// Every attribute option, every default type (with the values JSON makes awkward: -0.0,
    /// the lowest Int64, a URL with slashes, text with quotes, escapes and non-ASCII), renaming
    /// identifiers, compound indexes and every relationship kind and rule.
    static let everything = try! Model(version: "everything \"1\" é", entities: [
        Entity("Owner", attributes: [
            Attribute("i16", .int16, defaultValue: .int16(-7), minValue: -100, maxValue: 100),
            Attribute("i32", .int32, defaultValue: .int32(123_456), minValue: 0.5),
            Attribute("i64", .int64, isOptional: false, defaultValue: .int64(.min), isIndexed: true),
            Attribute("dbl", .double, defaultValue: .double(-0.0), minValue: -1e-7, maxValue: 3.25e10),
            Attribute("flt", .float, defaultValue: .float(1.5)),
            Attribute("flag", .bool, defaultValue: .bool(true)),
            Attribute("text", .string, defaultValue: .string("a \"quoted\" \\ line\nand tab\t, é, 𝄞, /slash/"),
                      minLength: 1, maxLength: 80, regex: "^[a-z\\\\\"/]+\\d{2,}$", renamingIdentifier: "oldText"),
            Attribute("when", .date, defaultValue: .date(Date(timeIntervalSinceReferenceDate: 12_345.678))),
            Attribute("blob", .binary, defaultValue: .binary(Data([0, 1, 2, 255]))),
            Attribute("uid", .uuid, defaultValue: .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!)),
            Attribute("link", .url, defaultValue: .url(URL(string: "https://example.com/a/b?c=d&e=%20")!)),
            Attribute("amount", .decimal, defaultValue: .decimal(Decimal(string: "-12.5", locale: Locale(identifier: "en_US_POSIX"))!)),
        ], relationships: [
            Relationship("pets", .toMany, to: "Pet", inverse: "owner", deleteRule: .cascade),
            Relationship("friends", .toMany, to: "Owner", inverse: "friendOf", deleteRule: .nullify),
            Relationship("friendOf", .toMany, to: "Owner", inverse: "friends"),
            Relationship("badge", .toOne, to: "Pet", deleteRule: .deny, renamingIdentifier: "oldBadge"),
        ], compoundIndexes: [["i16", "i32"], ["text"]], renamingIdentifier: "Person"),
        Entity("Pet", attributes: [Attribute("name", .string, isOptional: false)],
               relationships: [Relationship("owner", .toOne, to: "Owner", inverse: "pets", deleteRule: .noAction, isOptional: false)]),
    ])

    static var models: [Model] {
        [everything, TestModels.company(), TestModels.numbers(), TestModels.goods(), TestModels.goodsWithSectionName()]
    }

    @Test func theReaderReadsWhatJSONDecoderReads() throws {
        for model in Self.models {
            let json = model.jsonData()
            #expect(ModelJSONReader.read(json) != nil, "the reader gave up on \(model.versionIdentifier)'s own JSON")
            let read = try Model(json: json)
            let decoded = try Model.decodedByJSONDecoder(json)
            #expect(read == decoded)
            #expect(read == model)
            #expect(read.versionHash == model.versionHash)
            #expect(read.jsonData() == json, "a round trip changes \(model.versionIdentifier)'s JSON")
        }
    }

    /// A NaN default is refused for a float and a date as for a double: SQLite would read it
    /// back as NULL. (Seed 10613857655649457124 of the mutation test below turned a float's
    /// default into `ffc00000`: both readers took it, and the models, NaN != NaN, differed.)
    @Test func aNaNDefaultIsRefused() throws {
        for value in [AttributeValue.float(-.nan), .double(.nan), .date(Date(timeIntervalSinceReferenceDate: .nan))] {
            #expect(value.description.contains("nan"))
            #expect(throws: (any Error).self) {
                _ = try Model(version: "nan", entities: [Entity("Reading", attributes: [Attribute("v", value.type, defaultValue: value)])])
            }
        }
    }

    /// Random edits of each model's JSON: a byte removed, replaced or inserted (from the bytes
    /// that matter to JSON), or a span repeated. Both paths must fail together, or agree.
    @Test func mutatedJSONIsReadAsJSONDecoderReadsItOrRefusedAlike() throws {
        var rng = SplitMix64(seed: UInt64(ProcessInfo.processInfo.environment["STRATA_MODEL_JSON_SEED"] ?? "") ?? .random(in: 0...UInt64.max))
        let seed = rng.state
        let alphabet = Array("{}[]\":,\\/0123456789-+.eEtrufalsn \n\tuA\u{7F}".utf8) + [0xC3, 0xA9, 0xFF, 0x00]
        var outcomes: [String: Int] = [:]
        for case let model in Self.models {
            let original = [UInt8](model.jsonData())
            for _ in 0..<600 {
                var bytes = original
                for _ in 0...(rng.next() % 3) {
                    let at = Int(rng.next() % UInt64(bytes.count))
                    switch rng.next() % 4 {
                    case 0: bytes.remove(at: at)
                    case 1: bytes[at] = alphabet[Int(rng.next() % UInt64(alphabet.count))]
                    case 2: bytes.insert(alphabet[Int(rng.next() % UInt64(alphabet.count))], at: at)
                    default:
                        let end = min(bytes.count, at + 1 + Int(rng.next() % 40))
                        bytes.insert(contentsOf: bytes[at..<end], at: end)
                    }
                    if bytes.isEmpty { bytes = original }
                }
                let json = Data(bytes)
                let read = Result { try Model(json: json) }
                let decoded = Result { try Model.decodedByJSONDecoder(json) }
                let readerTook = ModelJSONReader.read(json) != nil
                switch (read, decoded) {
                case (.success(let a), .success(let b)):
                    #expect(a == b && a.versionHash == b.versionHash, "seed \(seed): \(String(decoding: bytes, as: UTF8.self))")
                    outcomes[readerTook ? "read by the reader" : "read by JSONDecoder", default: 0] += 1
                case (.failure, .failure):
                    outcomes[readerTook ? "refused by the model's checks" : "refused", default: 0] += 1
                default:
                    Issue.record("seed \(seed): Model(json:) \(read), JSONDecoder \(decoded): \(String(decoding: bytes, as: UTF8.self))")
                }
            }
        }
        print("model-json-reader: seed=\(seed) " + outcomes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
        #expect((outcomes["read by the reader"] ?? 0) > 0 && (outcomes["refused"] ?? 0) > 0)
    }
    /// Edits a random mutation rarely makes: a repeated key with another value, numbers in
    /// forms JSON or `Int` refuse, escapes, `null` for a required field, an unknown key.
    @Test func anObjectWithManyKeysIsLeftToJSONDecoder() throws {
        // The reader looks keys up linearly, so it gives an object of 64 keys or more to
        // JSONDecoder (no input makes it quadratic). 63 unknown keys beside an attribute's own
        // 8 or so: still read alike, by JSONDecoder; 20 unknown keys: by the reader.
        let json = String(decoding: TestModels.goods().jsonData(), as: UTF8.self)
        for (count, readByTheReader) in [(20, true), (63, false), (5_000, false)] {
            let extra = (0..<count).map { #""extra\#($0)":\#($0)"# }.joined(separator: ",")
            let edited = Data(json.replacingOccurrences(of: #""isIndexed":false"#, with: #""isIndexed":false,"# + extra).utf8)
            #expect((ModelJSONReader.read(edited) != nil) == readByTheReader, "\(count) extra keys")
            let read = try Model(json: edited)
            let decoded = try Model.decodedByJSONDecoder(edited)
            #expect(read == decoded && read.versionHash == TestModels.goods().versionHash, "\(count) extra keys")
        }
    }

    @Test func awkwardEditsAreReadAsJSONDecoderReadsThem() throws {
        let json = String(decoding: TestModels.goods().jsonData(), as: UTF8.self)
        let edits: [(String, String, String)] = [
            ("a repeated key, another value", #""format":1"#, #""format":1,"format":2"#),
            ("a repeated key, the same value", #""format":1"#, #""format":1,"format":1"#),
            ("a repeated name in an entity", #""name":"Good""#, #""name":"Good","name":"Goods""#),
            ("a fraction", #""format":1"#, #""format":1.0"#),
            ("an exponent", #""format":1"#, #""format":1e0"#),
            ("a leading zero", #""format":1"#, #""format":01"#),
            ("a plus sign", #""format":1"#, #""format":+1"#),
            ("a string for a number", #""format":1"#, #""format":"1""#),
            ("a trailing comma", #""format":1"#, #""format":1,"#),
            ("a \\u escape", #""versionIdentifier":"goods-1""#, #""versionIdentifier":"goods\u002d1""#),
            ("a surrogate pair", #""versionIdentifier":"goods-1""#, #""versionIdentifier":"goods\ud834\udd1e""#),
            ("a lone surrogate", #""versionIdentifier":"goods-1""#, #""versionIdentifier":"goods\ud834""#),
            ("an escaped slash", #""versionIdentifier":"goods-1""#, #""versionIdentifier":"goods\/1""#),
            ("null for a required Bool", #""isOptional":false"#, #""isOptional":null"#),
            ("a number for a Bool", #""isOptional":false"#, #""isOptional":0"#),
            ("null for an optional", #""isIndexed":false"#, #""isIndexed":false,"regex":null"#),
            ("an unknown key", #""isIndexed":false"#, #""isIndexed":false,"colour":"red""#),
            ("a huge maxLength", #""isIndexed":false"#, #""isIndexed":false,"maxLength":99999999999999999999"#),
            ("a negative zero minValue", #""isIndexed":false"#, #""isIndexed":false,"minValue":-0"#),
            ("an exponent minValue", #""isIndexed":false"#, #""isIndexed":false,"minValue":2.5E+3"#),
            ("an infinite minValue", #""isIndexed":false"#, #""isIndexed":false,"minValue":1e999"#),
            ("a bad default", #""isIndexed":false"#, #""isIndexed":false,"defaultValue":{"type":"int16","value":"70000"}"#),
            ("whitespace everywhere", #""format":1"#, " \"format\" :\t1 \n"),
            ("a control character", #""versionIdentifier":"goods-1""#, "\"versionIdentifier\":\"goods\u{01}1\""),
        ]
        var readByTheReader = 0
        for (label, target, replacement) in edits {
            guard let range = json.range(of: target) else {
                Issue.record("\(label): \(target) not in the goods model's JSON")
                continue
            }
            let edited = Data(json.replacingCharacters(in: range, with: replacement).utf8)
            if ModelJSONReader.read(edited) != nil { readByTheReader += 1 }
            let read = Result { try Model(json: edited) }
            let decoded = Result { try Model.decodedByJSONDecoder(edited) }
            switch (read, decoded) {
            case (.success(let a), .success(let b)):
                #expect(a == b && a.versionHash == b.versionHash, "\(label)")
            case (.failure, .failure): break
            default: Issue.record("\(label): Model(json:) \(read), JSONDecoder \(decoded)")
            }
        }
        #expect(readByTheReader > 5, "the reader should take the plain edits itself")
    }
}
