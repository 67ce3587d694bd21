import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Unsafe pointers here are C interop (write(2) of the wake pipe's byte): kept.

/// A decided request and its connection, for a worker: the outcome to answer and the deadline
/// by which the answer must be taken.
struct Job {
    let connection: FastCGIConnection
    let outcome: FastCGIConnection.Outcome
    let deadline: Int64
}

/// Jobs ready for a worker, first in first out.
final class JobQueue: @unchecked Sendable {
    private let condition = NSCondition()
    private var items: [Job] = []
    private var head = 0
    private var stopped = false

    /// Adds a job and wakes a worker.
    func push(_ job: Job) {
        condition.lock()
        items.append(job)
        condition.signal()
        condition.unlock()
    }

    /// The next job; nil once stopped and empty.
    func pop() -> Job? {
        condition.lock()
        defer { condition.unlock() }
        while head == items.count {
            if stopped { return nil }
            condition.wait()
        }
        let job = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        }
        return job
    }

    /// Lets `pop` return nil once the queue is empty.
    func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        condition.unlock()
    }
}

func setNonBlocking(_ fd: Int32) {
    let flags = fcntl(fd, F_GETFL)
    _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
    _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
}

/// accept(2), the new descriptor non-blocking and closed on exec (accept4 needs _GNU_SOURCE,
/// which Swift's Glibc module does not define; no other thread execs meanwhile).
func acceptConnection(_ listenFD: Int32) -> Int32 {
    let fd = accept(listenFD, nil, nil)
    if fd >= 0 { setNonBlocking(fd) }
    return fd
}

@inline(__always)
func writeByte(_ fd: Int32, _ byte: UnsafeMutablePointer<UInt8>) -> Int {
    #if canImport(Glibc)
        return Glibc.write(fd, byte, 1)
    #else
        return Darwin.write(fd, byte, 1)
    #endif
}
