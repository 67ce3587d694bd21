import Foundation
import Testing

@testable import VitalsKit

/// Feeds `bytes` through a pipe into a LineReader and collects what it yields.
func readAll(_ bytes: [UInt8], maxLine: Int = LineReader.defaultMaxLineBytes, chunk: Int = 256 * 1024) -> [String] {
    let reader = pipeReader(bytes, maxLine: maxLine, chunk: chunk)
    var out: [String] = []
    while let event = reader.next() {
        switch event {
        case .line(let line): out.append("\(reader.lineNumber):" + String(decoding: line, as: UTF8.self))
        case .tooLong(let length): out.append("\(reader.lineNumber):TOO-LONG(\(length))")
        }
    }
    return out
}

/// A reader over `bytes` written into a pipe by another thread (so reads come in pieces).
func pipeReader(_ bytes: [UInt8], maxLine: Int = LineReader.defaultMaxLineBytes, chunk: Int = 256 * 1024) -> LineReader {
    var fds: [Int32] = [0, 0]
    pipe(&fds)
    let writeEnd = fds[1]
    let writer = Thread {
        bytes.withUnsafeBytes { _ = Streams.writeAll(writeEnd, $0) }
        close(writeEnd)
    }
    writer.start()
    return LineReader(fd: fds[0], source: "test", ownsDescriptor: true, maxLineBytes: maxLine, chunkSize: chunk)
}

@Suite("NDJSON line reader")
struct LineReaderTests {
    @Test("lines, line numbers, a last line without newline")
    func basics() {
        #expect(readAll(Array("a\nbb\n\nccc".utf8)) == ["1:a", "2:bb", "3:", "4:ccc"])
        #expect(readAll([]) == [])
        #expect(readAll(Array("\n".utf8)) == ["1:"])
    }

    @Test("CRLF endings and a UTF-8 byte order mark are dropped")
    func crlfAndBOM() {
        #expect(readAll([0xEF, 0xBB, 0xBF] + Array("x\r\ny\r\n".utf8)) == ["1:x", "2:y"])
        #expect(readAll(Array("a\r\r\n".utf8)) == ["1:a\r"], "only one CR before LF is a line end")
    }

    @Test("lines crossing chunk boundaries are whole")
    func chunkBoundaries() {
        let lines = (0..<500).map { String(repeating: Character(UnicodeScalar(97 + $0 % 26)!), count: $0 % 37 + 1) }
        let text = lines.joined(separator: "\n") + "\n"
        let expected = lines.enumerated().map { "\($0.offset + 1):\($0.element)" }
        #expect(readAll(Array(text.utf8), chunk: 7) == expected)
        #expect(readAll(Array(text.utf8), chunk: 64) == expected)
    }

    @Test("a line over the limit is reported once, with its length, and reading goes on")
    func tooLong() {
        let long = String(repeating: "z", count: 5000)
        #expect(
            readAll(Array("ok\n\(long)\nnext\n".utf8), maxLine: 1000, chunk: 128)
                == ["1:ok", "2:TOO-LONG(5000)", "3:next"])
        #expect(readAll(Array("\(long)".utf8), maxLine: 1000, chunk: 128) == ["1:TOO-LONG(5000)"])
        #expect(readAll(Array("\(long)\r\nx".utf8), maxLine: 1000, chunk: 128) == ["1:TOO-LONG(5001)", "2:x"])
        let exact = String(repeating: "q", count: 1000)
        #expect(readAll(Array("\(exact)\n".utf8), maxLine: 1000, chunk: 128) == ["1:\(exact)"])
    }

    @Test("100,000 short lines through a 4 KB chunk: every one, in order (its memory is measured end to end in ConventionTests)")
    func many() {
        var bytes: [UInt8] = []
        for index in 0..<100_000 { bytes.append(contentsOf: "\(index)\n".utf8) }
        let lines = readAll(bytes, chunk: 4096)
        #expect(lines.count == 100_000)
        #expect(lines.last == "100000:99999")
    }

    @Test("opening a missing file or a directory is an error naming it")
    func openErrors() {
        #expect(throws: ToolError.self) { _ = try LineReader.open("/nonexistent/file") }
        do {
            _ = try LineReader.open("/")
            Issue.record("a directory opened")
        } catch {
            #expect(error.message == "cannot read /: it is a directory")
        }
    }
}

@Suite("record writer")
struct RecordWriterTests {
    @Test("records are written whole, each ending in a newline, when flushed")
    func writes() throws {
        var fds: [Int32] = [0, 0]
        pipe(&fds)
        let writer = RecordWriter(fd: fds[1])
        try writer.write(Array("{\"a\":1}".utf8))
        try writer.write("{\"b\":2}")
        try writer.flush()
        close(fds[1])
        var buffer = [UInt8](repeating: 0, count: 100)
        let count = read(fds[0], &buffer, 100)
        close(fds[0])
        #expect(String(decoding: buffer[0..<count], as: UTF8.self) == "{\"a\":1}\n{\"b\":2}\n")
        #expect(writer.recordCount == 2)
    }

    @Test("a closed reader is BrokenPipe, not a crash")
    func brokenPipe() throws {
        signal(SIGPIPE, SIG_IGN)
        var fds: [Int32] = [0, 0]
        pipe(&fds)
        close(fds[0])
        let writer = RecordWriter(fd: fds[1])
        try writer.write("{}")
        #expect(throws: BrokenPipe.self) { try writer.flush() }
        #expect(writer.brokenPipe)
        #expect(throws: BrokenPipe.self) { try writer.write("{}") }
        close(fds[1])
    }
}

@Suite("NDJSON line reader: when it will block")
struct LineReaderWillReadTests {
    @Test("onIdle runs when the input pauses, before the reader blocks, and not while lines are buffered")
    func onIdle() {
        var fds: [Int32] = [0, 0]
        pipe(&fds)
        let writeEnd = fds[1]
        _ = Streams.writeAll(writeEnd, "a\nb\n")
        let reader = LineReader(fd: fds[0], source: "test", ownsDescriptor: true)
        var idleCalls = 0
        reader.idleAfterMs = 0
        reader.onIdle = {
            idleCalls += 1
            // The pause is over: more input arrives, then the end.
            _ = Streams.writeAll(writeEnd, "c\n")
            close(writeEnd)
        }
        var lines: [String] = []
        while let event = reader.next() {
            if case .line(let line) = event { lines.append(String(decoding: line, as: UTF8.self)) }
            if lines.count == 2 { #expect(idleCalls == 0, "a and b came in one read") }
        }
        #expect(lines == ["a", "b", "c"])
        #expect(idleCalls == 1)
    }
}

@Suite("NDJSON line reader: peeking and raw chunks")
struct LineReaderPeekTests {
    @Test("the first significant byte is seen past a byte order mark and blank lines, and nothing is consumed")
    func peek() {
        let reader = pipeReader([0xEF, 0xBB, 0xBF] + Array("\n \r\n\t{\"a\":1}\nx".utf8))
        #expect(reader.peekFirstSignificantByte() == UInt8(ascii: "{"))
        #expect(reader.peekFirstSignificantByte() == UInt8(ascii: "{"), "peeking twice sees the same byte")
        var lines: [String] = []
        while case .line(let line)? = reader.next() { lines.append("\(reader.lineNumber):" + String(decoding: line, as: UTF8.self)) }
        #expect(lines == ["1:", "2: ", "3:\t{\"a\":1}", "4:x"])
    }

    @Test("an input of blanks only, or nothing, has no significant byte")
    func blank() {
        #expect(pipeReader(Array(" \n\n\t".utf8)).peekFirstSignificantByte() == nil)
        #expect(pipeReader([]).peekFirstSignificantByte() == nil)
        #expect(pipeReader([0xEF, 0xBB, 0xBF]).peekFirstSignificantByte() == nil)
    }

    @Test("blanks longer than a chunk are looked past")
    func longBlanks() {
        let reader = pipeReader(Array(String(repeating: " ", count: 10_000).utf8) + Array("<x/>".utf8), chunk: 64)
        #expect(reader.peekFirstSignificantByte() == UInt8(ascii: "<"))
    }

    @Test("after a peek, the raw chunks are every byte as written, byte order mark included")
    func chunks() {
        let bytes = [0xEF, 0xBB, 0xBF] + (0..<300_000).map { UInt8(truncatingIfNeeded: $0 % 251) }
        let reader = pipeReader(bytes, chunk: 4096)
        #expect(reader.peekFirstSignificantByte() != nil)
        var seen: [UInt8] = []
        var count = 0
        while let chunk = reader.nextChunk() {
            seen.append(contentsOf: chunk)
            count += 1
        }
        #expect(seen == bytes)
        #expect(count > 1 && reader.readError == nil && !reader.interrupted)
    }

    @Test("a line is a bounds-checked view: its bytes by index and as a collection, and a byte past its end traps")
    func lineIsChecked() async {
        let reader = LineReader(bytes: Array("ab\ncd\n".utf8), source: "<test>")
        guard case .line(let line)? = reader.next() else {
            Issue.record("no line")
            return
        }
        #expect(line.count == 2 && line[0] == UInt8(ascii: "a") && line[1] == UInt8(ascii: "b") && line.text == "ab")
        #expect(Array(line) == Array("ab".utf8) && line.elementsEqual("ab".utf8))
        // The next line's bytes sit right after this one's in the buffer: reading past the end
        // must trap, not return "\n" or "c".
        await #expect(processExitsWith: .failure) {
            let reader = LineReader(bytes: Array("ab\ncd\n".utf8), source: "<test>")
            guard case .line(let line)? = reader.next() else { return }
            _ = line[line.count]
        }
    }
}
