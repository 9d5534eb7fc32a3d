import Foundation
import Testing

/// Every Swift block of every DocC article and of the README type-checks against the Strata this
/// build made, as a client that imports only Strata writes it (`swiftc -typecheck`, as
/// `MisspelledKeyCompileTests` does). An article's blocks are compiled together, in order, as one
/// top-level program (the tutorials build on their earlier blocks), with `#sourceLocation`
/// pointing each line back at the article, so an error names the article's own line.
///
/// Where a block can't join the others (an alternative to an earlier block, a fragment of
/// another file, a snippet that needs objects it doesn't make), ``units`` says how it is
/// compiled: alone or with other blocks, after a `given` preamble of what the text around it
/// assumes. Every block belongs to exactly one unit.
@Suite struct ArticleExamplesCompileTests {
    struct Block {
        let index: Int          // 1-based, in the article
        let line: Int           // the article line of the block's first code line
        let code: String
    }

    /// How an article's blocks are compiled: groups of block numbers, each after its preamble.
    struct Unit: Sendable {
        var blocks: [Int]
        var given: String = ""
    }

    /// Every article: the DocC catalogue's and the README.
    static let articles: [String] = {
        let folder = DocumentedExample.root.appendingPathComponent("Sources/Strata/Strata.docc")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter { $0.hasSuffix(".md") }.sorted().map { "Sources/Strata/Strata.docc/\($0)" } + ["README.md"]
    }()

    /// What an article's prose establishes before a block that doesn't make it itself: the
    /// model it names and a context on its store.
    enum Given {
        /// GettingStarted.md's model, word for word, on an in-memory store: the "goods model of
        /// Getting Started" other articles name.
        static let gettingStarted = """
            @Entity final class Category: ManagedObject {
                @Attribute(.indexed) var name: String
                @Relationship(inverse: \\Good.category, deleteRule: .cascade) var goods: Set<Good> = []
            }
            @Entity final class Good: ManagedObject {
                @Attribute(maxLength: 80) var name: String
                @Attribute(minValue: 0) var number: Int64 = 0
                var category: Category
            }
            let model = try Model(version: "1", types: [Category.self, Good.self])
            let container = try PersistentContainer(inMemoryWith: model)
            let context = container.mainContext
            """

        /// Goods with the properties a reference article lists (a name, a number, a price, a
        /// stock, an on-sale flag, an optional category), as `@Entity` classes and their `model`.
        static let goodsModel = """
            @Entity final class Category: ManagedObject {
                var name: String
                @Relationship(inverse: \\Good.category) var goods: Set<Good> = []
            }
            @Entity final class Good: ManagedObject {
                var name: String
                var number: Int64 = 0
                var price: Double = 0
                var stock: Int64 = 0
                var onSale: Bool = false
                var category: Category?
            }
            let model = try Model(version: "1", types: [Category.self, Good.self])
            """

        /// The same, and a `context` on an in-memory store.
        static let goods = goodsModel + """

            let container = try PersistentContainer(inMemoryWith: model)
            let context = container.mainContext
            """

        /// Predicates.md's model built at run time: people in departments, working on projects;
        /// `engineering` is a department.
        static let people = """
            let model = try Model(version: "1", entities: [
                Entity("Department", attributes: [Attribute("name", .string, isOptional: false)],
                       relationships: [Relationship("people", .toMany, to: "Person", inverse: "department"),
                                       Relationship("projects", .toMany, to: "Project", inverse: "department")]),
                Entity("Person", attributes: [Attribute("name", .string, isOptional: false), Attribute("age", .int64),
                                              Attribute("size", .string)],
                       relationships: [Relationship("department", .toOne, to: "Department", inverse: "people"),
                                       Relationship("projects", .toMany, to: "Project", inverse: "people")]),
                Entity("Project", attributes: [Attribute("title", .string, isOptional: false), Attribute("budget", .double)],
                       relationships: [Relationship("people", .toMany, to: "Person", inverse: "projects"),
                                       Relationship("department", .toOne, to: "Department", inverse: "projects")]),
            ])
            let context = try PersistentContainer(inMemoryWith: model).mainContext
            let engineering = try context.performAndWait { try context.insert("Department") }
            """

        /// FetchedResults.md's goods as a model built at run time (no classes), and `main`.
        static let runtimeGoods = """
            let model = try Model(version: "1", entities: [
                Entity("Category", attributes: [Attribute("name", .string, isOptional: false)],
                       relationships: [Relationship("goods", .toMany, to: "Good", inverse: "category")]),
                Entity("Good", attributes: [Attribute("name", .string, isOptional: false)],
                       relationships: [Relationship("category", .toOne, to: "Category", inverse: "goods")]),
            ])
            let main = try PersistentContainer(inMemoryWith: model).mainContext
            """

        /// Migrations.md's departments and employees (as `MigrationDocumentationTests` builds
        /// them): v1, v2 with heights in inches, a display name and an initial, v3 with a badge.
        static let staffVersions = """
            func staff(_ version: String, employee: [Attribute]) throws -> Model {
                try Model(version: version, entities: [
                    Entity("Department", attributes: [Attribute("name", .string, isOptional: false)],
                           relationships: [Relationship("employees", .toMany, to: "Employee", inverse: "department")]),
                    Entity("Employee", attributes: [Attribute("name", .string, isOptional: false)] + employee,
                           relationships: [Relationship("department", .toOne, to: "Department", inverse: "employees")]),
                ])
            }
            let v1 = try staff("1", employee: [Attribute("height", .double), Attribute("nickname", .string)])
            let v2Employee = [Attribute("height", .double), Attribute("heightInches", .double),
                              Attribute("displayName", .string, isOptional: false, defaultValue: .string("?")),
                              Attribute("initial", .string)]
            let v2 = try staff("2", employee: v2Employee)
            let v3 = try staff("3", employee: v2Employee + [Attribute("badge", .string)])
            """

        /// A staff store's URL and a later version of its model that adds `Employee.sectionName`.
        static let staffStore = """
            let url = URL(fileURLWithPath: "staff.sqlite")
            let withSection = try Model(version: "2", entities: [
                Entity("Department", attributes: [Attribute("name", .string, isOptional: false)],
                       relationships: [Relationship("employees", .toMany, to: "Employee", inverse: "department")]),
                Entity("Employee", attributes: [Attribute("name", .string, isOptional: false), Attribute("height", .double),
                                                Attribute("nickname", .string),
                                                Attribute("sectionName", .string, isOptional: false, defaultValue: .string("Staff"))],
                       relationships: [Relationship("department", .toOne, to: "Department", inverse: "employees")]),
            ])
            """
    }

    /// How each article's blocks are compiled, by file name, where they are not one program on
    /// their own. Blocks not listed join one last unit, in order, with no preamble: an article
    /// not listed here declares everything its blocks use.
    static let units: [String: [Unit]] = [
        "README.md": [
            // The dependency line of a Package.swift, not a client.
            Unit(blocks: [1], given: "SKIP"),
        ],
        "GettingStarted.md": [
            // The same classes written by hand, "… Good likewise": its own program.
            Unit(blocks: [2], given: "final class Good: ManagedObject {}"),
        ],
        "FetchedResults.md": [
            // The same controller over "a model built at run time".
            Unit(blocks: [4], given: Given.runtimeGoods),
            // "Result streams" (top-level await) and "Observing objects": the goods, `main`, and
            // a `good` of it.
            Unit(blocks: [8], given: Given.goodsModel + "\nlet main = try PersistentContainer(inMemoryWith: model).mainContext"),
            Unit(blocks: [9], given: "import Observation\n" + Given.goodsModel
                + "\nlet main = try PersistentContainer(inMemoryWith: model).mainContext\nlet good = try main.performAndWait { try main.insert(Good.self) }"),
        ],
        "ContextsAndSaving.md": [
            // "The examples use the @Entity classes Category and Good of GettingStarted and a context."
            Unit(blocks: [1, 2], given: Given.gettingStarted),
        ],
        "ImportingALibrary.md": [
            // The article's Author and Book (its first block); the snippets assume a container
            // (and its main context) on their store, the rows of a file already read (`rows`,
            // `records`: "your own reader of the file").
            Unit(blocks: [1, 2, 3, 4, 5], given: """
                struct Record { var isbn: String; var title: String; var price: Double }
                let records: [Record] = []
                let rows = records
                let container = try PersistentContainer(inMemoryWith: try Model(version: "1", types: [Author.self, Book.self]))
                let context = container.mainContext
                """),
        ],
        "BatchRequests.md": [
            // "The example's Good has a name, a price, a stock, an onSale flag and an optional
            // category, and context is a context on its store."
            Unit(blocks: [1], given: Given.goods),
        ],
        "ThreeTierStack.md": [
            // "With a model of @Entity classes (here a Good with a name)".
            Unit(blocks: [1], given: Given.goodsModel),
        ],
        "Predicates.md": [
            // "A model of people in departments working on projects, built from Entity values,
            // and a context on its store" (and `engineering`, "a Department").
            Unit(blocks: [1, 2, 3], given: Given.people),
            // "Good is an @Entity class with a name, a number and an optional to-one category."
            Unit(blocks: [4], given: Given.goods),
        ],
        "Migrations.md": [
            // Opening a staff store with its model's next version, `modelV2`.
            Unit(blocks: [1], given: Given.staffStore + "\nlet modelV2 = withSection"),
            // The mapping example, with the versions `MigrationDocumentationTests` runs it on.
            Unit(blocks: [2], given: Given.staffVersions),
            // The dry run of "v2 adds Employee.sectionName".
            Unit(blocks: [3], given: Given.staffStore + "\nlet v2 = withSection"),
        ],
    ]

    static func blocks(of article: String) throws -> [Block] {
        let text = try String(contentsOf: DocumentedExample.root.appendingPathComponent(article), encoding: .utf8)
        var blocks: [Block] = []
        var current: [String]? = nil
        var start = 0
        for (number, line) in text.components(separatedBy: "\n").enumerated() {
            if current == nil, line.trimmingCharacters(in: .whitespaces) == "```swift" {
                current = []
                start = number + 2
            } else if current != nil, line.trimmingCharacters(in: .whitespaces) == "```" {
                blocks.append(Block(index: blocks.count + 1, line: start, code: current!.joined(separator: "\n")))
                current = nil
            } else if current != nil {
                current!.append(line)
            }
        }
        return blocks
    }

    /// The programs `article` is checked as: (a label, the source).
    static func programs(of article: String) throws -> [(String, String)] {
        let name = (article as NSString).lastPathComponent
        let blocks = try Self.blocks(of: article)
        var units = Self.units[name] ?? []
        let listed = Set(units.flatMap(\.blocks))
        precondition(listed.count == units.flatMap(\.blocks).count, "\(name): a block is in two units")
        for unit in units { for index in unit.blocks { precondition(index >= 1 && index <= blocks.count, "\(name) has no block \(index)") } }
        let rest = blocks.map(\.index).filter { !listed.contains($0) }
        if !rest.isEmpty { units.append(Unit(blocks: rest)) }
        return units.filter { $0.given != "SKIP" }.map { unit in
            var source = "import Foundation\nimport Strata\n"
            if !unit.given.isEmpty { source += "// given:\n\(unit.given)\n" }
            for index in unit.blocks {
                let block = blocks[index - 1]
                source += "#sourceLocation(file: \"\(article)\", line: \(block.line))\n"
                // An article's own imports are already there.
                source += block.code.components(separatedBy: "\n").map { line in
                    line.hasPrefix("import Foundation") || line.hasPrefix("import Strata") ? "" : line
                }.joined(separator: "\n") + "\n"
                source += "#sourceLocation()\n"
            }
            return ("\(name) blocks \(unit.blocks.map(String.init).joined(separator: ", "))", source)
        }
    }

    @Test func everyArticleHasItsBlocksCounted() throws {
        var total = 0
        for article in Self.articles { total += try Self.blocks(of: article).count }
        print("article-examples: articles=\(Self.articles.count) blocks=\(total)")
        #expect(total >= 25)
    }

    /// The preamble said to be GettingStarted.md's model is: its class lines are the article's.
    @Test func theGettingStartedPreambleIsTheArticlesModel() throws {
        let article = try DocumentedExample.lines(of: "Sources/Strata/Strata.docc/GettingStarted.md",
                                                  containing: "@Entity final class Category")
        let given = Given.gettingStarted.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.hasPrefix("let container") && !$0.hasPrefix("let context") }
        for line in given where !article.contains(line) {
            Issue.record("Given.gettingStarted has a line GettingStarted.md's model does not: \(line)")
        }
    }

    @Test(arguments: articles) func everySwiftBlockTypeChecks(_ article: String) throws {
        for (label, source) in try Self.programs(of: article) {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("strata-article-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let file = folder.appendingPathComponent("main.swift")
            try Data(source.utf8).write(to: file)
            let (status, output) = try MisspelledKeyCompileTests.typeCheck(file)
            let errors = output.split(separator: "\n").filter { $0.contains(": error: ") || $0.contains(": warning: ") }
            #expect(status == 0 && errors.isEmpty, "\(label):\n\(errors.joined(separator: "\n"))\n\(status != 0 && errors.isEmpty ? output : "")")
        }
    }
}
