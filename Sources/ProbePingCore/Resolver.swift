import Foundation
import ProbeKit
import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Unsafe pointers here are C interop (getaddrinfo(3) returns a linked list of C structures): kept.

/// Name lookups off the probing thread: `getaddrinfo` blocks, so a few helper threads run it
/// (as libcurl's threaded resolver does) and the probing thread learns of each answer through
/// a pipe it polls with its sockets. Literal addresses never come here.
final class Resolver: @unchecked Sendable {
    /// One answer: the addresses found (in the system's preferred order), or the lookup's error.
    struct Answer {
        var token: Int
        var addresses: [IPAddress]
        var error: String?
    }

    private let condition = NSCondition()
    private var jobs: [(token: Int, host: String, family: Int32)] = []
    private var answers: [Answer] = []
    private var threads = 0
    private var idle = 0
    private let maxThreads: Int
    /// Readable when answers are waiting.
    let wakeFD: Int32
    private let wakeWriteFD: Int32

    /// Creates a resolver with up to `maxThreads` lookups at once.
    init(maxThreads: Int = 8) {
        self.maxThreads = maxThreads
        var fds: [Int32] = [-1, -1]
        _ = pipe(&fds)
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        wakeFD = fds[0]
        wakeWriteFD = fds[1]
    }

    /// Looks `host` up for `family` (`AF_INET`, `AF_INET6` or `AF_UNSPEC`); the answer comes back with `token`.
    func submit(token: Int, host: String, family: Int32) {
        condition.lock()
        jobs.append((token, host, family))
        let spawn = idle == 0 && threads < maxThreads
        if spawn { threads += 1 }
        condition.signal()
        condition.unlock()
        if spawn {
            let thread = Thread { [self] in work() }
            thread.stackSize = 256 * 1024
            thread.start()
        }
    }

    /// The answers that arrived since the last call.
    func collect() -> [Answer] {
        var scratch = [UInt8](repeating: 0, count: 256)
        while read(wakeFD, &scratch, scratch.count) > 0 {}
        condition.lock()
        defer { condition.unlock() }
        let ready = answers
        answers.removeAll()
        return ready
    }

    private func work() {
        while true {
            condition.lock()
            idle += 1
            while jobs.isEmpty { condition.wait() }
            idle -= 1
            let job = jobs.removeFirst()
            condition.unlock()
            let answer = Resolver.lookUp(job.host, family: job.family, token: job.token)
            condition.lock()
            answers.append(answer)
            condition.unlock()
            var byte: UInt8 = 1
            _ = write(wakeWriteFD, &byte, 1)
        }
    }

    /// One blocking lookup.
    static func lookUp(_ host: String, family: Int32, token: Int) -> Answer {
        var hints = addrinfo()
        hints.ai_family = family
        hints.ai_socktype = datagramSocketType
        var list: UnsafeMutablePointer<addrinfo>?
        let code = getaddrinfo(host, nil, &hints, &list)
        guard code == 0 else {
            let words = code == EAI_SYSTEM ? String(cString: strerror(errno)) : String(cString: gai_strerror(code))
            return Answer(token: token, addresses: [], error: words)
        }
        defer { freeaddrinfo(list) }
        var addresses: [IPAddress] = []
        var node = list
        while let entry = node {
            if let address = entry.pointee.ai_addr, let ip = IPAddress(address), !addresses.contains(ip) {
                addresses.append(ip)
            }
            node = entry.pointee.ai_next
        }
        return Answer(token: token, addresses: addresses, error: addresses.isEmpty ? "no address" : nil)
    }
}
