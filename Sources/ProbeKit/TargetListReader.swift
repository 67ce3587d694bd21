import VitalsKit

/// A parser that takes targets one object at a time: probe-http's and probe-ping's.
public protocol TargetSink {
    /// The field a bare line (or a string in an array) stands for: `url` or `target`.
    static var bareField: String { get }
    /// What a bare line is, in messages: `URL`, `host`.
    static var bareNoun: String { get }
    /// Where problems are reported.
    var diagnostics: Diagnostics { get }
    /// Validates one target object and keeps it, or reports why not.
    mutating func add(_ object: JSONObject, source: String, line: Int)
}

/// Reads target lists the way every probe does: one target per line as a bare word or a JSON
/// object, or a file holding one JSON array of targets (isitup's `services.json`). Blank lines
/// and lines starting with `#` are skipped; every problem is a diagnostic naming the line, and
/// the other targets are kept.
public enum TargetListReader {
    /// Reads every target from `reader` into `sink`.
    public static func read<Sink: TargetSink>(_ reader: LineReader, into sink: inout Sink) {
        var sawContent = false
        while let event = reader.next() {
            switch event {
            case .tooLong(let length):
                sink.diagnostics.error("line is \(length) bytes, over the 16 MiB limit; skipped", source: reader.source, line: reader.lineNumber)
            case .line(let bytes):
                guard let first = bytes.firstIndex(where: { $0 != 0x20 && $0 != 0x09 }) else { continue }
                if bytes[first] == UInt8(ascii: "#") { continue }
                if !sawContent, bytes[first] == UInt8(ascii: "["), opensArray(bytes, at: first) {
                    readArray(startingWith: bytes, reader: reader, into: &sink)
                    return
                }
                sawContent = true
                readLine(bytes, source: reader.source, line: reader.lineNumber, into: &sink)
            }
        }
    }

    /// Whether the `[` at `index` starts a JSON array of targets (followed by `{`, `"`, `]` or
    /// nothing on its line) rather than a bracketed IPv6 address (`[::1]:443`).
    static func opensArray(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> Bool {
        var next = index + 1
        while next < bytes.count, bytes[next] == 0x20 || bytes[next] == 0x09 { next += 1 }
        guard next < bytes.count else { return true }
        return bytes[next] == UInt8(ascii: "{") || bytes[next] == UInt8(ascii: "\"") || bytes[next] == UInt8(ascii: "]")
    }

    /// Reads one line: a bare word or a JSON object.
    public static func readLine<Sink: TargetSink>(_ bytes: UnsafeBufferPointer<UInt8>, source: String, line: Int, into sink: inout Sink) {
        let first = bytes.firstIndex(where: { $0 != 0x20 && $0 != 0x09 }) ?? 0
        if bytes[first] == UInt8(ascii: "{") {
            do {
                let value = try JSONParser.parse(bytes)
                guard case .object(let object) = value else { return }
                sink.add(object, source: source, line: line)
            } catch {
                sink.diagnostics.error("not valid JSON: \(error)", source: source, line: line)
            }
            return
        }
        let text = String(decoding: bytes, as: UTF8.self).trimmingSpaces
        if text.contains(where: { $0 == " " || $0 == "\t" }) {
            sink.diagnostics.error("expected a \(Sink.bareNoun) or a JSON object, got '\(Redaction.url(String(text.prefix(80))))'",
                                   source: source, line: line)
            return
        }
        sink.add(JSONObject([JSONField(Sink.bareField, .string(text))]), source: source, line: line)
    }

    private static func readArray<Sink: TargetSink>(startingWith firstLine: UnsafeBufferPointer<UInt8>, reader: LineReader, into sink: inout Sink) {
        let startLine = reader.lineNumber
        var whole = Array(firstLine)
        while let event = reader.next() {
            whole.append(0x0A)
            switch event {
            case .line(let bytes): whole.append(contentsOf: bytes)
            case .tooLong(let length):
                sink.diagnostics.error("line is \(length) bytes, over the 16 MiB limit; the target array cannot be read",
                                       source: reader.source, line: reader.lineNumber)
                return
            }
        }
        whole.withUnsafeBufferPointer { buffer in
            let elements: [Range<Int>]
            do {
                elements = try JSONParser.scanArray(buffer)
            } catch let error as JSONSyntaxError {
                let line = startLine + buffer[0..<min(error.column - 1, buffer.count)].filter { $0 == 0x0A }.count
                sink.diagnostics.error("not a valid JSON array of targets: \(error.message)", source: reader.source, line: line)
                return
            } catch {
                return
            }
            var newlines = 0
            var counted = 0
            for range in elements {
                for index in counted..<range.lowerBound where buffer[index] == 0x0A { newlines += 1 }
                counted = range.lowerBound
                let line = startLine + newlines
                let element = UnsafeBufferPointer(rebasing: buffer[range])
                if element.first == UInt8(ascii: "\"") {
                    if case .string(let word)? = try? JSONParser.parse(element) {
                        sink.add(JSONObject([JSONField(Sink.bareField, .string(word))]), source: reader.source, line: line)
                    }
                } else if element.first == UInt8(ascii: "{") {
                    if case .object(let object)? = try? JSONParser.parse(element) {
                        sink.add(object, source: reader.source, line: line)
                    } else {
                        sink.diagnostics.error("target is not valid JSON", source: reader.source, line: line)
                    }
                } else {
                    sink.diagnostics.error("expected a target object or a \(Sink.bareNoun) string in the array", source: reader.source, line: line)
                }
            }
        }
    }
}

/// A problem with one target, in words.
public struct TargetProblem: Error {
    /// What is wrong and how to fix it.
    public let message: String

    /// Creates a problem.
    public init(_ message: String) { self.message = message }
}

/// Typed access to a target object's fields, each looked up in the object and then in its
/// `config` object (OnlineTracker's monitors keep thresholds there); `null` counts as absent.
/// Every getter throws a `TargetProblem` naming the field and what it should be.
public struct TargetFields {
    /// The target object.
    public let object: JSONObject
    /// Its `config` object (empty when none).
    public let config: JSONObject

    /// Wraps an object.
    public init(_ object: JSONObject) {
        self.object = object
        self.config = object["config"]?.objectValue ?? JSONObject()
    }

    /// The value of `key`, or nil when absent or null.
    public func value(_ key: String) -> JSONValue? {
        if let value = object[key], !value.isNull { return value }
        if let value = config[key], !value.isNull { return value }
        return nil
    }

    /// A string field.
    public func string(_ key: String) throws(TargetProblem) -> String? {
        guard let value = value(key) else { return nil }
        guard case .string(let text) = value else {
            throw TargetProblem("field '\(key)' must be a string, not \(value.typeName)")
        }
        return text
    }

    /// A number field within `range` (a numeric string is accepted).
    public func number(_ key: String, _ range: ClosedRange<Double>) throws(TargetProblem) -> Double? {
        guard let value = value(key) else { return nil }
        guard let number = value.doubleValue ?? value.stringValue.flatMap(Double.init), range.contains(number) else {
            throw TargetProblem("field '\(key)' must be a number from \(plainNumber(range.lowerBound)) to \(plainNumber(range.upperBound)), not \(value.jsonText)")
        }
        return number
    }

    /// A whole-number field within `range` (a numeric string is accepted).
    public func integer(_ key: String, _ range: ClosedRange<Int>) throws(TargetProblem) -> Int? {
        guard let value = value(key) else { return nil }
        guard let number = value.intValue ?? value.stringValue.flatMap({ Int($0) }), range.contains(number) else {
            throw TargetProblem("field '\(key)' must be a whole number from \(range.lowerBound) to \(range.upperBound), not \(value.jsonText)")
        }
        return number
    }

    /// A boolean field.
    public func bool(_ key: String) throws(TargetProblem) -> Bool? {
        guard let value = value(key) else { return nil }
        guard case .bool(let flag) = value else { throw TargetProblem("field '\(key)' must be true or false") }
        return flag
    }

    /// Whether the target is switched off (`enabled: false`, OnlineTracker's monitors).
    public var isDisabled: Bool {
        if case .bool(false)? = object["enabled"] { return true }
        return false
    }

    /// The `id` as written (a string or a number), trimmed; `derived` when absent or blank.
    public func id(derived: () -> String) throws(TargetProblem) -> String {
        guard let rawID = value("id") else { return derived() }
        let text: String
        switch rawID {
        case .string(let value): text = value
        case .number(let value): text = value
        default: throw TargetProblem("field 'id' must be a string or a number, not \(rawID.typeName)")
        }
        return TargetIDs.normalize(text) ?? derived()
    }

    /// `check_interval` in milliseconds: seconds (`60`) or a duration (`"5m"`).
    public func checkIntervalMs() throws(TargetProblem) -> Int64? {
        guard let interval = value("check_interval") else { return nil }
        if let seconds = interval.doubleValue, seconds > 0, seconds <= 31_536_000 {
            return Int64((seconds * 1000).rounded())
        }
        if let text = interval.stringValue, let parsed = DurationText.parseMilliseconds(text), parsed > 0 {
            return parsed
        }
        throw TargetProblem("field 'check_interval' must be seconds (60) or a duration (\"5m\"), not \(interval.jsonText)")
    }

    /// `ip`: `"4"`, `"6"`, `"both"` or `"any"`.
    public func ipChoice() throws(TargetProblem) -> IPChoice? {
        guard let ip = value("ip") else { return nil }
        let text = ip.stringValue ?? ip.intValue.map(String.init) ?? ""
        guard let choice = IPChoice(rawValue: text) else {
            throw TargetProblem("field 'ip' must be \"4\", \"6\", \"both\" or \"any\", not \(ip.jsonText)")
        }
        return choice
    }

    /// `ssl_ok_threshold_days` and `ssl_warning_threshold_days` (days of certificate validity at
    /// or above which TLS is fine, and below which the target is down). When only one is given
    /// and it crosses the other's default, the other follows it, so the band never inverts.
    public func sslDays(okDefault: Int, warningDefault: Int) throws(TargetProblem) -> (ok: Int, warning: Int) {
        let okDays = try integer("ssl_ok_threshold_days", 0...3650)
        let warningDays = try integer("ssl_warning_threshold_days", 0...3650)
        var ok = okDays ?? okDefault
        var warning = warningDays ?? warningDefault
        if warning > ok {
            if let okDays, let warningDays {
                throw TargetProblem("ssl_warning_threshold_days (\(warningDays)) is above ssl_ok_threshold_days (\(okDays))")
            }
            if okDays != nil { warning = ok } else { ok = warning }
        }
        return (ok, warning)
    }

    /// The fields a probe does not own, to carry into its samples in order.
    public func extraFields(known: Set<String>, own: Set<String>) -> [JSONField] {
        object.fields.filter { !known.contains($0.key) && !own.contains($0.key) }
    }
}

/// `5` for 5.0, `0.5` for 0.5: numbers in messages.
public func plainNumber(_ value: Double) -> String {
    value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
}
