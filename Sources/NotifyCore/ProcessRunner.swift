#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import VitalsKit

/// A command started for a delivery: no shell, its input from an unlinked temporary file,
/// its standard error kept (the first 2 KiB) for the message. Polled, never waited on.
final class RunningProcess {
    let pid: pid_t
    private let errorFD: Int32
    private(set) var outcome: ProcessOutcome?
    private var killedAt: Int64?

    private init(pid: pid_t, errorFD: Int32) {
        self.pid = pid
        self.errorFD = errorFD
    }

    deinit {
        if outcome == nil {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
        close(errorFD)
    }

    /// Starts `request`; a command that cannot start comes back finished, with the reason.
    static func start(_ request: ProcessRequest, environment: [String: String]) -> RunningProcess {
        func failed(_ words: String) -> RunningProcess {
            let process = RunningProcess(pid: -1, errorFD: -1)
            process.outcome = ProcessOutcome(exitStatus: nil, error: words)
            return process
        }
        guard let inputFD = temporaryFile(request.input), let errorFD = temporaryFile([]) else {
            return failed("cannot make a temporary file: \(String(cString: strerror(errno)))")
        }
        defer { close(inputFD) }
        #if canImport(Darwin)
        var actions: posix_spawn_file_actions_t?
        var attributes: posix_spawnattr_t?
        #else
        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, inputFD, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, errorFD, 2)
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // The child starts with default signal handling and nothing blocked, whatever we ignore.
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for number in [SIGPIPE, SIGINT, SIGTERM, SIGXFSZ] { sigaddset(&defaults, number) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        var merged = environment
        for (key, value) in request.environment { merged[key] = value }
        let arguments = [request.executable] + request.arguments
        let environmentLines = merged.map { "\($0.key)=\($0.value)" }
        var pid: pid_t = 0
        let code = withCStrings(arguments) { argv in
            withCStrings(environmentLines) { envp in
                request.executable.contains("/")
                    ? posix_spawn(&pid, request.executable, &actions, &attributes, argv, envp)
                    : posix_spawnp(&pid, request.executable, &actions, &attributes, argv, envp)
            }
        }
        guard code == 0 else {
            close(errorFD)
            return failed("cannot run \(request.executable): \(String(cString: strerror(code)))")
        }
        return RunningProcess(pid: pid, errorFD: errorFD)
    }

    /// Checks whether it ended (without blocking); kills it once `nowMs` passes `deadlineMs`.
    @discardableResult
    func poll(nowMs: Int64, deadlineMs: Int64) -> Bool {
        if outcome != nil { return true }
        var status: Int32 = 0
        let result = waitpid(pid, &status, WNOHANG)
        if result == pid {
            let stderrText = readError()
            if status & 0x7F == 0 {
                let exit = Int((status >> 8) & 0xFF)
                outcome = ProcessOutcome(exitStatus: exit, error: stderrText)
            } else {
                let signal = Int(status & 0x7F)
                let words = killedAt != nil ? "timed out, stopped" : "killed by signal \(signal)"
                outcome = ProcessOutcome(exitStatus: nil, error: words + (stderrText.map { ": " + $0 } ?? ""))
            }
            return true
        }
        if nowMs >= deadlineMs {
            if let killedAt {
                if nowMs - killedAt > 1000 { kill(pid, SIGKILL) }
            } else {
                killedAt = nowMs
                kill(pid, SIGTERM)
            }
        }
        return false
    }

    private func readError() -> String? {
        lseek(errorFD, 0, SEEK_SET)
        var buffer = [UInt8](repeating: 0, count: 2048)
        let count = read(errorFD, &buffer, buffer.count)
        guard count > 0 else { return nil }
        let text = String(decoding: buffer[0..<count], as: UTF8.self)
            .split(separator: "\n").map { String($0).trimmingSpaces }.filter { !$0.isEmpty }.joined(separator: " / ")
        return text.isEmpty ? nil : String(text.prefix(300))
    }

    private static func temporaryFile(_ contents: [UInt8]) -> Int32? {
        let directory = ProcessEnvironment.temporaryDirectory
        var template = Array((directory + "/vitals-notify-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { return nil }
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        if !contents.isEmpty {
            let ok = contents.withUnsafeBytes { Streams.writeAll(fd, $0) }
            guard ok else { close(fd); return nil }
            lseek(fd, 0, SEEK_SET)
        }
        return fd
    }
}

/// Where temporary files go: $TMPDIR, else /tmp.
enum ProcessEnvironment {
    static var temporaryDirectory: String {
        if let value = getenv("TMPDIR"), value.pointee != 0 { return String(cString: value) }
        return "/tmp"
    }
}

/// Calls `body` with a NULL-terminated C array of the strings.
private func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
    var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
    pointers.append(nil)
    defer { for pointer in pointers { free(pointer) } }
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}
