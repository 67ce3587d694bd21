import Foundation
import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Keeps one worker process answering on the listening socket: the supervisor holds the socket
/// and starts the worker (this same program, with the same arguments, the socket as descriptor 3
/// (a log pipe, if any, as 4) and VITALS_SERVE_WORKER set); when the worker ends other than by a stop (a crash, kill -9) it
/// starts another at once, so connections that arrive meanwhile wait in the socket's backlog and
/// are answered by the new worker. A worker that ends within a second of its start is started
/// again a second after its start, no sooner (a worker that cannot start does not spin).
///
/// SIGTERM or SIGINT to the supervisor is passed to the worker, which finishes the requests in
/// flight; the supervisor then ends with 143 or 130. A worker still busy 15 s after the stop
/// (past every request's deadline) is killed.
enum Supervisor {
    /// The environment variable that makes a process the worker; its value is the supervisor's pid.
    static let workerVariable = "VITALS_SERVE_WORKER"

    static func run(listenFD: Int32, pipeFD: Int32?, environment: [String: String], log: (String) -> Void) throws -> ExitStatus {
        // The worker finds the socket at descriptor 3 (and the log pipe at 4); this
        // process keeps its own copies.
        for (fd, target) in [(listenFD, Int32(3)), (pipeFD ?? -1, Int32(4))] where fd >= 0 {
            _ = fcntl(fd, F_SETFD, fd == target ? 0 : FD_CLOEXEC)
        }
        var childEnvironment = environment
        for name in ["LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"] { childEnvironment[name] = nil }
        childEnvironment[workerVariable] = String(getpid())
        let arguments = CommandLine.arguments
        var child: pid_t = 0
        var startedAt: Int64 = 0
        var forwarded: Int64?
        while true {
            if child == 0 {
                if Signals.stopRequested { return Signals.stopStatus ?? .success }
                let wait = startedAt + 1000 - Clock.monotonicMilliseconds()
                if startedAt > 0, wait > 0 {
                    var entry = pollfd(fd: Signals.wakeFD, events: Int16(POLLIN), revents: 0)
                    _ = poll(&entry, 1, Int32(wait))
                    continue
                }
                child = try spawn(arguments, environment: childEnvironment, descriptors: [(listenFD, 3), (pipeFD ?? -1, 4)])
                startedAt = Clock.monotonicMilliseconds()
            }
            var entry = pollfd(fd: Signals.wakeFD, events: Int16(POLLIN), revents: 0)
            _ = poll(&entry, 1, 100)
            if Signals.stopRequested, forwarded == nil {
                kill(child, SIGTERM)
                forwarded = Clock.monotonicMilliseconds()
            }
            if let forwarded, Clock.monotonicMilliseconds() - forwarded > 15_000 {
                log("the worker did not finish within 15 s of the stop; killing it")
                kill(child, SIGKILL)
            }
            var status: Int32 = 0
            let ended = waitpid(child, &status, WNOHANG)
            guard ended == child else { continue }
            child = 0
            if Signals.stopRequested { return Signals.stopStatus ?? .success }
            log("the worker \(describe(status)); starting another")
        }
    }

    /// How a child ended, in words.
    static func describe(_ status: Int32) -> String {
        let signal = status & 0x7F
        if signal == 0 { return "exited with status \((status >> 8) & 0xFF)" }
        return "was killed by signal \(signal)"
    }

    /// Starts this program again as the worker, the socket at descriptor 3.
    static func spawn(_ arguments: [String], environment: [String: String], descriptors: [(Int32, Int32)]) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (fd, target) in descriptors where fd >= 0 && fd != target { posix_spawn_file_actions_adddup2(&actions, fd, target) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // The worker starts with SIGINT and SIGTERM blocked: a stop passed on while it loads
        // stays pending until its handlers are in place (Signals.install unblocks them then), so
        // it is a graceful stop that answers what waits in the socket's backlog, never the
        // default action's death with the backlog reset.
        var blocked = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGINT)
        sigaddset(&blocked, SIGTERM)
        posix_spawnattr_setsigmask(&attributes, &blocked)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        #if os(Linux)
            let executable = "/proc/self/exe"
        #else
            let executable = arguments[0]
        #endif
        let cArguments = arguments.map { strdup($0) } + [nil]
        let cEnvironment = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in cArguments + cEnvironment { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, cArguments, cEnvironment)
        guard result == 0 else { throw ToolError("cannot start the worker: \(String(cString: strerror(result)))") }
        return pid
    }
}
