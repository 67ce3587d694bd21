import Foundation
import Synchronization
import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Unsafe pointers here are C interop (write(2) on the wake pipe): kept.

/// What a worker thread answers requests with: made once per thread (its own store connection,
/// say), used by that thread only.
public protocol RequestAnswerer: AnyObject {
    /// The response to `request`. Errors are the answerer's to turn into responses.
    func answer(_ request: APIRequest) -> APIResponse
}

/// Where the lines of a responder's log pipe go (nginx's access log of the requests it refused
/// itself, for Health Sync's operation log). Runs on a thread of its own.
public protocol LineSink: AnyObject {
    /// One line, without its newline.
    func received(_ line: [UInt8])
    /// Called about once a second while serving, and once more with `final` at the end, after
    /// the last line: the place to write what was gathered.
    func tick(final: Bool)
}

/// A long-running FastCGI responder (the web server's side of it is nginx): a listening socket,
/// one poller thread that accepts connections and watches the idle ones, and `workers` threads
/// that each read a whole request from a connection that became readable, answer it and hand the
/// connection back. A connection nginx keeps open (`fastcgi_keep_conn on`) never holds a worker
/// while it is idle, so any number of kept connections share the workers.
///
/// SIGTERM or SIGINT: no new connection is accepted, idle connections are closed, the requests
/// being read or answered are finished, then `run` returns.
///
/// Why not Debian's libfcgi (measured here, nginx 1.22 with `fastcgi_keep_conn on`, a 114 KB
/// answer): its FCGX_Accept_r keeps a thread reading the connection it served last, so once
/// nginx holds more connections than the responder has threads, the requests on the others wait
/// in the listen queue. With 2 to 8 threads at 64 connections, 4 to 49 requests in every 10 s run
/// got 504 after the whole 10 s fastcgi_read_timeout; at 8 connections and 2 or 4 threads, 12 to
/// 36 waited over a second. Its stop signal is seen only in accept(), so a responder idle on
/// kept connections did not end within 5 s of SIGTERM.
public final class Responder: @unchecked Sendable {
    let listenFD: Int32
    let workers: Int
    let limits: RequestLimits
    let makeAnswerer: @Sendable () -> RequestAnswerer
    let log: @Sendable (String) -> Void
    /// The most connections open at once; past it a new one is closed at once.
    static let maxConnections = 1024
    /// A kept connection idle this long is closed (nginx opens another when it needs one).
    static let idleLimitMs: Int64 = 120_000

    private let queue = ConnectionQueue()
    private let returned = Mutex<[FastCGIConnection]>([])
    private let stopping = Atomic<Bool>(false)
    private let open = Atomic<Int>(0)
    /// The write end of the pipe that wakes the poller when a worker hands a connection back.
    private var wakeWrite: Int32 = -1
    private var wakeRead: Int32 = -1

    /// A responder on the listening socket `listenFD` (a Unix or TCP stream socket, already listening).
    public init(
        listenFD: Int32, workers: Int, limits: RequestLimits,
        log: @escaping @Sendable (String) -> Void, makeAnswerer: @escaping @Sendable () -> RequestAnswerer
    ) {
        self.listenFD = listenFD
        self.workers = workers
        self.limits = limits
        self.log = log
        self.makeAnswerer = makeAnswerer
    }

    /// Serves until a stop signal (or `parentGone` says the supervisor went away); returns once
    /// every request in flight is answered. With `lines`, a thread reads that pipe into its sink.
    public func run(parentGone: @escaping () -> Bool = { false }, lines: (fd: Int32, sink: @Sendable () -> LineSink)? = nil) throws {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw ToolError("cannot make a pipe: \(String(cString: strerror(errno)))") }
        wakeRead = fds[0]
        wakeWrite = fds[1]
        for fd in fds + [listenFD] { setNonBlocking(fd) }
        defer {
            _ = closeDescriptor(wakeRead)
            _ = closeDescriptor(wakeWrite)
        }
        let done = DispatchGroup()
        for index in 0..<workers {
            done.enter()
            let thread = Thread { [self] in
                workerLoop()
                done.leave()
            }
            thread.name = "responder worker \(index + 1)"
            thread.stackSize = 1 << 20
            thread.start()
        }
        if let lines {
            done.enter()
            let thread = Thread { [self] in
                lineLoop(lines.fd, lines.sink())
                done.leave()
            }
            thread.name = "responder log pipe"
            thread.start()
        }
        pollLoop(parentGone: parentGone)
        queue.stop()
        done.wait()
        for connection in returned.withLock({ list in
            defer { list.removeAll() }
            return list
        }) { connection.close() }
    }

    // MARK: - The poller

    private func pollLoop(parentGone: () -> Bool) {
        var idle: [FastCGIConnection] = []
        var entries: [pollfd] = []
        while true {
            if Signals.stopRequested || parentGone() { break }
            for connection in returned.withLock({ list in
                defer { list.removeAll(keepingCapacity: true) }
                return list
            }) {
                connection.idleSince = Clock.monotonicMilliseconds()
                idle.append(connection)
            }
            entries.removeAll(keepingCapacity: true)
            entries.append(pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0))
            entries.append(pollfd(fd: Signals.wakeFD, events: Int16(POLLIN), revents: 0))
            entries.append(pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0))
            for connection in idle { entries.append(pollfd(fd: connection.fd, events: Int16(POLLIN), revents: 0)) }
            let ready = poll(&entries, nfds_t(entries.count), 1000)
            if ready < 0 {
                if errno == EINTR { continue }
                log("poll failed: \(String(cString: strerror(errno)))")
                break
            }
            if entries[0].revents != 0 { drain(wakeRead) }
            if entries[2].revents & Int16(POLLIN) != 0 { acceptAll(into: &idle) }
            // Readable (or closed) idle connections go to the workers; long-idle ones are closed.
            let now = Clock.monotonicMilliseconds()
            var kept: [FastCGIConnection] = []
            kept.reserveCapacity(idle.count)
            for (offset, connection) in idle.enumerated() {
                let events = offset + 3 < entries.count && entries[offset + 3].fd == connection.fd ? entries[offset + 3].revents : 0
                if events != 0 {
                    queue.push(connection)
                } else if now - connection.idleSince > Responder.idleLimitMs {
                    closeConnection(connection)
                } else {
                    kept.append(connection)
                }
            }
            idle = kept
        }
        // Stopping: nothing new is accepted; a connection whose request has begun to arrive is a
        // request in flight, handed to the workers to finish; the idle rest are closed. That
        // includes connections still in the listen backlog: their clients connected and may have
        // sent a request before the stop, so they are accepted and judged like the others (left
        // there, closing the socket resets them: a loaded machine's poller had not yet accepted
        // a request whose first bytes were sent before SIGTERM).
        stopping.store(true, ordering: .sequentiallyConsistent)
        acceptAll(into: &idle)
        for connection in returned.withLock({ list in
            defer { list.removeAll() }
            return list
        }) { idle.append(connection) }
        var pending = idle.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
        _ = poll(&pending, nfds_t(pending.count), 0)
        for (connection, entry) in zip(idle, pending) {
            if entry.revents & Int16(POLLIN) != 0 {
                queue.push(connection)
            } else {
                closeConnection(connection)
            }
        }
    }

    /// Accepts every pending connection (the new ones wait in the poll set for their first bytes).
    private func acceptAll(into idle: inout [FastCGIConnection]) {
        while true {
            let fd = acceptConnection(listenFD)
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                if errno != EAGAIN && errno != EWOULDBLOCK { log("accept failed: \(String(cString: strerror(errno)))") }
                return
            }
            if open.load(ordering: .relaxed) >= Responder.maxConnections {
                _ = closeDescriptor(fd)
                log("more than \(Responder.maxConnections) connections are open; one was closed")
                continue
            }
            open.add(1, ordering: .relaxed)
            let connection = FastCGIConnection(fd: fd)
            connection.idleSince = Clock.monotonicMilliseconds()
            idle.append(connection)
        }
    }

    private func closeConnection(_ connection: FastCGIConnection) {
        connection.close()
        open.subtract(1, ordering: .relaxed)
    }

    // MARK: - Workers

    private func workerLoop() {
        var answerer: RequestAnswerer?
        while let connection = queue.pop() {
            let keep = serve(connection) { request in
                if answerer == nil { answerer = makeAnswerer() }
                return answerer!.answer(request)
            }
            if keep && !stopping.load(ordering: .sequentiallyConsistent) {
                connection.shrink()
                if connection.hasBufferedBytes {
                    queue.push(connection)
                } else {
                    returned.withLock { $0.append(connection) }
                    var byte: UInt8 = 1
                    _ = writeByte(wakeWrite, &byte)
                }
            } else {
                closeConnection(connection)
            }
        }
    }

    /// Reads one request from `connection`, answers it and writes the answer; whether the
    /// connection stays open for another.
    private func serve(_ connection: FastCGIConnection, _ answer: (APIRequest) -> APIResponse) -> Bool {
        let deadline = Clock.monotonicMilliseconds() + limits.deadlineMs
        switch connection.readRequest(limits: limits, deadline: deadline) {
        case .closed:
            return false
        case .broken(let why):
            log("a connection was dropped: \(why)")
            return false
        case .aborted(let id, let keep):
            var out: [UInt8] = []
            FastCGI.appendEndRequest(requestID: id, to: &out)
            return connection.write(out, deadline: deadline) && keep
        case .refused(let id, let error):
            let response = error.response
            _ = connection.write(FastCGI.response(requestID: id, head: response.head(), body: response.body), deadline: deadline)
            return false
        case .request(let id, let keep, let parameters, let body):
            let response = answer(APIRequest(parameters: parameters, body: body))
            let written = connection.write(
                FastCGI.response(requestID: id, head: response.head(), body: response.body),
                deadline: max(deadline, Clock.monotonicMilliseconds() + 1000))
            return written && keep
        }
    }

    // MARK: - The log pipe

    /// Reads lines into `sink` until the poller stops, ticking it about once a second; at the end,
    /// what is in the pipe still, then a final tick.
    private func lineLoop(_ fd: Int32, _ sink: LineSink) {
        setNonBlocking(fd)
        var chunk = [UInt8](repeating: 0, count: 65_536)
        var partial: [UInt8] = []
        func readAll() {
            while true {
                let n = readBytes(fd, &chunk, chunk.count)
                guard n > 0 else { return }
                var start = 0
                for index in 0..<n where chunk[index] == 0x0A {
                    if partial.isEmpty {
                        sink.received(Array(chunk[start..<index]))
                    } else {
                        partial += chunk[start..<index]
                        sink.received(partial)
                        partial.removeAll(keepingCapacity: true)
                    }
                    start = index + 1
                }
                partial += chunk[start..<n]
                if partial.count > 64 << 10 { partial.removeAll(keepingCapacity: true) }  // no line is that long
            }
        }
        var lastTick = Clock.monotonicMilliseconds()
        while !stopping.load(ordering: .sequentiallyConsistent) {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&entry, 1, 250) > 0 { readAll() }
            if Clock.monotonicMilliseconds() - lastTick >= 1000 {
                sink.tick(final: false)
                lastTick = Clock.monotonicMilliseconds()
            }
        }
        readAll()
        sink.tick(final: true)
    }

    private func drain(_ fd: Int32) {
        var scratch = [UInt8](repeating: 0, count: 256)
        while readBytes(fd, &scratch, scratch.count) > 0 {}
    }
}

/// Connections ready for a worker, first in first out.
final class ConnectionQueue: @unchecked Sendable {
    private let condition = NSCondition()
    private var items: [FastCGIConnection] = []
    private var head = 0
    private var stopped = false

    func push(_ connection: FastCGIConnection) {
        condition.lock()
        items.append(connection)
        condition.signal()
        condition.unlock()
    }

    /// The next connection; nil once stopped and empty.
    func pop() -> FastCGIConnection? {
        condition.lock()
        defer { condition.unlock() }
        while head == items.count {
            if stopped { return nil }
            condition.wait()
        }
        let connection = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        }
        return connection
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
