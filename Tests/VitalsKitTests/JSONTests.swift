import Testing

@testable import VitalsKit

@Suite("JSON values, parser and scanner")
struct JSONTests {
    @Test("objects keep field order, duplicates and unknown fields; numbers keep their text")
    func roundTrip() throws {
        let text = #"{"z":1,"a":[true,false,null],"n":1.50,"e":-2.5E+3,"s":"x","z":2,"o":{}}"#
        let value = try JSONParser.parse(text)
        #expect(value.jsonText == text)
        let object = try #require(value.objectValue)
        #expect(object.fields.map(\.key) == ["z", "a", "n", "e", "s", "z", "o"])
        #expect(object["z"]?.intValue == 2, "the last duplicate wins for typed access")
        #expect(object["n"] == .number("1.50"))
        #expect(object["e"]?.doubleValue == -2500)
    }

    @Test("string escapes, surrogate pairs and UTF-8 decode; output escapes what it must")
    func strings() throws {
        let value = try JSONParser.parse(#""a\"b\\c\/d\n\t\u00e9\ud83d\ude00 ok""#)
        #expect(value == .string("a\"b\\c/d\n\té😀 ok"))
        #expect(JSONValue.string("q\"\\\n\u{01}é").jsonText == #""q\"\\\n\u0001é""#)
        #expect(try JSONParser.parse(#""\ud800""#) == .string("\u{FFFD}"), "a lone surrogate becomes U+FFFD")
    }

    @Test(
        "malformed input is an error with a column",
        arguments: [
            ("{\"a\":}", "expected a value", 6),
            ("{\"a\" 1}", "expected ':' after a field name", 6),
            ("[1,2", "expected ',' or ']' in an array", 5),
            ("{\"a\":1 \"b\":2}", "expected ',' or '}' in an object", 8),
            ("{1:2}", "expected a field name in double quotes", 2),
            ("{\"a\":01}", "invalid number (leading zero)", 7),
            ("\"abc", "unterminated string", 5),
            ("{\"a\":tru}", "unknown literal; expected true, false or null", 6),
            ("{} x", "unexpected text after the JSON value", 4),
            ("\"\\q\"", "invalid escape '\\q' in a string", 3),
            ("\"a\tb\"", "control character in a string (escape it)", 3),
        ])
    func errors(text: String, message: String, column: Int) {
        do {
            _ = try JSONParser.parse(text)
            Issue.record("parsed: \(text)")
        } catch {
            #expect(error.message.hasSuffix(message), "\(error)")
            #expect(error.column == column)
        }
    }

    @Test("deep nesting is an error, not a stack overflow")
    func depth() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: JSONSyntaxError.self) { _ = try JSONParser.parse(deep) }
        let fine = String(repeating: "[", count: 500) + String(repeating: "]", count: 500)
        #expect((try? JSONParser.parse(fine)) != nil)
    }

    @Test("every reader counts the outermost container as a level: maxDepth levels parse and scan, one more is an error")
    func depthLimit() {
        let limit = JSONParser.maxDepth
        func nested(_ levels: Int) -> String { String(repeating: "[", count: levels) + String(repeating: "]", count: levels) }
        func object(_ levels: Int) -> [UInt8] { Array((#"{"a":"# + nested(levels - 1) + "}").utf8) }
        #expect((try? JSONParser.parse(nested(limit))) != nil)
        #expect(throws: JSONSyntaxError.self) { _ = try JSONParser.parse(nested(limit + 1)) }
        #expect((try? JSONParser.scanArray(Array(nested(limit).utf8).span)) != nil)
        #expect(throws: JSONSyntaxError.self) { _ = try JSONParser.scanArray(Array(nested(limit + 1).utf8).span) }
        #expect((try? JSONParser.scanObject(object(limit).span)) != nil)
        #expect(throws: JSONSyntaxError.self) { _ = try JSONParser.scanObject(object(limit + 1).span) }
    }

    @Test("invalid UTF-8 in a string is rejected")
    func invalidUTF8() {
        #expect(throws: JSONSyntaxError.self) { _ = try JSONParser.parse([0x22, 0xFF, 0xFE, 0x22]) }
    }

    @Test("scanObject finds top-level field ranges without building values")
    func scanObject() throws {
        let line = Array(#" {"type":"sample","nested":{"x":[1,{"y":"}"}]},"latency_ms":12.5} "#.utf8)
        let fields = try line.withUnsafeBufferPointer { try JSONParser.scanObject($0) }
        let keys = fields.map { String(decoding: line[$0.keyStart..<$0.keyEnd], as: UTF8.self) }
        let values = fields.map { String(decoding: line[$0.valueStart..<$0.valueEnd], as: UTF8.self) }
        #expect(keys == ["type", "nested", "latency_ms"])
        #expect(values == [#""sample""#, #"{"x":[1,{"y":"}"}]}"#, "12.5"])
        #expect(throws: JSONSyntaxError.self) {
            try Array("[1]".utf8).withUnsafeBufferPointer { _ = try JSONParser.scanObject($0) }
        }
        #expect(throws: JSONSyntaxError.self) {
            try Array(#"{"a":1,}"#.utf8).withUnsafeBufferPointer { _ = try JSONParser.scanObject($0) }
        }
    }

    @Test("the compact fast path agrees with the general scan on every truncation and one-byte change of a record line")
    func compactFastPath() throws {
        /// What a scan gave: the fields' ranges, or the error.
        func outcome(_ line: [UInt8], general: Bool) -> String {
            var fields: [FieldRange] = []
            do {
                try line.withUnsafeBufferPointer { bytes throws(JSONSyntaxError) in
                    if general {
                        try JSONParser.scanAnyObject(bytes, into: &fields)
                    } else {
                        try JSONParser.scanObject(bytes, into: &fields)
                    }
                }
                return fields.map { "\($0.keyStart),\($0.keyEnd),\($0.valueStart),\($0.valueEnd)" }.joined(separator: " ")
            } catch {
                return "error: \(error)"
            }
        }
        func isCompact(_ line: [UInt8]) -> Bool {
            var fields: [FieldRange] = []
            return line.withUnsafeBufferPointer { JSONParser.scanCompactObject($0, into: &fields) }
        }
        let base = Array(
            #"{"type":"sample","":"","monitor":"mon-0001","n":0,"m":-0.5,"e":1E+9,"f":-12e-3,"t":true,"u":false,"z":null,"long string value here":"cafe and more than eight bytes"}"#
                .utf8)
        #expect(isCompact(base), "the base line takes the fast path")
        // A string with a UTF-8 letter is the general scan's to check, with the same outcome.
        let accented = Array(#"{"type":"sample","name":"caf\#u{E9} and more than eight bytes"}"#.utf8)
        #expect(!isCompact(accented) && outcome(accented, general: false) == outcome(accented, general: true))
        #expect(outcome(base, general: false) == outcome(base, general: true))
        #expect(outcome(base, general: false).hasPrefix("2,6,8,16 18,18,20,22 "), "fields found where they are (worked by hand)")
        var variants: [[UInt8]] = [
            Array("{}".utf8), Array("{} ".utf8), Array("{\"a\":1} ".utf8), Array("{\"a\":01}".utf8),
            Array("{\"a\":1.}".utf8), Array("{\"a\":-}".utf8), Array("{\"a\":1e}".utf8), Array("{\"a\":nul}".utf8),
            Array("{\"a\":\"x\\\"y\"}".utf8), Array("{\"a\":[1]}".utf8), Array("{\"a\":1,}".utf8), Array("{\"a\"}".utf8),
            // more fields than the fast path gathers at a time (32)
            Array(("{" + (0..<70).map { "\"k\($0)\":\($0)" }.joined(separator: ",") + "}").utf8),
            Array(("{" + (0..<70).map { "\"k\($0)\":\($0)" }.joined(separator: ",") + ",}").utf8),
        ]
        for position in 0...base.count {
            variants.append(Array(base[..<position]))
            for byte in Array(" \"\\,:{}[0-e.xn\u{01}".utf8) {
                if position < base.count {
                    var changed = base
                    changed[position] = byte
                    variants.append(changed)
                }
                var inserted = base
                inserted.insert(byte, at: position)
                variants.append(inserted)
            }
        }
        var fast = 0
        for variant in variants {
            if isCompact(variant) { fast += 1 }
            let text = String(decoding: variant, as: UTF8.self)
            #expect(outcome(variant, general: false) == outcome(variant, general: true), "\(text)")
        }
        // Both sides are exercised: many variants are taken by the fast path, many are left to the general scan.
        #expect(fast > 500 && variants.count - fast > 2000, "\(fast) of \(variants.count) on the fast path")
    }

    @Test("a string's end, escapes and control characters are found at every position of the eight-byte scan")
    func stringScanPositions() throws {
        // Filler with a two-byte UTF-8 letter (bytes 0xC3 0xA9): the scan stops at it to check it is
        // UTF-8 and goes on. A cut inside it would be invalid UTF-8, so the one position that would
        // split it takes the whole letter instead (`position` counts bytes).
        let filler = Array("ab\u{E9}cdefghijklmnopqrstuvwxyz".utf8)
        for position in 0..<20 where position != 3 {
            let text = Array(filler[0..<position])
            // The string ends at its first unescaped quote: the value is the quotes and `position` bytes.
            let plain = [UInt8(ascii: "{"), 0x22, 0x6B, 0x22, 0x3A, 0x22] + text + [0x22, 0x2C, 0x22, 0x6E, 0x22, 0x3A, 0x31, 0x7D]
            let fields = try plain.withUnsafeBufferPointer { try JSONParser.scanObject($0) }
            #expect(fields.map(\.valueEnd) == [5 + position + 2, plain.count - 1], "end quote after \(position) bytes")
            // An escaped quote at `position` does not end the string.
            let escaped = Array(#"{"k":""#.utf8) + text + [0x5C, 0x22] + filler + [0x22, 0x7D]
            let escapedFields = try escaped.withUnsafeBufferPointer { try JSONParser.scanObject($0) }
            #expect(escapedFields.map(\.valueEnd) == [escaped.count - 1], "escaped quote after \(position) bytes")
            // A raw control character at `position` is an error at its column.
            let control = Array(#"{"k":""#.utf8) + text + [0x01] + filler + [0x22, 0x7D]
            do {
                _ = try control.withUnsafeBufferPointer { try JSONParser.scanObject($0) }
                Issue.record("a control character after \(position) bytes was accepted")
            } catch let error as JSONSyntaxError {
                #expect(error.column == 5 + 1 + position + 1, "control character after \(position) bytes")
                #expect(error.message.hasPrefix("control character"), "\(error)")
            } catch {
                Issue.record("\(error)")
            }
        }
    }

    @Test("invalid UTF-8 in a string is an error for every reader, at the byte where it starts (RFC 3629 §4)")
    func invalidUTF8EveryReader() throws {
        let cases: [(bytes: [UInt8], column: Int)] = [
            ([0xFF], 7), ([0xC3], 7), ([0xC0, 0xAF], 7), ([0xC1, 0xBF], 7),  // a stray byte, a cut letter, overlong forms of '/' and DEL
            ([0xE0, 0x80, 0xAF], 7), ([0xED, 0xA0, 0x80], 7),  // an overlong three-byte form, a surrogate
            // past U+10FFFF; after the 8-byte scan
            ([0xF4, 0x90, 0x80, 0x80], 7), ([0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x80], 15),
        ]
        for (bytes, column) in cases {
            let line = Array(#"{"k":""#.utf8) + bytes + Array(#"","n":1}"#.utf8)
            for general in [false, true] {
                do {
                    if general {
                        _ = try JSONParser.parse(line)
                    } else {
                        _ = try line.withUnsafeBufferPointer { try JSONParser.scanObject($0) }
                    }
                    Issue.record("\(bytes) accepted")
                } catch let error as JSONSyntaxError {
                    #expect(error.message == "a string is not valid UTF-8" && error.column == column, "\(bytes): \(error)")
                } catch {
                    Issue.record("\(error)")
                }
            }
        }
        // Well-formed letters of every length pass, on both paths: é, €, 𝄞 and U+10FFFF.
        let good = Array(#"{"k":"é€𝄞\#u{10FFFF}abcdefgh","n":1}"#.utf8)
        #expect(try good.withUnsafeBufferPointer { try JSONParser.scanObject($0) }.count == 2)
        #expect(try JSONParser.parse(good).objectValue?["k"]?.stringValue == "é€𝄞\u{10FFFF}abcdefgh")
    }

    @Test("scanArray finds element ranges")
    func scanArray() throws {
        let text = Array(#"[ {"a":1}, "x" ,[2] ]"#.utf8)
        let ranges = try text.withUnsafeBufferPointer { try JSONParser.scanArray($0) }
        #expect(ranges.map { String(decoding: text[$0], as: UTF8.self) } == [#"{"a":1}"#, #""x""#, "[2]"])
    }

    @Test(
        "fixed-point and integer output",
        arguments: [
            (12.3456, 3, "12.346"), (0.0004, 3, "0"), (2.0, 3, "2"), (-1.25, 1, "-1.3"), (0.042, 3, "0.042"),
            (1000.5, 0, "1001"), (99.999, 2, "100"), (-0.0001, 3, "0"),
        ])
    func fixed(value: Double, decimals: Int, expected: String) {
        var out: [UInt8] = []
        JSONText.appendFixed(value, decimals: decimals, to: &out)
        #expect(String(decoding: out, as: UTF8.self) == expected)
    }

    @Test("integers, including the extremes")
    func integers() {
        for (value, text) in [(Int64(0), "0"), (-7, "-7"), (Int64.max, "9223372036854775807"), (Int64.min, "-9223372036854775808")] {
            var out: [UInt8] = []
            JSONText.appendInt(value, to: &out)
            #expect(String(decoding: out, as: UTF8.self) == text)
        }
        var nan: [UInt8] = []
        JSONText.appendFixed(.nan, decimals: 3, to: &nan)
        #expect(String(decoding: nan, as: UTF8.self) == "null")
    }

    @Test("the object builder writes fields in order with nulls")
    func builder() {
        var builder = JSONObjectBuilder()
        builder.string("type", "sample")
        builder.int("code", nil)
        builder.fixed("latency_ms", 1.5)
        builder.bool("ok", true)
        builder.field("user \"field\"", .array([.integer(1)]))
        #expect(
            String(decoding: builder.finish(), as: UTF8.self)
                == #"{"type":"sample","code":null,"latency_ms":1.5,"ok":true,"user \"field\"":[1]}"#)
    }

    @Test(
        "number literals read from bytes give the standard library's Double",
        arguments: [
            "0", "-3", "48.2", "1200.125", "0.1", "123456789012345", "1234567890123456789", "1e3", "-2.5E-2", "1e400",
        ])
    func numbers(text: String) {
        let expected = Double(text)
        var bytes = text
        let value = bytes.withUTF8 { JSONNumber.value($0) }
        #expect(value == expected)
    }

    @Test("what does not start like a number is nil")
    func notNumbers() {
        for text in ["null", "\"1\"", "true", ""] {
            var bytes = text
            #expect(bytes.withUTF8 { JSONNumber.value($0) } == nil)
        }
    }
}
