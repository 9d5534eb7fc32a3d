import Foundation
import Testing
import StrataTestSupport
@testable import Strata

/// Parse errors (position, expected text, caret excerpt) and binding errors.
extension PredicateParserTests {
    // MARK: Parse errors

    @Test func missingValueAfterAnOperator() throws {
        let error = try #require(parseError("age >"))
        #expect(error.message == "expected a value after '>', found end of predicate")
        #expect(error.expected == "a key path, a string, a number, nil, YES/NO, {list}, %@ or $VARIABLE")
        #expect(at(error) == "1:6")
        #expect(error.excerpt == "  age >\n       ^")
        #expect(error.description == "expected a value after '>', found end of predicate at line 1, column 6 (expected a key path, a string, a number, nil, YES/NO, {list}, %@ or $VARIABLE)\n  age >\n       ^")
    }

    @Test func missingOperandAfterAnd() throws {
        let error = try #require(parseError("age > 5 AND"))
        #expect(error.message == "expected a value, found end of predicate")
        #expect(at(error) == "1:12")
        #expect(error.excerpt == "  age > 5 AND\n             ^")
    }

    @Test func unclosedParenthesis() throws {
        let error = try #require(parseError("(age > 5"))
        #expect(error.message == "unclosed parenthesis: found end of predicate")
        #expect(error.expected == "')'")
        #expect(at(error) == "1:9")
    }

    @Test func doubledOperator() throws {
        let error = try #require(parseError("age >> 5"))
        #expect(error.message == "expected a value after '>', found '>'")
        #expect(at(error) == "1:6")
        #expect(error.excerpt == "  age >> 5\n       ^")
    }

    @Test func unterminatedStringPointsAtItsQuote() throws {
        let error = try #require(parseError("name == 'abc"))
        #expect(error.message == "unterminated string")
        #expect(error.expected == "a closing '")
        #expect(at(error) == "1:9")
        #expect(error.excerpt == "  name == 'abc\n          ^")
        let double = try #require(parseError("name == \"abc\\\""))
        #expect(at(double) == "1:9")
    }

    @Test func errorsOnLaterLinesCountLinesAndColumns() throws {
        // The value is missing at the very end, after the second newline: line 3, column 1.
        let atEnd = try #require(parseError("age > 5\n  AND name ==\n"))
        #expect(atEnd.message == "expected a value after '==', found end of predicate")
        #expect(at(atEnd) == "3:1")
        #expect(atEnd.excerpt == "  \n  ^")
        let inside = try #require(parseError("age > 5\nAND name >> 3\nOR x == 1"))
        #expect(at(inside) == "2:11")
        #expect(inside.excerpt == "  AND name >> 3\n            ^")
        // Columns count Unicode scalars: 'e' + U+0301 is two.
        let scalarColumns = try #require(parseError("'e\u{301}' == x AND"))
        #expect(at(scalarColumns) == "1:14")
    }

    @Test func unknownFormatSpecifier() throws {
        let error = try #require(parseError("age == %q", [1]))
        #expect(at(error) == "1:8")
        #expect(error.expected == "%@, %K, %d, %i, %ld, %lld, %f or %lf")
        // The message names the specifier that was written.
        #expect(error.message.contains("%q"), "message: \(error.message)")
    }

    @Test func argumentCountMismatch() throws {
        let tooFew = try #require(parseError("a == %@ AND b == %@", [1]))
        #expect(tooFew.message == "no argument for %@ (argument 2)")
        #expect(tooFew.expected == "as many arguments as format specifiers")
        #expect(at(tooFew) == "1:18")
        let none = try #require(parseError("a == %K"))
        #expect(none.message == "no argument for %K (argument 1)")
        let tooMany = try #require(parseError("a == %@", [1, 2]))
        #expect(tooMany.message == "1 format argument(s) left unused")
        #expect(at(tooMany) == "1:8")
        let wrongType = try #require(parseError("age == %d", ["x"]))
        #expect(wrongType.message == "%d needs an integer")
        #expect(at(wrongType) == "1:8")
        let notAKey = try #require(parseError("%K == 1", [5]))
        #expect(notAKey.message == "%K needs a key path string, got Int")
        let nan = try #require(parseError("x == %@", [Double.nan]))
        #expect(nan.message == "NaN is not a value a condition can hold")
    }

    /// NaN has no literal and is never equal to itself: `%@` rejects it, and so must `%f` / `%lf`
    /// (otherwise `x == %f` with NaN describes itself as `x == nan`, which parses as a key path).
    @Test func nanIsRejectedByEveryFloatingPointSpecifier() throws {
        for format in ["x == %@", "x == %f", "x == %lf", "x IN %@"] {
            let argument: Any? = format.hasSuffix("IN %@") ? [1.0, Double.nan] : Double.nan
            let error = parseError(format, [argument])
            #expect(error?.message == "NaN is not a value a condition can hold", "\(format)")
            #expect(error.map(at) == "1:6", "\(format)")
        }
        let float = parseError("x == %f", [Float.nan])
        #expect(float?.message == "NaN is not a value a condition can hold")
    }

    @Test func betweenNeedsTwoBounds() throws {
        for format in ["age BETWEEN {1}", "age BETWEEN {1, 2, 3}", "age BETWEEN 5"] {
            let error = try #require(parseError(format))
            #expect(error.message == "BETWEEN needs two bounds", "\(format)")
            #expect(error.expected == "{low, high}")
            #expect(at(error) == "1:5")
        }
    }

    @Test func deepNestingIsAnErrorNotACrash() throws {
        let error = try #require(parseError(String(repeating: "(", count: 1_000) + "a == 1" + String(repeating: ")", count: 1_000)))
        #expect(error.message == "nesting deeper than 100 levels")
        #expect(error.expected == "a flatter predicate")
        #expect(at(error) == "1:101")
        // A long line is cut to 120 scalars around the position; the caret stays under it.
        #expect(error.excerpt == "  " + String(repeating: "(", count: 120) + "\n  " + String(repeating: " ", count: 60) + "^")
        let lists = try #require(parseError("a IN " + String(repeating: "{", count: 500)))
        #expect(lists.message == "nesting deeper than 100 levels")
        // 100 levels are fine.
        #expect(try parse(String(repeating: "(", count: 99) + "a == 1" + String(repeating: ")", count: 99)) == compare(key("a"), .equal, int(1)))
    }

    @Test func otherLexicalAndSyntaxErrors() throws {
        let cases: [(String, String, Int)] = [
            ("a == 1 b", "unexpected 'b'", 8),
            ("x == 9223372036854775808", "integer 9223372036854775808 does not fit in 64 bits", 6),
            ("x == 1e", "invalid number '1e'", 6),
            (#"name == 'a\qb'"#, "unknown escape \\q", 11),
            ("a ~ 1", "unexpected character '~'", 3),
            ("a == $", "'$' must be followed by a variable name", 6),
            ("# == 1", "'#' must be followed by a name", 1),
            ("employees.@bogus.age == 1", "unknown aggregate 'bogus'", 12),
            ("a ==[x] 1", "invalid comparison options 'x'", 6),
            ("a == 1 AND", "expected a value, found end of predicate", 11),
            ("", "expected a value, found end of predicate", 1),
        ]
        for (format, message, column) in cases {
            let error = parseError(format)
            #expect(error?.message == message, "\(format)")
            #expect(error.map(at) == "1:\(column)", "\(format)")
        }
    }

    // MARK: Binding errors

    func fetchError(_ format: String, entity: String = "Employee") throws -> (any Error)? {
        let store = try TestStore()
        let condition = try parse(format)
        return store.context.performAndWait { () -> (any Error)? in
            do {
                _ = try store.context.fetch(FetchRequest(entityName: entity, predicate: condition))
                return nil
            } catch {
                return error
            }
        }
    }

    @Test func typeMismatchIsAConditionError() throws {
        let error = try fetchError("name > 3")
        #expect(error as? ConditionError == ConditionError(entity: "Employee", predicate: "name > 3",
                                                           reason: "cannot compare name (a string) with 3 (a number)"))
        let stringOperator = try fetchError("age CONTAINS 'x'")
        #expect(stringOperator as? ConditionError == ConditionError(entity: "Employee", predicate: "age CONTAINS \"x\"",
                                                                    reason: "CONTAINS compares strings, but age is a number"))
    }

    @Test func unknownKeysNameTheirEntity() throws {
        #expect(try fetchError("salary > 3") as? ObjectError == .unknownKey(entity: "Employee", key: "salary"))
        #expect(try fetchError("department.nope == 'x'") as? ObjectError == .unknownKey(entity: "Department", key: "nope"))
        #expect(try fetchError("ANY projects.budget > 1") as? ObjectError == .unknownKey(entity: "Project", key: "budget"))
    }

    @Test func toManyWithoutQuantifierIsAConditionError() throws {
        let error = try fetchError("projects.title == \"x\"")
        #expect(error as? ConditionError == ConditionError(
            entity: "Employee", predicate: "projects.title == \"x\"",
            reason: "Employee.projects is to-many: use ANY/ALL/NONE projects.title, projects.@count, or %@ IN projects"))
    }

    @Test func unsubstitutedVariableIsAConditionError() throws {
        let error = try fetchError("name == $X")
        #expect(error as? ConditionError == ConditionError(entity: "Employee", predicate: "name == $X",
                                                           reason: "$X has no value: call substituting(_:) first"))
    }
}
