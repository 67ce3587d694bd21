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
                sink.diagnostics.error(
                    "line is \(length) bytes, over the 16 MiB limit; skipped", source: reader.source, line: reader.lineNumber)
            case .line(let line):
                // Target lists are read once per run: each line is copied and read as an array.
                let bytes = Array(line)
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
    static func opensArray(_ bytes: [UInt8], at index: Int) -> Bool {
        var next = index + 1
        while next < bytes.count, bytes[next] == 0x20 || bytes[next] == 0x09 { next += 1 }
        guard next < bytes.count else { return true }
        return bytes[next] == UInt8(ascii: "{") || bytes[next] == UInt8(ascii: "\"") || bytes[next] == UInt8(ascii: "]")
    }

    /// Reads one line: a bare word or a JSON object.
    public static func readLine<Sink: TargetSink>(_ bytes: [UInt8], source: String, line: Int, into sink: inout Sink) {
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
            sink.diagnostics.error(
                "expected a \(Sink.bareNoun) or a JSON object, got '\(Redaction.url(String(text.prefix(80))))'",
                source: source, line: line)
            return
        }
        sink.add(JSONObject([JSONField(Sink.bareField, .string(text))]), source: source, line: line)
    }

    private static func readArray<Sink: TargetSink>(startingWith firstLine: [UInt8], reader: LineReader, into sink: inout Sink) {
        let startLine = reader.lineNumber
        var whole = firstLine
        while let event = reader.next() {
            whole.append(0x0A)
            switch event {
            case .line(let bytes): whole.append(contentsOf: bytes)
            case .tooLong(let length):
                sink.diagnostics.error(
                    "line is \(length) bytes, over the 16 MiB limit; the target array cannot be read",
                    source: reader.source, line: reader.lineNumber)
                return
            }
        }
        let elements: [Range<Int>]
        do throws(JSONSyntaxError) {
            elements = try JSONParser.scanArray(whole.span)
        } catch {
            let line = startLine + whole[0..<min(error.column - 1, whole.count)].filter { $0 == 0x0A }.count
            sink.diagnostics.error("not a valid JSON array of targets: \(error.message)", source: reader.source, line: line)
            return
        }
        var newlines = 0
        var counted = 0
        for range in elements {
            for index in counted..<range.lowerBound where whole[index] == 0x0A { newlines += 1 }
            counted = range.lowerBound
            let line = startLine + newlines
            let element = whole[range]
            if element.first == UInt8(ascii: "\"") {
                if case .string(let word)? = try? JSONParser.parse(element.span) {
                    sink.add(JSONObject([JSONField(Sink.bareField, .string(word))]), source: reader.source, line: line)
                }
            } else if element.first == UInt8(ascii: "{") {
                if case .object(let object)? = try? JSONParser.parse(element.span) {
                    sink.add(object, source: reader.source, line: line)
                } else {
                    sink.diagnostics.error("target is not valid JSON", source: reader.source, line: line)
                }
            } else {
                sink.diagnostics.error(
                    "expected a target object or a \(Sink.bareNoun) string in the array",
                    source: reader.source, line: line)
            }
        }
    }
}
