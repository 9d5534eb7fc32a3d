import Foundation
import Strata
import Testing

/// `AttributeValue`'s plain accessors: the value when it is of that type, `nil` otherwise;
/// integers widen, floats widen to `Double`, nothing is parsed.
@Suite struct AttributeValueAccessorTests {
    static let date = Date(timeIntervalSinceReferenceDate: 12_345.5)
    static let uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
    static let url = URL(string: "https://example.com/a?b=c")!
    static let decimal = Decimal(string: "12.34", locale: Locale(identifier: "en_US_POSIX"))!

    /// One value of every case.
    static let values: [AttributeValue] = [
        .int16(-7), .int32(70_000), .int64(Int64.max), .double(-0.5), .float(1.25), .bool(true), .string("Ann"),
        .date(date), .binary(Data([1, 2, 3])), .uuid(uuid), .url(url), .decimal(decimal),
    ]

    @Test func everyCaseHasItsAccessor() {
        #expect(AttributeValue.string("Ann").stringValue == "Ann")
        #expect(AttributeValue.int16(-7).int64Value == -7)
        #expect(AttributeValue.int32(70_000).int64Value == 70_000)
        #expect(AttributeValue.int64(Int64.max).int64Value == Int64.max)
        #expect(AttributeValue.int16(-7).intValue == -7)
        #expect(AttributeValue.int64(42).intValue == 42)
        #expect(AttributeValue.double(-0.5).doubleValue == -0.5)
        #expect(AttributeValue.float(1.25).doubleValue == 1.25)
        #expect(AttributeValue.float(1.25).floatValue == 1.25)
        #expect(AttributeValue.bool(true).boolValue == true)
        #expect(AttributeValue.bool(false).boolValue == false)
        #expect(AttributeValue.date(Self.date).dateValue == Self.date)
        #expect(AttributeValue.binary(Data([1, 2, 3])).dataValue == Data([1, 2, 3]))
        #expect(AttributeValue.uuid(Self.uuid).uuidValue == Self.uuid)
        #expect(AttributeValue.url(Self.url).urlValue == Self.url)
        #expect(AttributeValue.decimal(Self.decimal).decimalValue == Self.decimal)
    }

    /// Each accessor answers for its own cases only: no parsing, no rounding, no Bool as 0/1.
    @Test func everyOtherCaseGivesNil() {
        for value in Self.values {
            let integer = [AttributeType.int16, .int32, .int64].contains(value.type)
            let floating = [AttributeType.double, .float].contains(value.type)
            #expect((value.stringValue != nil) == (value.type == .string), "\(value)")
            #expect((value.int64Value != nil) == integer, "\(value)")
            #expect((value.intValue != nil) == integer, "\(value)")
            #expect((value.doubleValue != nil) == floating, "\(value)")
            #expect((value.floatValue != nil) == (value.type == .float), "\(value)")
            #expect((value.boolValue != nil) == (value.type == .bool), "\(value)")
            #expect((value.dateValue != nil) == (value.type == .date), "\(value)")
            #expect((value.dataValue != nil) == (value.type == .binary), "\(value)")
            #expect((value.uuidValue != nil) == (value.type == .uuid), "\(value)")
            #expect((value.urlValue != nil) == (value.type == .url), "\(value)")
            #expect((value.decimalValue != nil) == (value.type == .decimal), "\(value)")
        }
        #expect(AttributeValue.string("12").int64Value == nil)
        #expect(AttributeValue.int64(1).boolValue == nil)
    }

    /// The plain string has no quotes; `description` (for messages) keeps them.
    @Test func stringValueIsPlainWhereDescriptionQuotes() {
        let value = AttributeValue.string("Ann")
        #expect(value.stringValue.map { String($0.prefix(1)) } == "A")
        #expect(String("\(value)".prefix(1)) == "\"")
        #expect(value.description == #""Ann""#)
    }
}
