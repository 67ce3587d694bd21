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

    @Test("a program that does not exist cannot start, by path or by name")
    func missingProgram() throws {
        let byPath = try #require(throws: ChildProcess.StartFailure.self) { try ChildProcess.run(["/no/such/program", "--flag"]) }
        #expect(byPath.program == "/no/such/program" && byPath.reason == "No such file or directory")
        #expect(byPath.description == "cannot run /no/such/program: No such file or directory")
        let byName = try #require(throws: ChildProcess.StartFailure.self) { try ChildProcess.run(["vitals-no-such-program"]) }
        #expect(byName.description == "cannot run vitals-no-such-program: not found in PATH", "\(byName)")
    }

    @Test("a name looked up in PATH: a file there that is not executable is named; a folder not searchable is said")
    func lookupWords() throws {
        let folder = NSTemporaryDirectory() + "vitals-lookup-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        #expect(FileManager.default.createFile(atPath: folder + "/tool", contents: Data("#!/bin/sh\n".utf8)))
        #expect(chmod(folder + "/tool", 0o644) == 0)
        #expect(ChildProcess.lookupFailure("tool", path: "/no/such:\(folder)") == "\(folder)/tool is not executable (Permission denied)")
        #expect(ChildProcess.lookupFailure("other", path: "/no/such:\(folder)") == "not found in PATH")
        // A folder that cannot be searched (only a user other than root meets one): said, as
        // posix_spawnp's "Permission denied" for a name in none of the folders misled.
        if geteuid() != 0 {
            #expect(chmod(folder, 0o600) == 0)
            defer { chmod(folder, 0o700) }
            #expect(ChildProcess.lookupFailure("tool", path: folder) == "not found in PATH (no permission to search \(folder))")
        }
    }

    @Test("stop() ends a running command as an interruption, not a timeout")
    func stop() throws {
        let child = try ChildProcess(["sleep", "30"], timeoutMs: 30_000, graceMs: 500)
        #expect(!child.pump())
        child.stop()
        let result = child.wait()
        #expect(result.stopped && !result.timedOut && result.termination == .signaled(SIGTERM))
    }

    @Test("a worker's setup: a descriptor of ours at its 5, SIGINT and SIGTERM blocked, our process group, another executable")
    func workerSetup() throws {
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]) }
        // The first argument is only a name: the executable says what runs.
        let setup = ChildProcess.Setup(
            descriptors: [(fds[1], 5)], blockedSignals: [SIGINT, SIGTERM], ownProcessGroup: false, executable: "/bin/sh")
        let child = try ChildProcess(["vitals-worker", "-c", #"echo through >&5; cut -d' ' -f5 /proc/$$/stat"#], setup: setup)
        close(fds[1])
        let result = child.wait()
        #expect(result.termination == .exited(0), "\(String(decoding: result.error, as: UTF8.self))")
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = read(fds[0], &buffer, buffer.count)
        #expect(count > 0 && String(decoding: buffer[0..<max(0, count)], as: UTF8.self) == "through\n")
        #expect(String(decoding: result.output, as: UTF8.self) == "\(getpgrp())\n")
        // The mask is read by grep itself (a shell sets its own).
        let masked = try ChildProcess.run(
            ["vitals-worker", "SigBlk", "/proc/self/status"],
            setup: ChildProcess.Setup(blockedSignals: [SIGINT, SIGTERM], executable: "/bin/grep"))
        let mask = String(decoding: masked.output, as: UTF8.self).split(separator: "\t").last?.trimmingCharacters(
            in: .whitespacesAndNewlines)
        // SIGINT is 2 and SIGTERM 15: bits 1 and 14.
        #expect(mask.flatMap { UInt64($0, radix: 16) } == 0x4002, "\(mask ?? "")")
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
