import Foundation
import Testing
import VitalsKit

/// notify's state under a backlog of quiet rounds (a follower catching up): written at most once
/// a second while input keeps coming, and whole once the input pauses, before the input ends.
@Suite("notify: the state under a backlog of quiet rounds", .hangGuard(minutes: 2))
struct NotifyStateSaveTests {
    @Test("300 quiet rounds at once: the state holds the last one as soon as the input pauses; after kill -9 a rerun knows it was up")
    func backlogSavedAtThePause() throws {
        let scratch = try ScratchDirectory()
        let state = scratch.path("notify.json")
        var input: [Int32] = [-1, -1]
        guard let pipe2 = GlibcExtras.pipe2, pipe2(&input, O_CLOEXEC) == 0 else { throw TestFailure("pipe2: \(errno)") }
        let output = open(scratch.path("out.ndjson"), O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        let errors = open(scratch.path("err.txt"), O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        let pid = try spawnClean(
            [Binaries.path("notify"), "--state", state], environment: toolEnvironment(), descriptors: (input[0], output, errors))
        close(input[0])
        close(output)
        close(errors)
        var stopped = false
        defer {
            if !stopped {
                kill(pid, SIGKILL)
                var status: Int32 = 0
                waitpid(pid, &status, 0)
            }
            close(input[1])
        }
        // Each monitor its own marked round, every one up: nothing to tell, 300 rounds to save.
        var text = ""
        for i in 0..<300 {
            let monitor = String(format: "m%03d", i)
            let at = String(format: "2026-01-27T%02d:%02d:00Z", 10 + i / 60, i % 60)
            text += #"{"type":"round_start","round":"r\#(i)"}"# + "\n"
            text += #"{"type":"sample","monitor":"\#(monitor)","at":"\#(at)","status":"up","latency_ms":12}"# + "\n"
            text += #"{"type":"round_end","round":"r\#(i)"}"# + "\n"
        }
        let bytes = Array(text.utf8)
        var written = 0
        while written < bytes.count {
            let n = bytes[written...].withUnsafeBytes { write(input[1], $0.baseAddress, $0.count) }
            guard n > 0 else { throw TestFailure("write: \(errno)") }
            written += n
        }
        // The input stays open: only the pause can have saved the last round.
        let deadline = Date().addingTimeInterval(30)
        var knows = false
        while !knows, Date() < deadline {
            if let data = FileManager.default.contents(atPath: state), let parsed = try? JSONParser.parse(Array(data)),
                let monitors = parsed.objectValue?["monitors"]?.objectValue
            {
                knows = monitors["m299"] != nil && monitors.fields.count == 300
            }
            if !knows { usleep(50_000) }
        }
        #expect(knows, "the state did not come to hold the 300 monitors while the input was open")
        #expect(waitpid(pid, nil, WNOHANG) == 0, "notify ended, but its input is still open")
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        stopped = true
        // A rerun after the kill: m299 was up, so its down is a change from up, not first news.
        let rerun = try run(
            "notify", ["--state", state],
            stdin: #"{"type":"sample","monitor":"m299","at":"2026-01-27T15:00:00Z","status":"down","latency_ms":null}"# + "\n")
        #expect(rerun.status == 0, "\(rerun.stderr)")
        let notification = try #require(try rerun.records().first { $0.string("type") == "notification" })
        #expect(notification.string("previous_status") == "up" && notification.string("status") == "down", "\(rerun.stdout)")
    }

    @Test("a run that finds the state locked by another says so, waits, and goes on once the other ends")
    func lockHeldIsSaid() throws {
        let scratch = try ScratchDirectory()
        let state = scratch.path("notify.json")
        // The holder: flock(1) takes the lock, says so, and keeps it until its input ends.
        let holder = try Spawned(["/usr/bin/flock", "-x", state + ".lock", "-c", "echo held; cat >/dev/null"], input: .pipe)
        #expect(String(decoding: holder.output!.availableData, as: UTF8.self) == "held\n")
        let errors = scratch.path("err.txt")
        let sample = #"{"type":"sample","monitor":"web","at":"2026-02-01T11:00:00Z","status":"down"}"#
        let waiting = try Spawned(
            ["/bin/sh", "-c", "printf '%s\\n' \"$1\" | \"$2\" --state \"$3\"", "sh", sample, Binaries.path("notify"), state],
            output: .pipe, error: .file(errors))
        var said = ""
        for _ in 0..<400 where !said.contains("waiting") {
            usleep(25_000)
            said = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
        }
        #expect(
            said == "notify: another notify run holds the state \(state) (its lock, \(state).lock); waiting for it to end\n", "\(said)")
        #expect(waiting.isRunning, "it waits while the lock is held")
        try holder.input!.close()
        #expect(holder.wait() == 0)
        #expect(waiting.wait() == 0)
        #expect(String(decoding: waiting.output!.readDataToEndOfFile(), as: UTF8.self).contains(#""event":"down""#))
        #expect(FileManager.default.fileExists(atPath: state))
    }
}
