import Foundation
import Testing

@testable import VitalsKit

/// What one line reads as, with the values a test looks at (copied out while the bytes live).
struct ReadSample: Equatable {
    var kind: SampleLine.Kind
    var monitor = ""
    var atMs: Int64 = 0
    var status = SampleStatus.unknown
    var reason: String?
    var reasonPresent = false
    var latencyMs: Double?
    var latencyPresent = false
    var agent: String?
    var monitorIsPlain = true
}

/// Reads `text` with a fresh reader (or `reader`, to reuse one).
func readSample(_ text: String, _ reader: inout SampleLine) -> ReadSample {
    let bytes = Array(text.utf8)
    return bytes.withUnsafeBufferPointer { buffer in
        var result = ReadSample(kind: reader.read(buffer))
        guard result.kind == .sample else { return result }
        result.monitor = reader.monitor
        result.atMs = reader.atMs
        result.status = reader.status
        result.reason = reader.reason
        result.reasonPresent = reader.reasonField != nil
        result.latencyMs = reader.latencyMs
        result.latencyPresent = reader.latencyField != nil
        result.agent = reader.agent
        result.monitorIsPlain = reader.monitorIsPlain
        return result
    }
}

func readSample(_ text: String) -> ReadSample {
    var reader = SampleLine()
    return readSample(text, &reader)
}

/// Collects the keys the reader hands to a tool, in order.
struct KeyCollector: SampleFieldReader {
    var keys: [String] = []
    var lastCode: String?
    var line: UnsafeBufferPointer<UInt8>
    mutating func take(key: UnsafePointer<UInt8>, count: Int, field: FieldRange) {
        let name = String(decoding: UnsafeBufferPointer(start: key, count: count), as: UTF8.self)
        keys.append(name)
        if count == 4, SampleLine.key(key, is: "code") {
            lastCode = String(decoding: UnsafeBufferPointer(rebasing: line[field.valueStart..<field.valueEnd]), as: UTF8.self)
        }
    }
}

private let at = #""at":"2026-01-27T10:30:00.123Z""#
private let atMs: Int64 = 1_769_509_800_123

@Suite("the sample reader")
struct SampleLineTests {
    @Test("a probe's sample: the spine, read in place")
    func spine() {
        let read = readSample(
            #"{"type":"sample","monitor":"api","name":"API",\#(at),"status":"degraded","reason":"latency","latency_ms":312.5,"agent":"office","team":"x"}"#
        )
        #expect(read.kind == .sample)
        #expect(read.monitor == "api")
        #expect(read.monitorIsPlain)
        #expect(read.atMs == atMs)
        #expect(read.status == .degraded)
        #expect(read.reason == "latency")
        #expect(read.latencyMs == 312.5)
        #expect(read.agent == "office")
    }

    @Test("null reason, latency and agent are fine, and read as nothing")
    func nulls() {
        let read = readSample(#"{"type":"sample","monitor":"a",\#(at),"status":"error","reason":null,"latency_ms":null,"agent":null}"#)
        #expect(read.kind == .sample)
        #expect(read.reason == nil && read.reasonPresent, "a null reason is still a field a filter can rewrite")
        #expect(read.latencyMs == nil && read.latencyPresent)
        #expect(read.agent == nil)
        let bare = readSample(#"{"type":"sample","monitor":"a",\#(at),"status":"up"}"#)
        #expect(bare.kind == .sample && !bare.reasonPresent && !bare.latencyPresent)
    }

    @Test("every status of the vocabulary, and nothing else", arguments: SampleStatus.allCases)
    func statuses(status: SampleStatus) {
        #expect(readSample(#"{"type":"sample","monitor":"a",\#(at),"status":"\#(status.rawValue)"}"#).status == status)
    }

    @Test("escapes in the monitor, type and status are resolved")
    func escapes() {
        let read = readSample(#"{"type":"sampl\u0065","monitor":"a\"b\u00e9\\c",\#(at),"status":"\u0075p"}"#)
        #expect(read.kind == .sample)
        #expect(read.monitor == "a\"bé\\c")
        #expect(!read.monitorIsPlain)
        #expect(read.status == .up)
    }

    @Test("a key given twice counts by its last occurrence")
    func duplicates() {
        let read = readSample(
            #"{"type":"anomaly","monitor":"a","status":"down",\#(at),"monitor":"b","status":"up","type":"sample","latency_ms":"x","latency_ms":3}"#
        )
        #expect(read.kind == .sample)
        #expect(read.monitor == "b")
        #expect(read.status == .up)
        #expect(read.latencyMs == 3)
        #expect(readSample(#"{"type":"sample","type":"digest"}"#).kind == .otherRecord)
    }

    @Test("one reader serves many lines; nothing of a line leaks into the next")
    func reuse() {
        var reader = SampleLine()
        #expect(readSample(#"{"type":"sample","monitor":"a",\#(at),"status":"up","reason":"x","latency_ms":1}"#, &reader).reason == "x")
        let second = readSample(#"{"type":"sample","monitor":"b",\#(at),"status":"down"}"#, &reader)
        #expect(second.monitor == "b")
        #expect(second.reason == nil && !second.reasonPresent && !second.latencyPresent)
    }

    @Test(
        "records of another type and blank lines are not problems",
        arguments: [
            (#"{"type":"anomaly","monitor":5}"#, SampleLine.Kind.otherRecord),
            (#"{"type":"notification","status":"sideways"}"#, .otherRecord),
            (#"{"type":"digest"}"#, .otherRecord),
            ("", .blank),
            (" \t ", .blank),
        ])
    func notSamples(line: String, kind: SampleLine.Kind) {
        #expect(readSample(line).kind == kind)
    }

    @Test(
        "each problem has its one wording",
        arguments: [
            ("hello", "not valid JSON: expected a JSON object at column 1"),
            (#"{"type":"sample","#, "not valid JSON: unexpected end of line; expected a field name in double quotes at column 18"),
            ("[1]", "not valid JSON: expected a JSON object at column 1"),
            (#"{"monitor":"a","at":"2026-01-27T10:30:00Z","status":"up"}"#, "record has no 'type'"),
            (#"{"type":5,"monitor":"a"}"#, "record has no 'type'"),
            (#"{"type":null}"#, "record has no 'type'"),
            (#"{"type":"sample",\#(at),"status":"up"}"#, "sample has no 'monitor'"),
            (#"{"type":"sample","monitor":"",\#(at),"status":"up"}"#, #"sample 'monitor' is ""; expected a non-empty string"#),
            (#"{"type":"sample","monitor":7,\#(at),"status":"up"}"#, "sample 'monitor' is 7; expected a non-empty string"),
            (#"{"type":"sample","monitor":"a","status":"up"}"#, "sample has no 'at'"),
            (#"{"type":"sample","monitor":"a","at":"yesterday","status":"up"}"#, #"sample 'at' is "yesterday"; expected an RFC 3339 time"#),
            (#"{"type":"sample","monitor":"a","at":1769509800,"status":"up"}"#, "sample 'at' is 1769509800; expected an RFC 3339 time"),
            (#"{"type":"sample","monitor":"a",\#(at)}"#, "sample has no 'status'"),
            (
                #"{"type":"sample","monitor":"a",\#(at),"status":"healthy"}"#,
                #"sample 'status' is "healthy"; expected up, degraded, down, error or unknown"#
            ),
            (
                #"{"type":"sample","monitor":"a",\#(at),"status":null}"#,
                "sample 'status' is null; expected up, degraded, down, error or unknown"
            ),
            (#"{"type":"sample","monitor":"a",\#(at),"status":"up","reason":404}"#, "sample 'reason' is 404; expected a string or null"),
            (
                #"{"type":"sample","monitor":"a",\#(at),"status":"up","latency_ms":"fast"}"#,
                #"sample 'latency_ms' is "fast"; expected a number, 0 or more, or null"#
            ),
            (
                #"{"type":"sample","monitor":"a",\#(at),"status":"up","latency_ms":-1.5}"#,
                "sample 'latency_ms' is -1.5; expected a number, 0 or more, or null"
            ),
            (
                #"{"type":"sample","monitor":"a",\#(at),"status":"up","agent":["x"]}"#,
                #"sample 'agent' is ["x"]; expected a string or null"#
            ),
            (
                #"{"type":"sample","monitor":"a",\#(at),"status":"0123456789012345678901234567890123456789xyz"}"#,
                #"sample 'status' is "012345678901234567890123456789012345678...; expected up, degraded, down, error or unknown"#
            ),
        ])
    func problems(line: String, message: String) {
        guard case .problem(let problem) = readSample(line).kind else {
            Issue.record("no problem found in \(line)")
            return
        }
        #expect(problem.message == message)
        #expect(problem.lineIsRecord == !message.hasPrefix("not valid JSON"), "only JSON objects are passed on by filters")
    }

    @Test("the spine is checked in order: monitor before at before status")
    func order() {
        guard case .problem(let problem) = readSample(#"{"type":"sample","at":"x","status":"y"}"#).kind else {
            Issue.record("accepted")
            return
        }
        #expect(problem == .missing("monitor"))
    }

    @Test("negative zero is a latency of 0")
    func negativeZero() {
        #expect(readSample(#"{"type":"sample","monitor":"a",\#(at),"status":"up","latency_ms":-0}"#).latencyMs == 0)
    }

    @Test("an over-long line's wording")
    func tooLong() {
        #expect(SampleProblem.lineTooLong(bytes: 17 << 20).message == "line is 17825792 bytes, over the 16 MiB limit")
        #expect(!SampleProblem.lineTooLong(bytes: 1).lineIsRecord)
    }

    @Test("a tool's own fields come in the same pass: every non-spine key, in order, duplicates too")
    func extraFields() {
        let text =
            #"{"type":"sample","code":200,"monitor":"a","team":"x",\#(at),"status":"up","code":503,"agent":"o","latency_ms":2,"reason":null,"message":"m"}"#
        let bytes = Array(text.utf8)
        bytes.withUnsafeBufferPointer { buffer in
            var reader = SampleLine()
            var collector = KeyCollector(line: buffer)
            #expect(reader.read(buffer, extra: &collector) == .sample)
            #expect(collector.keys == ["code", "team", "code", "message"])
            #expect(collector.lastCode == "503")
        }
    }

    @Test("CRLF line ends and a byte order mark, through the line reader")
    func crlfAndBOM() throws {
        let text =
            "\u{FEFF}{\"type\":\"sample\",\"monitor\":\"a\",\(at),\"status\":\"up\"}\r\n"
            + "{\"type\":\"sample\",\"monitor\":\"b\",\(at),\"status\":\"down\",\"latency_ms\":4}\r\n"
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("sample-line-\(getpid()).ndjson")
        try Data(text.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let lines = try LineReader.open(file.path)
        var reader = SampleLine()
        var monitors: [String] = []
        while case .line(let line) = lines.next() {
            #expect(reader.read(line) == .sample)
            monitors.append(reader.monitor)
        }
        #expect(monitors == ["a", "b"])
    }

    @Test(
        "the timestamps samples carry: the fixed-width form is read at its positions, anything off it is refused",
        arguments: [
            ("2026-01-27T10:30:00.123Z", Int64?(1_769_509_800_123)),
            ("2026-01-27T10:30:00Z", 1_769_509_800_000),
            ("2024-02-29T23:59:59.999Z", 1_709_251_199_999),
            ("1969-12-31T23:59:59.999Z", -1),
            ("2026-02-29T00:00:00.000Z", nil),
            ("2026-01-27T10:3a:00.000Z", nil),
            ("2026-01-27T10:30:00.0x0Z", nil),
            ("2026-01-27T24:00:00.000Z", nil),
            ("2026-00-27T10:30:00.000Z", nil),
            ("2026-01-27T10:30:00.000+", nil),
            ("2026-01-27X10:30:00.000Z", nil),
            ("2026-01-27T10:30:00+0000", 1_769_509_800_000),
        ])
    func timestamps(text: String, milliseconds: Int64?) {
        #expect(Timestamp.parse(text) == milliseconds)
    }
}
