import FixtureServer
import Foundation
import Testing
import VitalsKit

/// `n` sample lines of three monitors, a minute apart, hand-built.
private func sampleFile(_ n: Int) -> String {
    (0..<n).map { index in
        let monitor = ["api", "web", "db"][index % 3]
        let minute = index / 3
        return
            #"{"type":"sample","monitor":"\#(monitor)","at":"2026-01-05T\#(String(format: "%02d:%02d", minute / 60 % 24, minute % 60)):00.000Z","status":"up","latency_ms":\#(10 + index % 7),"message":"ok"}"#
    }.joined(separator: "\n") + "\n"
}

/// The erase that hides the line (a carriage return and ESC [ K).
private let eraseLine = "\r\u{1B}[K"

/// A size from 100 KB to 999 KB as the progress line writes it: kilobytes (of 1,000 bytes), whole.
private func kilobytes(_ size: Int) throws -> String {
    try #require((100_000..<999_500).contains(size), "a test file of \(size) bytes: make it 100 KB to 999 KB")
    return "\(Int((Double(size) / 1000).rounded())) KB"
}

@Suite("progress on a terminal, never in a pipe, never on standard output", .serialized, .hangGuard(minutes: 2))
struct ProgressTests {
    @Test("progress words: sizes, counts and times as people read them (hand-worked)")
    func words() {
        #expect(ProgressText.bytes(0) == "0 B")
        #expect(ProgressText.bytes(999) == "999 B")
        #expect(ProgressText.bytes(41_500) == "41.5 KB")
        #expect(ProgressText.bytes(1_020_000) == "1.02 MB")
        #expect(ProgressText.bytes(412_000_000) == "412 MB")
        #expect(ProgressText.bytes(999_600) == "1.00 MB")
        #expect(ProgressText.count(1_023_456) == "1,023,456")
        #expect(ProgressText.count(999) == "999")
        #expect(ProgressText.duration(seconds: 45.4) == "45 s")
        #expect(ProgressText.duration(seconds: 185) == "3 min 05 s")
        #expect(ProgressText.duration(seconds: 7800) == "2 h 10 min")
        // 250 MB of 1 GB in 10 s: 25 MB/s, 750 MB to go, 30 s left.
        #expect(
            ProgressText.reading(bytes: 250_000_000, of: 1_000_000_000, items: 12_345, noun: "records", seconds: 10)
                == "250 MB/1.00 GB 25%, 12,345 records, 25.0 MB/s, 30 s left")
        #expect(ProgressText.reading(bytes: 250_000_000, of: nil, items: 7, noun: "samples", seconds: 10) == "250 MB, 7 samples, 25.0 MB/s")
    }

    @Test("store-samples ingest from a file: progress on the terminal, to its last state, then erased; stdout as without it")
    func ingest() throws {
        let scratch = try ScratchDirectory()
        let file = try scratch.write("samples.ndjson", sampleFile(3000))
        let size = try #require(FileManager.default.attributesOfItem(atPath: file)[.size] as? Int)

        let onTerminal = try TerminalRun("store-samples", ["--db", scratch.path("a.db"), file]).finish()
        #expect(onTerminal.status == 0, "\(onTerminal.terminal)")
        let frames = progressFrames(onTerminal.terminal)
        #expect(!frames.isEmpty, "no progress on the terminal: \(onTerminal.terminal.debugDescription)")
        #expect(frames.allSatisfy { $0.hasPrefix("store-samples: ") })
        // The last frame: all of the file read and all 3,000 samples stored.
        let last = try #require(frames.last)
        let sizeWords = try kilobytes(size)  // 3,000 lines of about 130 bytes
        #expect(last.hasPrefix("store-samples: \(sizeWords)/\(sizeWords) 100%, 3,000 samples"), "\(last) (file of \(size) bytes)")
        #expect(
            onTerminal.terminal.hasSuffix(eraseLine), "the line is erased at the end: \(onTerminal.terminal.suffix(80).debugDescription)")
        #expect(!onTerminal.terminal.contains("\n"), "progress never writes a line of its own")

        // The same run with standard error a pipe: nothing on it. With --no-progress on a terminal: nothing.
        let piped = try run("store-samples", ["--db", scratch.path("b.db"), file])
        #expect(piped.status == 0 && piped.stderr.isEmpty, "\(piped.stderr.debugDescription)")
        let refused = try TerminalRun("store-samples", ["--db", scratch.path("c.db"), "--no-progress", file]).finish()
        #expect(refused.status == 0 && refused.terminal.isEmpty, "\(refused.terminal.debugDescription)")
        // --progress forces it into a pipe.
        let forced = try run("store-samples", ["--db", scratch.path("d.db"), "--progress", file])
        #expect(forced.status == 0)
        #expect(
            progressFrames(forced.stderr).last?.hasPrefix("store-samples: \(sizeWords)/\(sizeWords) 100%, 3,000 samples") == true,
            "\(forced.stderr.debugDescription)")

        // Standard output is byte for byte the same in every case (each run stored into a fresh database).
        #expect(piped.stdout.split(separator: "\n").count == 3000)
        #expect(onTerminal.stdout == piped.stdout)
        #expect(refused.stdout == piped.stdout)
        #expect(forced.stdout == piped.stdout)
    }

    @Test("store-samples ingest from a pipe shows no progress unless asked (the tool upstream shows how it goes)")
    func ingestFromPipe() throws {
        let scratch = try ScratchDirectory()
        let file = try scratch.write("samples.ndjson", sampleFile(300))
        // Standard input a pipe: cat feeds it, the terminal is store-samples' standard error.
        let auto = try TerminalRun("/bin/sh", ["-c", "cat \"$0\" | store-samples --db \"$1\" -q", file, scratch.path("a.db")]).finish()
        #expect(auto.status == 0 && auto.terminal.isEmpty, "\(auto.terminal.debugDescription)")
        let forced = try TerminalRun("/bin/sh", ["-c", "cat \"$0\" | store-samples --db \"$1\" -q --progress", file, scratch.path("b.db")])
            .finish()
        #expect(forced.status == 0)
        // No total to read against: bytes and samples only.
        #expect(progressFrames(forced.terminal).last?.hasPrefix("store-samples: ") == true)
        #expect(progressFrames(forced.terminal).last?.contains(", 300 samples") == true, "\(forced.terminal.debugDescription)")
        #expect(progressFrames(forced.terminal).allSatisfy { !$0.contains("%") && !$0.contains("left") })
    }

    @Test("a diagnostic goes above the progress line, whole, and the line comes back after it")
    func diagnosticAbove() throws {
        let scratch = try ScratchDirectory()
        var lines = sampleFile(600).split(separator: "\n").map(String.init)
        lines[299] = #"{"type":"sample","monitor":"api","status":"up"}"#
        let file = try scratch.write("samples.ndjson", lines.joined(separator: "\n") + "\n")
        let result = try TerminalRun("store-samples", ["--db", scratch.path("a.db"), "-q", "--progress", file]).finish()
        #expect(result.status == 2)
        // The progress line is erased, the diagnostic written on a line of its own, then the progress line again.
        let diagnostic = try #require(result.terminal.range(of: "store-samples: \(file):300: "))
        #expect(result.terminal[..<diagnostic.lowerBound].hasSuffix(eraseLine), "\(result.terminal.debugDescription)")
        let after = result.terminal[diagnostic.upperBound...]
        let newline = try #require(after.firstIndex(of: "\n"))
        #expect(
            after[after.index(after: newline)...].hasPrefix("\rstore-samples: "),
            "the line is drawn again: \(after.prefix(200).debugDescription)")
        #expect(progressFrames(result.terminal).last?.contains(", 599 samples") == true)
    }

    @Test("snapshot-delta take: the export's bytes and records on the terminal; stdout the same without (but the snapshot's id)")
    func take() throws {
        let scratch = try ScratchDirectory()
        let heart = "HKQuantityTypeIdentifierHeartRate"
        let file = try scratch.write("records.ndjson", HealthLines.records(heart, 900).joined(separator: "\n") + "\n")
        let device = try scratch.write("device-id", "0d6d3c38-1d1b-4c43-9f55-0a3c5f2c1c1e\n")
        func arguments(_ db: String, _ extra: [String] = []) -> [String] {
            ["--db", scratch.path(db), "take", "--now", "2026-01-11T00:00:00Z", "--device-id-file", device] + extra + [file]
        }
        let onTerminal = try TerminalRun("snapshot-delta", arguments("a.db")).finish()
        #expect(onTerminal.status == 0, "\(onTerminal.terminal)")
        let frames = progressFrames(onTerminal.terminal)
        let size = try #require(FileManager.default.attributesOfItem(atPath: file)[.size] as? Int)
        let sizeWords = try kilobytes(size)  // 900 lines of about 200 bytes
        #expect(frames.last?.hasPrefix("snapshot-delta: \(sizeWords)/\(sizeWords) 100%, 900 records") == true, "\(frames)")
        #expect(frames.first?.hasPrefix("snapshot-delta: ") == true)
        #expect(onTerminal.terminal.hasSuffix(eraseLine))
        let piped = try run("snapshot-delta", arguments("b.db"))
        let refused = try TerminalRun("snapshot-delta", arguments("c.db", ["--no-progress"])).finish()
        #expect(
            piped.status == 0 && piped.stderr.isEmpty && refused.terminal.isEmpty, "\(piped.stderr)\(refused.terminal.debugDescription)")
        let forced = try run("snapshot-delta", arguments("d.db", ["--progress"]))
        #expect(progressFrames(forced.stderr).last?.hasPrefix("snapshot-delta: \(sizeWords)/\(sizeWords) 100%, 900 records") == true)
        // Each take names its snapshot with a new random id; every other byte is the same.
        func masked(_ text: String) -> String {
            text.replacingOccurrences(of: #""id":"[0-9a-f-]{36}""#, with: #""id":"*""#, options: .regularExpression)
        }
        #expect(!piped.stdout.isEmpty)
        #expect(masked(onTerminal.stdout) == masked(piped.stdout))
        #expect(masked(refused.stdout) == masked(piped.stdout))
        #expect(masked(forced.stdout) == masked(piped.stdout))
        #expect(
            try run("snapshot-delta", ["--db", scratch.path("a.db"), "list", "--progress"]).status == 64, "--progress applies to take only")
    }

    @Test("probe-http once through: the probes done and their statuses; samples written to the same terminal erase the line first")
    func probeOnce() throws {
        let server = try FixtureServer()
        let scratch = try ScratchDirectory()
        let targets = try scratch.write("targets.txt", "\(server.baseURL)/ok\n\(server.baseURL)/status/503\n\(server.baseURL)/ok?again\n")
        let result = try TerminalRun("probe-http", ["--agent", "", targets], stdoutOnTerminal: true).finish()
        #expect(result.status == 0)
        let frames = progressFrames(result.terminal)
        #expect(frames.first == "probe-http: 0 of 3 probes", "\(frames)")
        #expect(frames.last == "probe-http: 3 of 3 probes: 2 up, 1 down", "\(frames)")
        // Every sample starts on a clean line: after a newline (the sample before it) or after the line was erased.
        let samples = result.terminal.components(separatedBy: #"{"type":"sample""#)
        #expect(samples.count == 4, "\(result.terminal.debugDescription)")
        for before in samples.dropLast() {
            #expect(
                before.hasSuffix("\n") || before.hasSuffix(eraseLine),
                "a sample written over the status line: \(before.suffix(60).debugDescription)")
        }
        #expect(result.terminal.hasSuffix(eraseLine) || result.terminal.hasSuffix("\n"))
        // Without the frames, the terminal got exactly the records (the run's round marks and its
        // samples), whole lines.
        let clean = result.terminal.replacingOccurrences(of: "\r[^\r\n]*\u{1B}\\[K", with: "", options: .regularExpression)
        #expect(
            clean.split(separator: "\n").count == 5 && clean.split(separator: "\n").allSatisfy { $0.hasPrefix("{") && $0.hasSuffix("}") },
            "\(clean.debugDescription)")
    }

    @Test("probe-http --watch: a one-line status of each monitor's latest sample until SIGINT, then erased")
    func watch() throws {
        let server = try FixtureServer()
        let scratch = try ScratchDirectory()
        let targets = try scratch.write("targets.txt", "\(server.baseURL)/ok\n\(server.baseURL)/status/503\n")
        let run = try TerminalRun("probe-http", ["--watch", "--interval", "1s", "--agent", "", targets])
        // Two rounds or more: both monitors seen, four samples or more written.
        let status = try Regex("^probe-http: watching 2 monitors: 1 up, 1 down; ([0-9]+) probes in [0-9]+ s; ")
        let seen = run.wait { terminal in
            progressFrames(terminal).contains { frame in
                (try? status.firstMatch(in: frame)).flatMap { $0 }.flatMap { $0.output[1].substring }.flatMap { Int($0) }.map { $0 >= 4 }
                    ?? false
            }
        }
        let result = run.finish(signal: SIGINT)
        #expect(seen, "\(progressFrames(result.terminal))")
        #expect(result.status == 130)
        #expect(result.terminal.hasSuffix(eraseLine), "\(result.terminal.suffix(100).debugDescription)")
        // Standard output holds samples and the rounds' marks only, each a whole JSON line.
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        let samples = lines.filter { $0.hasPrefix(#"{"type":"sample""#) }
        #expect(
            samples.count >= 4
                && lines.allSatisfy { ($0.hasPrefix(#"{"type":"sample""#) || $0.hasPrefix(#"{"type":"round_"#)) && $0.hasSuffix("}") },
            "\(result.stdout.debugDescription)")
        #expect(!result.stdout.contains("\r") && !result.stdout.contains("\u{1B}"))
    }

    @Test("probe-ping: the same status line, forced into a pipe with --progress; none without")
    func ping() throws {
        let server = try FixtureServer()
        let target = "tcp://127.0.0.1:\(server.port)\n"
        let forced = try run("probe-ping", ["--progress", "--agent", ""], stdin: target)
        #expect(forced.status == 0)
        #expect(progressFrames(forced.stderr).last == "probe-ping: 1 of 1 probes: 1 up", "\(forced.stderr.debugDescription)")
        let plain = try run("probe-ping", ["--agent", ""], stdin: target)
        #expect(plain.stderr.isEmpty)
        #expect(try plain.records().count == 1 && forced.records().count == 1)
    }
}
