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
/// (past every request's deadline) is killed. The worker is a `ChildProcess`, the one way this
/// project starts a process.
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
        // The worker starts with SIGINT and SIGTERM blocked: a stop passed on while it loads
        // stays pending until its handlers are in place (Signals.install unblocks them then), so
        // it is a graceful stop that answers what waits in the socket's backlog, never the
        // default action's death with the backlog reset. It stays in our process group, as a
        // terminal's ^C or a service manager expects.
        #if os(Linux)
            let executable = "/proc/self/exe"
        #else
            let executable = CommandLine.arguments[0]
        #endif
        let setup = ChildProcess.Setup(
            descriptors: [(listenFD, 3), (pipeFD ?? -1, 4)], blockedSignals: [SIGINT, SIGTERM], ownProcessGroup: false,
            executable: executable)
        var child: ChildProcess?
        var startedAt: Int64 = 0
        var forwarded: Int64?
        while true {
            guard let worker = child else {
                if Signals.stopRequested { return Signals.stopStatus ?? .success }
                let wait = startedAt + 1000 - Clock.monotonicMilliseconds()
                if startedAt > 0, wait > 0 {
                    var entry = pollfd(fd: Signals.wakeFD, events: Int16(POLLIN), revents: 0)
                    _ = poll(&entry, 1, Int32(wait))
                    continue
                }
                do {
                    child = try ChildProcess(
                        CommandLine.arguments, environment: childEnvironment, output: .inherit, error: .inherit, setup: setup)
                } catch {
                    throw ToolError("cannot start the worker: \(error.reason)")
                }
                startedAt = Clock.monotonicMilliseconds()
                continue
            }
            var entry = pollfd(fd: Signals.wakeFD, events: Int16(POLLIN), revents: 0)
            _ = poll(&entry, 1, 100)
            if Signals.stopRequested, forwarded == nil {
                kill(worker.pid, SIGTERM)
                forwarded = Clock.monotonicMilliseconds()
            }
            if let forwarded, Clock.monotonicMilliseconds() - forwarded > 15_000 {
                log("the worker did not finish within 15 s of the stop; killing it")
                kill(worker.pid, SIGKILL)
            }
            guard worker.pump(), let result = worker.result else { continue }
            child = nil
            if Signals.stopRequested { return Signals.stopStatus ?? .success }
            log("the worker \(describe(result.termination)); starting another")
        }
    }

    /// How a child ended, in words.
    static func describe(_ termination: ChildProcess.Termination) -> String {
        switch termination {
        case .exited(let status): "exited with status \(status)"
        case .signaled(let signal): "was killed by signal \(signal)"
        }
    }
}
