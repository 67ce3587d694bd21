#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Unsafe pointers here are C interop (posix_spawn(3) takes C string arrays; read(2) and write(2) of the pipes): kept.

/// A command run without a shell: its argv as given, optional bytes on its standard input,
/// its standard output and error captured up to a cap, a deadline after which its whole
/// process group is stopped (SIGTERM, then SIGKILL after a grace period), and how it ended.
///
/// It runs in a process group of its own, so a timeout or an interruption also ends whatever
/// it started. Either drive it with `pump(waitMs:)` beside other work (notify polls many at
/// once), or call `run` to wait for it.
public final class ChildProcess {
    /// What becomes of one of the command's output streams.
    public enum Output: Sendable, Equatable {
        /// Thrown away (`/dev/null`).
        case discard
        /// Shared with ours.
        case inherit
        /// Kept, up to this many bytes; the rest is read and dropped so the command never blocks.
        case capture(limit: Int)
    }

    /// How it ended.
    public enum Termination: Sendable, Equatable {
        /// It exited with this status.
        case exited(Int32)
        /// A signal ended it.
        case signaled(Int32)
    }

    /// How it starts beyond its streams; the defaults suit a command run for its output. A
    /// server's worker (`Serving`'s supervisor) sets more descriptors, blocked signals, its own
    /// executable, and stays in our process group.
    public struct Setup: Sendable {
        /// Ours and the descriptor each becomes in the child (ours at 3 becomes its 3 as it is:
        /// the caller clears close-on-exec on it then).
        public var descriptors: [(ours: Int32, its: Int32)]
        /// Signals it starts with blocked (otherwise nothing is).
        public var blockedSignals: [Int32]
        /// A process group of its own, which a timeout or a stop ends whole; otherwise ours, and
        /// the signals go to it alone.
        public var ownProcessGroup: Bool
        /// The file to run when it is not the first argument (`/proc/self/exe`).
        public var executable: String?

        public init(
            descriptors: [(ours: Int32, its: Int32)] = [], blockedSignals: [Int32] = [], ownProcessGroup: Bool = true,
            executable: String? = nil
        ) {
            self.descriptors = descriptors
            self.blockedSignals = blockedSignals
            self.ownProcessGroup = ownProcessGroup
            self.executable = executable
        }
    }

    /// Why it could not be started.
    public struct StartFailure: Error, Equatable, CustomStringConvertible {
        /// The program, as given.
        public let program: String
        /// The system's words (`No such file or directory`).
        public let reason: String
        /// `cannot run PROGRAM: REASON`.
        public var description: String { "cannot run \(program): \(reason)" }
    }

    /// Why a name looked up in `path` (posix_spawnp searches the caller's PATH) could not start,
    /// in better words than its errno: it reports EACCES, "Permission denied", when any folder of
    /// PATH could not be searched, even for a name in none of them.
    static func lookupFailure(_ program: String, path: String) -> String {
        var unsearchable: [String] = []
        for entry in path.split(separator: ":", omittingEmptySubsequences: false) {
            let folder = entry.isEmpty ? "." : String(entry)
            var info = stat()
            if stat(folder + "/" + program, &info) == 0 {
                if info.st_mode & S_IFMT == S_IFREG { return "\(folder)/\(program) is not executable (Permission denied)" }
            } else if errno == EACCES {
                unsearchable.append(folder)
            }
        }
        guard !unsearchable.isEmpty else { return "not found in PATH" }
        return "not found in PATH (no permission to search \(unsearchable.joined(separator: ", ")))"
    }

    /// Everything known once it ended.
    public struct Result: Sendable, Equatable {
        /// Its exit status or signal.
        public var termination: Termination
        /// Its standard output, up to the cap.
        public var output: [UInt8]
        /// Its standard error, up to the cap.
        public var error: [UInt8]
        /// Standard output went past the cap (the part kept is `output`).
        public var outputTruncated: Bool
        /// Standard error went past the cap.
        public var errorTruncated: Bool
        /// The deadline passed and it was stopped.
        public var timedOut: Bool
        /// It was stopped by `stop()` (an interruption), not by the deadline.
        public var stopped: Bool

        /// It exited with status 0, on its own.
        public var succeeded: Bool { termination == .exited(0) && !timedOut && !stopped }
    }

    /// The process id (and its process group's, unless `Setup.ownProcessGroup` was false).
    public let pid: pid_t
    /// Where its signals go: its process group, or the process alone.
    private let signalTarget: pid_t
    /// Standard output went past its cap so far (while it runs: a caller may stop it then).
    public var outputOverflowed: Bool { outputTruncated }
    /// Set once it ended and was reaped.
    public private(set) var result: Result?

    private var inputFD: Int32
    private var input: [UInt8]
    private var written = 0
    private var outputFD: Int32
    private var errorFD: Int32
    private let outputLimit: Int
    private let errorLimit: Int
    private var output: [UInt8] = []
    private var error: [UInt8] = []
    private var outputTruncated = false
    private var errorTruncated = false
    private let deadline: Int64?
    private let graceMs: Int64
    private var terminatedAt: Int64?
    private var timedOut = false
    private var stopped = false

    /// Starts `arguments` (the program first: a path, or a name looked up in `PATH`).
    ///
    /// - Parameters:
    ///   - environment: the whole environment; nil keeps ours.
    ///   - input: written to its standard input, which is then closed; nil gives it `/dev/null`.
    ///   - timeoutMs: from now until its process group is sent SIGTERM; nil for no limit.
    ///   - graceMs: from SIGTERM until SIGKILL.
    /// - Throws: `StartFailure` when it cannot be started (not found, not executable, no pipe).
    public init(
        _ arguments: [String], environment: [String: String]? = nil, input: [UInt8]? = nil,
        output: Output = .capture(limit: 1 << 20), error: Output = .capture(limit: 64 << 10),
        timeoutMs: Int64? = nil, graceMs: Int64 = 2000, setup: Setup = Setup()
    ) throws(StartFailure) {
        guard let program = setup.executable ?? arguments.first, !program.isEmpty else {
            throw StartFailure(program: "", reason: "the command is empty")
        }
        // A command that stops reading must not end us with SIGPIPE: writes then fail with EPIPE.
        _ = ChildProcess.ignoreBrokenPipes
        var pipes: [(parent: Int32, child: Int32)?] = [nil, nil, nil]
        func closeAll() {
            for case let pair? in pipes {
                close(pair.parent)
                close(pair.child)
            }
        }
        func makePipe(_ stream: Int) throws(StartFailure) {
            var fds: [Int32] = [-1, -1]
            guard pipe(&fds) == 0 else {
                let reason = String(cString: strerror(errno))
                closeAll()
                throw StartFailure(program: program, reason: "cannot make a pipe: \(reason)")
            }
            // Index 0 reads: the child reads its input, the parent reads its output.
            let (parent, child) = stream == 0 ? (fds[1], fds[0]) : (fds[0], fds[1])
            _ = fcntl(parent, F_SETFD, FD_CLOEXEC)
            _ = fcntl(parent, F_SETFL, fcntl(parent, F_GETFL) | O_NONBLOCK)
            pipes[stream] = (parent, child)
        }
        if input != nil { try makePipe(0) }
        if case .capture = output { try makePipe(1) }
        if case .capture = error { try makePipe(2) }

        #if canImport(Darwin)
            var actions: posix_spawn_file_actions_t?
            var attributes: posix_spawnattr_t?
        #else
            var actions = posix_spawn_file_actions_t()
            var attributes = posix_spawnattr_t()
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (stream, disposition) in [(0, input == nil ? Output.discard : .capture(limit: 0)), (1, output), (2, error)] {
            if let pair = pipes[stream] {
                posix_spawn_file_actions_adddup2(&actions, pair.child, Int32(stream))
                posix_spawn_file_actions_addclose(&actions, pair.child)
            } else if disposition == .discard {
                posix_spawn_file_actions_addopen(&actions, Int32(stream), "/dev/null", stream == 0 ? O_RDONLY : O_WRONLY, 0)
            }
        }
        for (ours, its) in setup.descriptors where ours >= 0 && ours != its {
            posix_spawn_file_actions_adddup2(&actions, ours, its)
        }
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Default signal actions (we ignore SIGPIPE, catch SIGINT and SIGTERM), nothing blocked
        // but what the setup blocks, and a process group of its own unless the setup says not.
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for number in [SIGPIPE, SIGINT, SIGTERM, SIGXFSZ] { sigaddset(&defaults, number) }
        var blocked = sigset_t()
        sigemptyset(&blocked)
        for number in setup.blockedSignals { sigaddset(&blocked, number) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &blocked)
        var flags = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK
        if setup.ownProcessGroup {
            posix_spawnattr_setpgroup(&attributes, 0)
            flags |= POSIX_SPAWN_SETPGROUP
        }
        posix_spawnattr_setflags(&attributes, Int16(flags))

        var pid: pid_t = 0
        let code: Int32 = ChildProcess.withCStrings(arguments) { argv in
            let spawn = { (envp: UnsafePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 in
                program.contains("/")
                    ? posix_spawn(&pid, program, &actions, &attributes, argv, envp)
                    : posix_spawnp(&pid, program, &actions, &attributes, argv, envp)
            }
            guard let environment else { return spawn(UnsafePointer(environ)) }
            return ChildProcess.withCStrings(environment.map { "\($0.key)=\($0.value)" }) { spawn($0) }
        }
        for case let pair? in pipes { close(pair.child) }
        guard code == 0 else {
            for case let pair? in pipes { close(pair.parent) }
            let lookedUp = !program.contains("/") && (code == ENOENT || code == EACCES)
            throw StartFailure(
                program: program,
                reason: lookedUp
                    ? ChildProcess.lookupFailure(program, path: getenv("PATH").map { String(cString: $0) } ?? "/usr/bin:/bin")
                    : String(cString: strerror(code)))
        }
        self.pid = pid
        signalTarget = setup.ownProcessGroup ? -pid : pid
        self.input = input ?? []
        inputFD = pipes[0]?.parent ?? -1
        outputFD = pipes[1]?.parent ?? -1
        errorFD = pipes[2]?.parent ?? -1
        if case .capture(let limit) = output { outputLimit = max(0, limit) } else { outputLimit = 0 }
        if case .capture(let limit) = error { errorLimit = max(0, limit) } else { errorLimit = 0 }
        deadline = timeoutMs.map { Clock.monotonicMilliseconds() + $0 }
        self.graceMs = graceMs
        if inputFD >= 0 && self.input.isEmpty { closeInput() }
    }

    deinit {
        if result == nil {
            kill(signalTarget, SIGKILL)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        }
        for fd in [inputFD, outputFD, errorFD] where fd >= 0 { close(fd) }
    }

    /// Ends it and its process group now (an interruption): SIGTERM, then SIGKILL after the grace period.
    public func stop() {
        guard result == nil, terminatedAt == nil else { return }
        stopped = true
        terminate()
    }

    /// Moves its input and output along, waiting up to `waitMs` for any of them, and reaps it
    /// once it ended. Returns true once `result` is set.
    @discardableResult
    public func pump(waitMs: Int32 = 0, wakeFD: Int32 = -1) -> Bool {
        if result != nil { return true }
        var fds: [pollfd] = []
        if inputFD >= 0 { fds.append(pollfd(fd: inputFD, events: Int16(POLLOUT), revents: 0)) }
        if outputFD >= 0 { fds.append(pollfd(fd: outputFD, events: Int16(POLLIN), revents: 0)) }
        if errorFD >= 0 { fds.append(pollfd(fd: errorFD, events: Int16(POLLIN), revents: 0)) }
        if wakeFD >= 0 { fds.append(pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)) }
        var wait = waitMs
        if let limit = nextTimerMs() { wait = min(wait, Int32(clamping: max(0, limit))) }
        if fds.isEmpty || (fds.count == 1 && wakeFD >= 0) {
            // Nothing to move: only its exit is awaited, and there is no descriptor for that.
            if wait > 0 {
                var pause = timespec(tv_sec: 0, tv_nsec: Int(min(wait, 10)) * 1_000_000)
                nanosleep(&pause, nil)
            }
        } else {
            _ = poll(&fds, nfds_t(fds.count), wait)
        }
        writeInput()
        readAvailable(&outputFD, into: &output, limit: outputLimit, truncated: &outputTruncated)
        readAvailable(&errorFD, into: &error, limit: errorLimit, truncated: &errorTruncated)
        checkTimers()
        return reap()
    }

    /// Waits for it to end: `pump` until `result` is set. With `interruptible`, a stop signal
    /// (`Signals.stopRequested`) ends it as `stop()` does.
    @discardableResult
    public func wait(interruptible: Bool = false) -> Result {
        while true {
            if interruptible && Signals.stopRequested { stop() }
            if pump(waitMs: 100, wakeFD: interruptible ? Signals.wakeFD : -1), let result { return result }
        }
    }

    /// Runs `arguments` to the end and returns how it went.
    public static func run(
        _ arguments: [String], environment: [String: String]? = nil, input: [UInt8]? = nil,
        output: Output = .capture(limit: 1 << 20), error: Output = .capture(limit: 64 << 10),
        timeoutMs: Int64? = nil, graceMs: Int64 = 2000, interruptible: Bool = false, setup: Setup = Setup()
    ) throws(StartFailure) -> Result {
        try ChildProcess(
            arguments, environment: environment, input: input, output: output, error: error,
            timeoutMs: timeoutMs, graceMs: graceMs, setup: setup
        ).wait(interruptible: interruptible)
    }

    // MARK: - Parts

    private func writeInput() {
        guard inputFD >= 0 else { return }
        while written < input.count {
            let count = input.withUnsafeBytes { write(inputFD, $0.baseAddress! + written, input.count - written) }
            if count > 0 {
                written += count
                continue
            }
            if count < 0 && errno == EINTR { continue }
            if count < 0 && errno == EAGAIN { return }
            break  // EPIPE: it stopped reading; it may still answer.
        }
        closeInput()
    }

    private func closeInput() {
        close(inputFD)
        inputFD = -1
    }

    private func readAvailable(_ fd: inout Int32, into kept: inout [UInt8], limit: Int, truncated: inout Bool) {
        guard fd >= 0 else { return }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if count > 0 {
                let room = max(0, limit - kept.count)
                if count > room { truncated = true }
                kept.append(contentsOf: chunk[0..<min(count, room)])
                continue
            }
            if count < 0 && errno == EINTR { continue }
            if count < 0 && errno == EAGAIN { return }
            close(fd)
            fd = -1
            return
        }
    }

    /// Milliseconds until the deadline or the end of the grace period, if either is set.
    private func nextTimerMs() -> Int64? {
        let now = Clock.monotonicMilliseconds()
        if let terminatedAt { return terminatedAt + graceMs - now }
        return deadline.map { $0 - now }
    }

    private func checkTimers() {
        guard result == nil else { return }
        let now = Clock.monotonicMilliseconds()
        if let terminatedAt {
            if now - terminatedAt >= graceMs { kill(signalTarget, SIGKILL) }
        } else if let deadline, now >= deadline {
            timedOut = true
            terminate()
        }
    }

    private func terminate() {
        terminatedAt = Clock.monotonicMilliseconds()
        kill(signalTarget, SIGTERM)
        kill(signalTarget, SIGCONT)  // a stopped group cannot act on SIGTERM
    }

    /// Reaps it when it ended; what it wrote before it ended is read first.
    private func reap() -> Bool {
        var status: Int32 = 0
        let reaped = waitpid(pid, &status, WNOHANG)
        guard reaped == pid else { return false }
        // Whatever it left in the pipes was written before it exited.
        writeInputAbandoned()
        readAvailable(&outputFD, into: &output, limit: outputLimit, truncated: &outputTruncated)
        readAvailable(&errorFD, into: &error, limit: errorLimit, truncated: &errorTruncated)
        // A process it left behind in its group is ended once a deadline or a stop applied.
        if terminatedAt != nil { kill(signalTarget, SIGKILL) }
        for fd in [outputFD, errorFD] where fd >= 0 { close(fd) }
        outputFD = -1
        errorFD = -1
        let termination: Termination = status & 0x7F == 0 ? .exited((status >> 8) & 0xFF) : .signaled(status & 0x7F)
        result = Result(
            termination: termination, output: output, error: error, outputTruncated: outputTruncated,
            errorTruncated: errorTruncated, timedOut: timedOut, stopped: stopped)
        return true
    }

    private func writeInputAbandoned() {
        if inputFD >= 0 { closeInput() }
    }

    private static let ignoreBrokenPipes: Void = { _ = signal(SIGPIPE, SIG_IGN) }()

    /// Calls `body` with a NULL-terminated C array of the strings.
    private static func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
        var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
        pointers.append(nil)
        defer { for pointer in pointers { free(pointer) } }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
