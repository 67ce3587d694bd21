import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Runs `--llm-command`: the prompt on its standard input, its standard output (trimmed) as the
/// digest. No shell is involved; the command line is split into words by `split`.
enum LLMCommand {
    /// Why the command gave no digest.
    struct Failure: Error, Equatable, CustomStringConvertible {
        /// In words, for the diagnostic.
        let description: String
    }

    /// The most output read from the command.
    static let maxOutputBytes = 1 << 20

    /// Splits a command line into words like a POSIX shell does, without running one:
    /// blanks separate words; '…' keeps everything inside literally; "…" keeps everything
    /// inside except that \" \\ \$ and \` stand for the character; outside quotes a backslash
    /// keeps the next character. Nothing is expanded: no variables, globs, pipes or redirections.
    static func split(_ line: String) throws(UsageError) -> [String] {
        var words: [String] = []
        var current = ""
        var inWord = false
        var iterator = Array(line).makeIterator()
        while let character = iterator.next() {
            switch character {
            case " ", "\t", "\n":
                if inWord {
                    words.append(current)
                    current = ""
                    inWord = false
                }
            case "'":
                inWord = true
                var closed = false
                while let next = iterator.next() {
                    if next == "'" {
                        closed = true
                        break
                    }
                    current.append(next)
                }
                if !closed { throw UsageError("--llm-command has an unclosed single quote") }
            case "\"":
                inWord = true
                var closed = false
                while let next = iterator.next() {
                    if next == "\"" {
                        closed = true
                        break
                    }
                    if next == "\\" {
                        guard let escaped = iterator.next() else { break }
                        if "\"\\$`".contains(escaped) {
                            current.append(escaped)
                        } else {
                            current.append("\\")
                            current.append(escaped)
                        }
                        continue
                    }
                    current.append(next)
                }
                if !closed { throw UsageError("--llm-command has an unclosed double quote") }
            case "\\":
                inWord = true
                if let next = iterator.next() { current.append(next) }
            default:
                inWord = true
                current.append(character)
            }
        }
        if inWord { words.append(current) }
        return words
    }

    /// Runs `words` with `prompt` on its standard input and returns its output, trimmed.
    /// Its standard error is ours. It runs in its own process group (`ChildProcess`), which is
    /// ended (SIGTERM, then SIGKILL two seconds later) when `timeout` passes, when it writes more
    /// than `maxOutputBytes`, or when we are interrupted.
    static func run(_ words: [String], prompt: String, timeoutMs: Int64) -> Result<String, Failure> {
        let child: ChildProcess
        do {
            child = try ChildProcess(
                words, input: Array(prompt.utf8), output: .capture(limit: maxOutputBytes),
                error: .inherit, timeoutMs: timeoutMs, graceMs: 2000)
        } catch {
            if error.program.isEmpty { return .failure(Failure(description: error.reason)) }
            return .failure(Failure(description: "cannot run '\(error.program)': \(error.reason)"))
        }
        var overflowed = false
        while !child.pump(waitMs: 1000, wakeFD: Signals.wakeFD) {
            if Signals.stopRequested { child.stop() }
            if child.outputOverflowed && !overflowed {
                overflowed = true
                child.stop()
            }
        }
        guard let result = child.result else { return .failure(Failure(description: "it ended unseen")) }
        if overflowed { return .failure(Failure(description: "it wrote more than 1 MiB")) }
        if result.timedOut {
            return .failure(Failure(description: "it gave no answer within --llm-timeout (\(Words.duration(timeoutMs)))"))
        }
        if result.stopped { return .failure(Failure(description: "interrupted")) }
        switch result.termination {
        case .signaled(let signal): return .failure(Failure(description: "it was killed by signal \(signal)"))
        case .exited(let status) where status != 0: return .failure(Failure(description: "it exited with status \(status)"))
        case .exited: break
        }
        let text = String(decoding: result.output, as: UTF8.self).trimmingSpaces
        if text.isEmpty { return .failure(Failure(description: "its output was empty")) }
        return .success(text)
    }
}
