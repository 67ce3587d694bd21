import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

private let pendingSignal = Atomic<Int32>(0)
private let wakeWriteFD = Atomic<Int32>(-1)

/// Process-wide signal policy for every tool.
///
/// SIGPIPE is ignored, so a closed pipe downstream shows up as `EPIPE` on write and the tool
/// ends with success. SIGINT and SIGTERM set a flag and wake any loop waiting on `wakeFD`;
/// tools stop taking input, finish or abandon in-flight work, and exit 130 or 143.
/// A second SIGINT while stopping ends the process at once with 130.
public enum Signals {
    /// The read end of a pipe that becomes readable when SIGINT or SIGTERM arrives,
    /// for loops that wait in `poll`. -1 before `install()`.
    nonisolated(unsafe) public private(set) static var wakeFD: Int32 = -1

    /// Installs the policy. Call once, from the executable's entry point.
    public static func install() {
        signal(SIGPIPE, SIG_IGN)
        // Past a file size limit (ulimit -f), a write should fail with EFBIG and be reported
        // like a full disk, not kill the tool halfway through.
        signal(SIGXFSZ, SIG_IGN)
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            for fd in fds {
                let flags = fcntl(fd, F_GETFL)
                _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            }
            wakeFD = fds[0]
            wakeWriteFD.store(fds[1], ordering: .sequentiallyConsistent)
        }
        for number in [SIGINT, SIGTERM] {
            var action = sigaction()
            #if canImport(Glibc)
                action.__sigaction_handler.sa_handler = handleStopSignal
            #else
                action.__sigaction_u.__sa_handler = handleStopSignal
            #endif
            sigemptyset(&action.sa_mask)
            action.sa_flags = 0  // no SA_RESTART: a blocking read returns EINTR so the loop can stop
            sigaction(number, &action, nil)
        }
        // A parent may have started us with these blocked (some test runners and process
        // launchers do, and serve's supervisor does on purpose, so that a stop sent while its
        // worker starts waits for the handler instead of killing it); a tool that cannot be
        // interrupted is a defect, so unblock them, after the handlers are in place: one already
        // pending is then handled, not taken by the default action.
        var unblock = sigset_t()
        sigemptyset(&unblock)
        sigaddset(&unblock, SIGINT)
        sigaddset(&unblock, SIGTERM)
        sigaddset(&unblock, SIGPIPE)
        pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
    }

    /// The stop signal received so far (SIGINT or SIGTERM), or nil.
    public static var received: Int32? {
        let value = pendingSignal.load(ordering: .sequentiallyConsistent)
        return value == 0 ? nil : value
    }

    /// Whether a stop was requested.
    public static var stopRequested: Bool { received != nil }

    /// The exit status a stop signal calls for, or nil when none arrived.
    public static var stopStatus: ExitStatus? {
        switch received {
        case SIGINT?: return .interrupted
        case SIGTERM?: return .terminated
        default: return nil
        }
    }

    /// Marks a stop as if `signal` had arrived (for tests and internal shutdown).
    public static func requestStop(_ number: Int32) {
        handleStopSignal(number)
    }

    /// Drains the wake pipe after a wake-up has been seen.
    public static func drainWake() {
        guard wakeFD >= 0 else { return }
        var scratch = [UInt8](repeating: 0, count: 64)
        while read(wakeFD, &scratch, scratch.count) > 0 {}
    }
}

private func handleStopSignal(_ number: Int32) {
    let previous = pendingSignal.exchange(number, ordering: .sequentiallyConsistent)
    if previous == SIGINT && number == SIGINT {
        _exit(130)  // a second Ctrl-C: the user means it
    }
    let fd = wakeWriteFD.load(ordering: .sequentiallyConsistent)
    if fd >= 0 {
        var byte: UInt8 = 1
        _ = write(fd, &byte, 1)
    }
}
