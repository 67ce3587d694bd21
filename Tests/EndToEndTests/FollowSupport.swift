import Foundation
import Testing
import VitalsKit

#if canImport(Glibc)
    import Glibc
#endif

/// A batch `store-samples follow` wrote: its round, the samples between its marks (each as
/// `monitor@at`), and whether its `round_end` came (a run stopped mid-batch leaves one without).
struct FollowedBatch: Equatable {
    var round: String
    var samples: [String]
    var ended: Bool
}

/// Reads what `store-samples follow` wrote into batches, holding each to the round-mark contract:
/// a `round_start`, the batch's samples, a `round_end` of the same round whose `samples` counts
/// them, `tool` store-samples on both; ticks (checked for their fields) in between are skipped.
/// A batch left open at the end of `lines` is returned with `ended` false.
func followedBatches(_ lines: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> [FollowedBatch] {
    var batches: [FollowedBatch] = []
    var open: FollowedBatch?
    for line in lines {
        guard case .object(let record) = try JSONParser.parse(line) else { throw TestFailure("not an object: \(line)") }
        switch record.string("type") {
        case "round_start"?:
            #expect(open == nil, "a round_start inside a batch: \(line)", sourceLocation: sourceLocation)
            #expect(record.string("tool") == "store-samples", sourceLocation: sourceLocation)
            let round = record.string("round") ?? ""
            #expect(round.count == 16 && UInt64(round, radix: 16) != nil, "16 hexadecimal digits: \(round)", sourceLocation: sourceLocation)
            if let cut = open { batches.append(cut) }
            open = FollowedBatch(round: round, samples: [], ended: false)
        case "round_end"?:
            #expect(open?.round == record.string("round"), "\(line) ends the round it started", sourceLocation: sourceLocation)
            #expect(record.int("samples") == open?.samples.count, "\(line) counts its samples", sourceLocation: sourceLocation)
            #expect(record.string("started_at") != nil && record.string("tool") == "store-samples", sourceLocation: sourceLocation)
            if var batch = open {
                batch.ended = true
                batches.append(batch)
            }
            open = nil
        case "tick"?:
            #expect(record.fields.map(\.key) == ["type", "at", "tool"], "\(line)", sourceLocation: sourceLocation)
            #expect(
                record.string("tool") == "store-samples" && Timestamp.parse(record.string("at") ?? "") != nil,
                sourceLocation: sourceLocation)
        case "sample"?:
            #expect(open != nil, "a sample outside a batch: \(line)", sourceLocation: sourceLocation)
            open?.samples.append("\(record.string("monitor") ?? "?")@\(record.string("at") ?? "?")")
        default:
            Issue.record("follow wrote a record of another type: \(line)", sourceLocation: sourceLocation)
        }
    }
    if let cut = open { batches.append(cut) }
    return batches
}

/// `monitor@at` for the sample of `sample(monitor, minute:)`.
func followKey(_ monitor: String, minute: Int, second: Int = 0) -> String {
    monitor + "@" + String(format: "2026-01-27T%02d:%02d:%02d.000Z", 10 + minute / 60, minute % 60, second)
}

/// A long-lived tool started with its standard output on a pipe read line by line with a
/// deadline (and its standard error in a file), stopped by a signal or kill -9.
final class StreamingTool {
    let pid: pid_t
    private let output: Int32
    private var buffered: [UInt8] = []
    let errorFile: String

    /// Starts `tool` with `arguments`, its standard error into `errorFile`.
    init(_ tool: String, _ arguments: [String], errorFile: String, environment: [String: String] = [:]) throws {
        var pipe: [Int32] = [-1, -1]
        guard let pipe2 = GlibcExtras.pipe2, pipe2(&pipe, O_CLOEXEC) == 0 else { throw TestFailure("pipe2: \(errno)") }
        let input = open("/dev/null", O_RDONLY | O_CLOEXEC)
        let errors = open(errorFile, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        defer {
            close(input)
            close(errors)
            close(pipe[1])
        }
        pid = try spawnClean(
            [Binaries.path(tool)] + arguments, environment: toolEnvironment(environment), descriptors: (input, pipe[1], errors))
        output = pipe[0]
        self.errorFile = errorFile
    }

    /// The next line, or nil at the end of the output or once `deadline` passed.
    func line(before deadline: Date) -> String? {
        while true {
            if let newline = buffered.firstIndex(of: 0x0A) {
                let line = String(decoding: buffered[..<newline], as: UTF8.self)
                buffered.removeFirst(newline + 1)
                return line
            }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return nil }
            var fds = [pollfd(fd: output, events: Int16(POLLIN), revents: 0)]
            guard poll(&fds, 1, Int32(min(left, 1) * 1000) + 1) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let count = chunk.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return nil }
            buffered += chunk[0..<count]
        }
    }

    /// Lines until `enough` says the lines so far suffice, or the deadline; all of them.
    func lines(within seconds: Double, until enough: ([String]) -> Bool) -> [String] {
        let deadline = Date().addingTimeInterval(seconds)
        var lines: [String] = []
        while !enough(lines), let line = line(before: deadline) { lines.append(line) }
        return lines
    }

    /// Sends `signal` and waits for the end; the exit status (or 128 + the signal that ended it).
    @discardableResult
    func stop(_ signal: Int32) -> Int32 {
        kill(pid, signal)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        close(output)
        return (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }

    /// What it wrote on standard error.
    var stderr: String { (try? String(contentsOfFile: errorFile, encoding: .utf8)) ?? "" }
}

/// The lines `tool` writes until every sample of `expected` (keys `monitor@at`) is in `seen`, or
/// `seconds` pass; each sample read is added to `seen`.
func linesUntilSeen(_ tool: StreamingTool, _ expected: Set<String>, seen: inout Set<String>, within seconds: Double) throws -> [String] {
    var lines: [String] = []
    let deadline = Date().addingTimeInterval(seconds)
    while !expected.isSubset(of: seen), let line = tool.line(before: deadline) {
        lines.append(line)
        if line.contains(#""type":"sample""#), let object = try JSONParser.parse(line).objectValue {
            seen.insert("\(object.string("monitor") ?? "?")@\(object.string("at") ?? "?")")
        }
    }
    return lines
}

/// Round marks around `lines`, so an ingest commits them as one batch at the `round_end`.
func oneRound(_ lines: [String], _ name: String) -> String {
    ([#"{"type":"round_start","round":"\#(name)"}"#] + lines + [#"{"type":"round_end","round":"\#(name)"}"#])
        .joined(separator: "\n") + "\n"
}
