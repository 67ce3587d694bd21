import Foundation
import Testing

@testable import VitalsKit

@Suite("Child processes")
struct ChildProcessTests {
    @Test("a timeout ends the command and what it started: its whole process group")
    func timeoutKillsGroup() throws {
        let started = Clock.monotonicMilliseconds()
        // The shell starts a background sleep, prints its pid, and sleeps itself.
        let result = try ChildProcess.run(["/bin/sh", "-c", "sleep 30 & echo $!; sleep 30"], timeoutMs: 300, graceMs: 500)
        #expect(result.timedOut && !result.stopped && !result.succeeded)
        #expect(result.termination == .signaled(SIGTERM))
        #expect(Clock.monotonicMilliseconds() - started < 10_000, "it did not wait for the 30 s sleeps")
        let grandchild = try #require(pid_t(String(decoding: result.output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
        // The background sleep is not our child, so there is nothing to wait on: look, for up to 5 s.
        var gone = false
        for _ in 0..<500 where !gone {
            gone = !isAlive(grandchild)
            if !gone { usleep(10_000) }
        }
        #expect(gone, "the background sleep \(grandchild) was ended with its group")
    }

    @Test("output past the cap is read and dropped: the command finishes, the first bytes are kept")
    func outputCapped() throws {
        let result = try ChildProcess.run(["head", "-c", "3000000", "/dev/zero"], output: .capture(limit: 1000), timeoutMs: 30_000)
        #expect(result.termination == .exited(0) && result.succeeded)
        #expect(result.output == [UInt8](repeating: 0, count: 1000))
        #expect(result.outputTruncated && !result.errorTruncated)
    }

    @Test("a non-zero exit, with its standard error captured")
    func nonZeroExit() throws {
        let result = try ChildProcess.run(["/bin/sh", "-c", "echo oops >&2; exit 3"])
        #expect(result.termination == .exited(3) && !result.succeeded && !result.timedOut)
        #expect(String(decoding: result.error, as: UTF8.self) == "oops\n")
        #expect(result.output.isEmpty)
    }

    @Test("standard input larger than a pipe holds goes through whole, and the environment is the one given")
    func inputAndEnvironment() throws {
        let input = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let echoed = try ChildProcess.run(["cat"], input: input)
        #expect(echoed.succeeded && echoed.output == input)
        let env = try ChildProcess.run(["/usr/bin/env"], environment: ["ONLY": "this"])
        #expect(String(decoding: env.output, as: UTF8.self) == "ONLY=this\n")
    }

    @Test("a program that does not exist cannot start, by path or by name", arguments: ["/no/such/program", "vitals-no-such-program"])
    func missingProgram(program: String) throws {
        let failure = try #require(throws: ChildProcess.StartFailure.self) { try ChildProcess.run([program, "--flag"]) }
        #expect(failure.program == program && failure.reason == "No such file or directory")
        #expect(failure.description == "cannot run \(program): No such file or directory")
    }

    @Test("stop() ends a running command as an interruption, not a timeout")
    func stop() throws {
        let child = try ChildProcess(["sleep", "30"], timeoutMs: 30_000, graceMs: 500)
        #expect(!child.pump())
        child.stop()
        let result = child.wait()
        #expect(result.stopped && !result.timedOut && result.termination == .signaled(SIGTERM))
    }

    /// Whether `pid` names a process that has not ended (a zombie has ended).
    private func isAlive(_ pid: pid_t) -> Bool {
        guard kill(pid, 0) == 0 else { return false }
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return true }
        return !stat[close...].hasPrefix(") Z")
    }
}
