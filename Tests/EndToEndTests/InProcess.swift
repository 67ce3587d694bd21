import Foundation
import VitalsKit

/// Runs a tool in this process through its `execute`, the same code path as the executable's
/// `main` after the signal set-up: standard input from `stdin`, standard output and error into
/// files of their own (no pipe to fill while the tool runs), read back once it returned. For tests
/// that want a tool's whole behaviour without a process start, and the tools' code in the
/// test's own coverage and debugger.
enum InProcess {
    /// What a run returned: its exit status, and what it wrote.
    struct Result {
        var status: VitalsKit.ExitStatus
        var stdout: String
        var stderr: String

        /// Standard output's lines.
        var lines: [String] { stdout.split(separator: "\n").map(String.init) }
    }

    /// Runs `command` with `arguments` in `directory` (relative paths in the arguments are the
    /// caller's to make absolute: the process's directory is shared by every test).
    static func run<Command: VitalsCommand>(
        _ command: Command.Type, _ arguments: [String], stdin: String = "", environment: [String: String] = [:]
    ) throws -> Result {
        let scratch = try ScratchDirectory()
        let input = try scratch.write("stdin", stdin)
        let inputFD = open(input, O_RDONLY | O_CLOEXEC)
        let outputFD = open(scratch.path("stdout"), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        let errorFD = open(scratch.path("stderr"), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        defer { for fd in [inputFD, outputFD, errorFD] where fd >= 0 { close(fd) } }
        guard inputFD >= 0, outputFD >= 0, errorFD >= 0 else { throw TestFailure("cannot open the in-process streams") }
        var merged = toolEnvironment()
        for (key, value) in environment { merged[key] = value }
        let status = Command.execute(arguments, streams: Streams(input: inputFD, output: outputFD, error: errorFD), environment: merged)
        return Result(
            status: status,
            stdout: try String(contentsOfFile: scratch.path("stdout"), encoding: .utf8),
            stderr: try String(contentsOfFile: scratch.path("stderr"), encoding: .utf8))
    }
}
