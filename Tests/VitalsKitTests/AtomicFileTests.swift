import Foundation
import Testing

@testable import VitalsKit

/// A fresh directory for one test, removed (with anything left in it) by `remove()`.
struct ScratchDirectory {
    let path: String

    init() throws {
        var template = Array((URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("vitals-atomic-XXXXXX").path).utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        path = try #require(made.map { String(cString: $0) })
    }

    func entries() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

@Suite("Atomic file writer")
struct AtomicFileTests {
    @Test("a new file has mode 0600, holds exactly the bytes, and no temporary is left")
    func newFile() throws {
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let path = scratch.path + "/state.json"
        try AtomicFile.write("{\"a\":1}\n", to: path)
        try expectPrivateFile(path, holding: "{\"a\":1}\n")
        #expect(scratch.entries() == ["state.json"])
    }

    @Test("a longer file is replaced whole by a shorter one, and an existing 0644 file becomes 0600")
    func replacesWhole() throws {
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let path = scratch.path + "/cache"
        #expect(
            FileManager.default.createFile(
                atPath: path, contents: Data(repeating: 0x78, count: 10_000),
                attributes: [.posixPermissions: 0o644]))
        try AtomicFile.write("short", to: path)
        try expectPrivateFile(path, holding: "short")
        #expect(scratch.entries() == ["cache"])
    }

    @Test("a bare file name is written in the current directory's terms")
    func directoryNames() {
        #expect(AtomicFile.directoryName("state.json") == ".")
        #expect(AtomicFile.directoryName("/state.json") == "/")
        #expect(AtomicFile.directoryName("a/b/state.json") == "a/b")
    }

    @Test("an unwritable directory gives an error naming the file and leaves the old file as it was")
    func unwritableDirectory() throws {
        let scratch = try ScratchDirectory()
        defer {
            _ = chmod(scratch.path, 0o700)
            if geteuid() == 0 { _ = run("/usr/bin/chattr", "-i", scratch.path) }
            scratch.remove()
        }
        let path = scratch.path + "/state.json"
        try AtomicFile.write("old", to: path)
        #expect(chmod(scratch.path, 0o500) == 0)
        // Root ignores permissions; an immutable directory refuses root too.
        if geteuid() == 0 { try #require(run("/usr/bin/chattr", "+i", scratch.path) == 0, "chattr +i is needed when run as root") }
        let error = try #require(throws: ToolError.self) { try AtomicFile.write("new", to: path) }
        #expect(error.message.hasPrefix("cannot write \(path): "))
        #expect(error.message.contains("the previous file, if any, is unchanged"))
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "old")
        #expect(scratch.entries() == ["state.json"])
    }

    @Test("a temporary name the file system refuses fails before anything is touched")
    func refusedTemporary() throws {
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        // 250 bytes is a legal name; the temporary beside it ("." + name + ".XXXXXX") is not.
        let name = String(repeating: "n", count: 250)
        let path = scratch.path + "/" + name
        #expect(FileManager.default.createFile(atPath: path, contents: Data("old".utf8)))
        let error = try #require(throws: ToolError.self) { try AtomicFile.write("new", to: path) }
        #expect(error.message.contains(name))
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "old")
        #expect(scratch.entries() == [name])
    }

    /// Expects `path` to hold exactly `text`, with mode 0600.
    private func expectPrivateFile(_ path: String, holding text: String) throws {
        #expect(try String(contentsOfFile: path, encoding: .utf8) == text)
        var info = stat()
        #expect(stat(path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
    }

    /// Runs a program and returns its exit status.
    private func run(_ program: String, _ arguments: String...) -> Int32 {
        guard let result = try? ChildProcess.run([program] + arguments, output: .inherit, error: .inherit) else { return -1 }
        switch result.termination {
        case .exited(let status): return status
        case .signaled(let signal): return signal
        }
    }
}
