#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import VitalsKit

/// What detect-anomaly reads from one record line, found by byte ranges without building values.
///
/// A field given twice counts by its last occurrence, as `JSONObject` reads it.
struct SampleLine {
    /// The status words the seed's candidates have.
    enum Status { case up, degraded, other, missing }

    /// Whether `type` is `"sample"`.
    var isSample = false
    /// Where the monitor id's bytes are: the string's content when written plainly; `decodedMonitor`
    /// holds it when it has escapes. Nil when there is no string monitor.
    var monitorBytes: Range<Int>?
    /// The monitor id, decoded, when it was written with escapes.
    var decodedMonitor: [UInt8]?
    var status = Status.missing
    /// The judged field as a finite number; nil when absent, null or not a number.
    var value: Double?
    /// `simulated` is true, or the message contains "simulated".
    var simulated = false
    /// `at` in milliseconds, when it is a valid timestamp.
    var atMs: Int64?

    /// Ranges of the fields detect-anomaly may rewrite.
    var statusField: FieldRange?
    var reasonField: FieldRange?
    var messageField: FieldRange?
    var anomalyField: FieldRange?

    /// Reads the fields of `line`, given its top-level field ranges from `JSONParser.scanObject`.
    /// `valueKey` is the judged field's name; `readsTime`: whether `at` is parsed (the robust
    /// detector's seasons and level use it).
    init(_ line: UnsafeBufferPointer<UInt8>, fields: [FieldRange], valueKey: UnsafeBufferPointer<UInt8>, readsTime: Bool) {
        var messageSimulated = false
        var flagSimulated = false
        let base = line.baseAddress!
        // Through the buffer: iterating the array itself took about 3% more instructions per line.
        fields.withUnsafeBufferPointer { fields in
            for field in fields {
                let key = base + field.keyStart
                let keyLength = field.keyEnd - field.keyStart
                if keyLength == valueKey.count, memcmp(key, valueKey.baseAddress!, keyLength) == 0 {
                    value = NumberText.parse(UnsafeBufferPointer(rebasing: line[field.valueStart..<field.valueEnd]))
                    continue
                }
                switch (keyLength, key[0]) {
                case (2, UInt8(ascii: "a")) where readsTime && Self.keyIs(key, "at"):
                    atMs = Self.stringContent(line, field).flatMap { Timestamp.parse(bytes: $0) }
                case (4, UInt8(ascii: "t")) where Self.keyIs(key, "type"):
                    isSample = Self.stringIs(line, field, "sample")
                case (6, UInt8(ascii: "s")) where Self.keyIs(key, "status"):
                    statusField = field
                    if Self.stringIs(line, field, "up") { status = .up }
                    else if Self.stringIs(line, field, "degraded") { status = .degraded }
                    else { status = .other }
                case (6, UInt8(ascii: "r")) where Self.keyIs(key, "reason"):
                    reasonField = field
                case (7, UInt8(ascii: "m")) where Self.keyIs(key, "monitor"):
                    monitorBytes = nil
                    decodedMonitor = nil
                    if line[field.valueStart] == UInt8(ascii: "\""), !Self.hasEscape(line, field) {
                        monitorBytes = (field.valueStart + 1)..<(field.valueEnd - 1)
                    } else if var text = Self.decodedString(line, field) {
                        decodedMonitor = text.withUTF8 { Array($0) }
                    }
                case (7, UInt8(ascii: "m")) where Self.keyIs(key, "message"):
                    messageField = field
                    messageSimulated = Self.stringContains(line, field, Self.simulatedWord)
                case (7, UInt8(ascii: "a")) where Self.keyIs(key, "anomaly"):
                    anomalyField = field
                case (9, UInt8(ascii: "s")) where Self.keyIs(key, "simulated"):
                    flagSimulated = field.valueEnd - field.valueStart == 4 && line[field.valueStart] == UInt8(ascii: "t")
                default:
                    break
                }
            }
        }
        simulated = flagSimulated || messageSimulated
    }

    private static let simulatedWord = Array("simulated".utf8)

    /// Whether the key at `key` (whose length was checked) is `name` (keys with escapes never
    /// match: the names detect-anomaly reads are plain).
    @inline(__always)
    private static func keyIs(_ key: UnsafePointer<UInt8>, _ name: StaticString) -> Bool {
        memcmp(key, name.utf8Start, name.utf8CodeUnitCount) == 0
    }

    /// Whether the value is the string `"word"` written plainly.
    private static func stringIs(_ line: UnsafeBufferPointer<UInt8>, _ field: FieldRange, _ word: StaticString) -> Bool {
        word.withUTF8Buffer { word in
            guard field.valueEnd - field.valueStart == word.count + 2, line[field.valueStart] == UInt8(ascii: "\"") else { return false }
            for offset in 0..<word.count where line[field.valueStart + 1 + offset] != word[offset] { return false }
            return true
        } || (hasEscape(line, field) && decodedString(line, field) == word.description)
    }

    private static func hasEscape(_ line: UnsafeBufferPointer<UInt8>, _ field: FieldRange) -> Bool {
        line[field.valueStart] == UInt8(ascii: "\"")
            && memchr(line.baseAddress! + field.valueStart, Int32(UInt8(ascii: "\\")), field.valueEnd - field.valueStart) != nil
    }

    /// The bytes between the quotes of a string value without escapes, or nil.
    private static func stringContent(_ line: UnsafeBufferPointer<UInt8>, _ field: FieldRange) -> UnsafeBufferPointer<UInt8>? {
        guard line[field.valueStart] == UInt8(ascii: "\""), !hasEscape(line, field) else { return nil }
        return UnsafeBufferPointer(rebasing: line[(field.valueStart + 1)..<(field.valueEnd - 1)])
    }

    /// Whether a string value contains `needle` (escapes resolved); false when not a string.
    private static func stringContains(_ line: UnsafeBufferPointer<UInt8>, _ field: FieldRange, _ needle: [UInt8]) -> Bool {
        if let plain = stringContent(line, field) { return bytes(plain, contain: needle) }
        guard var text = decodedString(line, field) else { return false }
        return text.withUTF8 { bytes($0, contain: needle) }
    }

    /// A string value, decoded (escapes resolved); nil when the value is not a string.
    static func decodedString(_ line: UnsafeBufferPointer<UInt8>, _ field: FieldRange) -> String? {
        guard line[field.valueStart] == UInt8(ascii: "\"") else { return nil }
        if let plain = stringContent(line, field) { return String(decoding: plain, as: UTF8.self) }
        let value = try? JSONParser.parse(UnsafeBufferPointer(rebasing: line[field.valueStart..<field.valueEnd]))
        return value?.stringValue
    }
}

/// Whether `haystack` contains `needle` as a contiguous run of bytes.
func bytes(_ haystack: UnsafeBufferPointer<UInt8>, contain needle: [UInt8]) -> Bool {
    guard haystack.count >= needle.count else { return false }
    guard let first = needle.first else { return true }
    var start = 0
    let last = haystack.count - needle.count
    outer: while start <= last {
        if haystack[start] != first { start += 1; continue }
        for offset in 1..<needle.count where haystack[start + offset] != needle[offset] {
            start += 1
            continue outer
        }
        return true
    }
    return false
}
