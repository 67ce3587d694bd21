#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import VitalsKit

/// Runs `--llm-command`: the prompt on its standard input, its standard output (trimmed) as the
/// digest. No shell is involved; the command line is split into words by `split`.
public enum LLMCommand {
    /// Why the command gave no digest.
    public struct Failure: Error, Equatable, CustomStringConvertible {
        /// In words, for the diagnostic.
        public let description: String
    }

    /// The most output read from the command.
    public static let maxOutputBytes = 1 << 20

    /// Splits a command line into words like a POSIX shell does, without running one:
    /// blanks separate words; '…' keeps everything inside literally; "…" keeps everything
    /// inside except that \" \\ \$ and \` stand for the character; outside quotes a backslash
    /// keeps the next character. Nothing is expanded: no variables, globs, pipes or redirections.
    public static func split(_ line: String) throws(UsageError) -> [String] {
        var words: [String] = []
        var current = ""
        var inWord = false
        var iterator = Array(line).makeIterator()
        while let character = iterator.next() {
            switch character {
            case " ", "\t", "\n":
                if inWord { words.append(current); current = ""; inWord = false }
            case "'":
                inWord = true
                var closed = false
                while let next = iterator.next() {
                    if next == "'" { closed = true; break }
                    current.append(next)
                }
                if !closed { throw UsageError("--llm-command has an unclosed single quote") }
            case "\"":
                inWord = true
                var closed = false
                while let next = iterator.next() {
                    if next == "\"" { closed = true; break }
                    if next == "\\" {
                        guard let escaped = iterator.next() else { break }
                        if "\"\\$`".contains(escaped) { current.append(escaped) } else { current.append("\\"); current.append(escaped) }
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
    /// Its standard error is ours. It runs in its own process group, which is killed
    /// (SIGTERM, then SIGKILL two seconds later) when `timeout` passes or we are interrupted.
    public static func run(_ words: [String], prompt: String, timeoutMs: Int64) -> Result<String, Failure> {
        guard let program = words.first else { return .failure(Failure(description: "the command is empty")) }
        var input: [Int32] = [-1, -1]
        var output: [Int32] = [-1, -1]
        guard pipe(&input) == 0 else { return .failure(Failure(description: "cannot make a pipe: \(errorText())")) }
        guard pipe(&output) == 0 else {
            close(input[0]); close(input[1])
            return .failure(Failure(description: "cannot make a pipe: \(errorText())"))
        }
        for fd in [input[1], output[0]] {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        #if canImport(Glibc)
        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        #else
        var actions: posix_spawn_file_actions_t?
        var attributes: posix_spawnattr_t?
        #endif
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_adddup2(&actions, input[0], 0)
        posix_spawn_file_actions_adddup2(&actions, output[1], 1)
        posix_spawn_file_actions_addclose(&actions, input[0])
        posix_spawn_file_actions_addclose(&actions, output[1])
        posix_spawnattr_init(&attributes)
        // Its own process group; default signal actions (we ignore SIGPIPE) and an empty mask.
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGINT, SIGTERM] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        var pid: pid_t = 0
        let cArguments = words.map { strdup($0) } + [nil]
        defer { for argument in cArguments { free(argument) } }
        let spawned = posix_spawnp(&pid, program, &actions, &attributes, cArguments, environ)
        posix_spawn_file_actions_destroy(&actions)
        posix_spawnattr_destroy(&attributes)
        close(input[0])
        close(output[1])
        guard spawned == 0 else {
            close(input[1]); close(output[0])
            return .failure(Failure(description: "cannot run '\(program)': \(String(cString: strerror(spawned)))"))
        }

        let prompt = Array(prompt.utf8)
        var written = 0
        var inputFD: Int32 = input[1]
        var collected: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let deadline = Clock.monotonicMilliseconds() + timeoutMs
        var problem: String?
        if prompt.isEmpty { close(inputFD); inputFD = -1 }
        outer: while true {
            let remaining = deadline - Clock.monotonicMilliseconds()
            if remaining <= 0 { problem = "it gave no answer within --llm-timeout (\(Words.duration(timeoutMs)))"; break }
            if Signals.stopRequested { problem = "interrupted"; break }
            var fds = [pollfd(fd: output[0], events: Int16(POLLIN), revents: 0)]
            if inputFD >= 0 { fds.append(pollfd(fd: inputFD, events: Int16(POLLOUT), revents: 0)) }
            if Signals.wakeFD >= 0 { fds.append(pollfd(fd: Signals.wakeFD, events: Int16(POLLIN), revents: 0)) }
            let ready = poll(&fds, nfds_t(fds.count), Int32(min(remaining, 1000)))
            if ready < 0 && errno != EINTR { problem = "poll failed: \(errorText())"; break }
            if ready <= 0 { continue }
            if inputFD >= 0, fds[1].revents != 0 {
                let count = prompt.withUnsafeBytes { write(inputFD, $0.baseAddress! + written, prompt.count - written) }
                if count > 0 { written += count }
                if count < 0 && errno != EAGAIN && errno != EINTR || written == prompt.count {
                    // Done, or the command stopped reading (EPIPE): it may still answer.
                    close(inputFD)
                    inputFD = -1
                }
            }
            if fds[0].revents != 0 {
                while true {
                    let count = chunk.withUnsafeMutableBytes { read(output[0], $0.baseAddress!, $0.count) }
                    if count > 0 {
                        collected.append(contentsOf: chunk[0..<count])
                        if collected.count > maxOutputBytes { problem = "it wrote more than 1 MiB"; break outer }
                        continue
                    }
                    if count == 0 { break outer }
                    if errno == EINTR { continue }
                    break
                }
            }
        }
        if inputFD >= 0 { close(inputFD) }
        close(output[0])
        var status: Int32 = 0
        if problem != nil {
            kill(-pid, SIGTERM)
            let graceEnd = Clock.monotonicMilliseconds() + 2000
            while waitpid(pid, &status, WNOHANG) == 0 {
                if Clock.monotonicMilliseconds() > graceEnd {
                    kill(-pid, SIGKILL)
                    _ = waitpid(pid, &status, 0)
                    break
                }
                var pause = timespec(tv_sec: 0, tv_nsec: 10_000_000) // polling a child's exit; there is no fd to wait on
                nanosleep(&pause, nil)
            }
            return .failure(Failure(description: problem!))
        }
        // Its output ended; give it until the deadline to exit.
        while waitpid(pid, &status, WNOHANG) == 0 {
            if Clock.monotonicMilliseconds() > deadline {
                kill(-pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
                return .failure(Failure(description: "it did not exit within --llm-timeout (\(Words.duration(timeoutMs)))"))
            }
            var pause = timespec(tv_sec: 0, tv_nsec: 5_000_000) // polling a child's exit; there is no fd to wait on
            nanosleep(&pause, nil)
        }
        if (status & 0x7f) != 0 { return .failure(Failure(description: "it was killed by signal \(status & 0x7f)")) }
        let exitCode = (status >> 8) & 0xff
        if exitCode != 0 { return .failure(Failure(description: "it exited with status \(exitCode)")) }
        let text = String(decoding: collected, as: UTF8.self).trimmingSpaces
        if text.isEmpty { return .failure(Failure(description: "its output was empty")) }
        return .success(text)
    }

    private static func errorText() -> String { String(cString: strerror(errno)) }
}
