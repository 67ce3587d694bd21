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
/// one poller thread that accepts connections, reads what arrives on them and assembles each
/// request, and `workers` threads that each answer a whole request and hand the connection back.
/// Reading a request holds no worker: a peer that sends part of a request and stops (a
/// slow-loris, a stuck web server) holds a little memory until its deadline, never a thread, so
/// the next whole request is answered at once. A connection nginx keeps open
/// (`fastcgi_keep_conn on`) costs nothing while it is idle, so any number share the workers.
///
/// The poller holds each request to its limits as it arrives: the body, the parameters, the
/// deadline (10 s from its first byte, however its bytes trickle in: 408 when it is not whole by
/// then), and one bound on memory for all of them together (`RequestLimits.maxHeld`: the buffers
/// of every connection, requests arriving, whole ones waiting for a worker, and answers not yet
/// taken; a request arriving while it is passed is answered 503 and closed). Writing an answer
/// holds no worker either: what the socket does not take at once, the poller sends as the peer
/// reads, and closes the connection when it is not taken by the request's deadline. A connection
/// that sends nothing is closed at the deadline; one that carried a request and idles, after two
/// minutes.
///
/// SIGTERM or SIGINT: no new connection is accepted, idle connections are closed, the requests
/// arriving or being answered are finished (each by its deadline), then `run` returns.
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
    /// The most connections open at once. Past it, a new one takes the place of the one that
    /// began its request longest ago (or, with none arriving, idled longest): a whole request
    /// arrives within milliseconds, so the one closed is a staller's, never the newcomer.
    static let maxConnections = 1024
    /// A kept connection idle this long is closed (nginx opens another when it needs one).
    static let idleLimitMs: Int64 = 120_000
    /// The most bytes read from one connection in one turn of the poller, so that one fast
    /// sender does not keep the others waiting.
    static let readTurn = 256 << 10

    private let queue = JobQueue()
    private let returned = Mutex<[FastCGIConnection]>([])
    private let stopping = Atomic<Bool>(false)
    private let open = Atomic<Int>(0)
    /// Bytes held for requests not yet answered and answers not yet taken (see
    /// `RequestLimits.maxHeld`).
    private let held = Atomic<Int>(0)
    /// Jobs pushed to the workers and not yet done with: the poller stops only when none is left.
    private let inService = Atomic<Int>(0)
    /// Until when (monotonic ms) the listening socket is left out of the poll (accept failed).
    private var acceptPausedUntil: Int64 = 0
    /// Connections closed at the most connections since the last line said so, and when it was.
    private var evictions = 0
    private var lastEvictionLog: Int64 = -1000
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
        for connection in takeReturned() { connection.close() }
    }

    // MARK: - The poller

    private func takeReturned() -> [FastCGIConnection] {
        returned.withLock { list in
            defer { list.removeAll(keepingCapacity: true) }
            return list
        }
    }

    private func pollLoop(parentGone: () -> Bool) {
        // Every connection the poller holds: idle ones, those whose request is arriving, and
        // those whose answer waits for the peer to take it.
        var connections: [FastCGIConnection] = []
        var entries: [pollfd] = []
        var scratch = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            var isStopping = stopping.load(ordering: .sequentiallyConsistent)
            if !isStopping, Signals.stopRequested || parentGone() {
                // Stopping: nothing new is accepted, but connections still in the listen backlog
                // are taken and judged like the others: their clients connected and may have sent
                // a request before the stop (left there, closing the socket resets them: a loaded
                // machine's poller had not yet accepted a request sent before SIGTERM).
                stopping.store(true, ordering: .sequentiallyConsistent)
                isStopping = true
                acceptAll(into: &connections)
            }
            let now = Clock.monotonicMilliseconds()
            // Read before the returned list is taken: a worker hands its connection back before
            // it counts itself done, so none is missed when both come to nothing.
            let workersIdle = inService.load(ordering: .sequentiallyConsistent) == 0
            for connection in takeReturned() {
                connection.idleSince = now
                // The peer may have sent its next request before our answer: assemble what is here.
                if connection.hasPendingOutput || !connection.hasBufferedBytes || !settle(connection, assemble(connection)) {
                    connections.append(connection)
                }
            }
            if isStopping, connections.isEmpty, workersIdle { return }
            entries.removeAll(keepingCapacity: true)
            entries.append(pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0))
            entries.append(pollfd(fd: isStopping ? -1 : Signals.wakeFD, events: Int16(POLLIN), revents: 0))
            let accepting = !isStopping && now >= acceptPausedUntil
            entries.append(pollfd(fd: accepting ? listenFD : -1, events: Int16(POLLIN), revents: 0))
            // Wake for the next deadline; when stopping, at once for the idle connections to close.
            var wait: Int64 = accepting || isStopping ? 1000 : max(1, acceptPausedUntil - now)
            for connection in connections {
                let writing = connection.hasPendingOutput
                entries.append(pollfd(fd: connection.fd, events: Int16(writing ? POLLOUT : POLLIN), revents: 0))
                if writing {
                    wait = min(wait, max(0, connection.outputDeadline - now))
                } else if let started = connection.startedAt {
                    wait = min(wait, max(0, started + limits.deadlineMs - now))
                } else if isStopping {
                    wait = 0
                } else if connection.fresh {
                    wait = min(wait, max(0, connection.idleSince + limits.deadlineMs - now))
                }
            }
            let ready = poll(&entries, nfds_t(entries.count), Int32(wait))
            if ready < 0 {
                if errno == EINTR { continue }
                log("poll failed: \(String(cString: strerror(errno)))")
                return
            }
            if entries[0].revents != 0 { drain(wakeRead) }
            if entries[2].revents & Int16(POLLIN) != 0 { acceptAll(into: &connections) }
            let after = Clock.monotonicMilliseconds()
            var kept: [FastCGIConnection] = []
            kept.reserveCapacity(connections.count)
            for (offset, connection) in connections.enumerated() {
                let events = offset + 3 < entries.count && entries[offset + 3].fd == connection.fd ? entries[offset + 3].revents : 0
                if step(connection, events: events, now: after, stopping: isStopping, scratch: &scratch) { kept.append(connection) }
            }
            connections = kept
        }
    }

    /// One turn of the poller for one connection; whether the poller keeps it. An answer waiting
    /// is sent on as the peer takes it, and the connection closed when it is not taken by its
    /// deadline. A readable connection is read and its request assembled; a decided one goes to
    /// a worker, and a request past its deadline is refused (408), however its bytes trickle in.
    /// An idle connection is closed once long idle (at the deadline when it never carried a
    /// request), or at once when stopping: a request that has begun is finished, the rest are
    /// not waited for.
    private func step(
        _ connection: FastCGIConnection, events: Int16, now: Int64, stopping isStopping: Bool, scratch: inout [UInt8]
    ) -> Bool {
        if connection.hasPendingOutput {
            let result = events != 0 ? tracked(connection) { $0.flush() } : .blocked
            switch result {
            case .blocked:
                guard now >= connection.outputDeadline else { return true }
                log("a connection was dropped: the peer did not take its answer in time")
            case .failed:
                break
            case .done:
                guard connection.keepAfterOutput, !isStopping else { break }
                connection.idleSince = now
                return !connection.hasBufferedBytes || !settle(connection, assemble(connection))
            }
            closeConnection(connection)
            return false
        }
        if events != 0, settle(connection, read(connection, &scratch)) { return false }
        if let started = connection.startedAt {
            return !(now >= started + limits.deadlineMs && settle(connection, counting(connection) { $0.timedOut(limits: limits) }))
        }
        let limit = connection.fresh ? limits.deadlineMs : Responder.idleLimitMs
        guard isStopping || now - connection.idleSince > limit else { return true }
        closeConnection(connection)
        return false
    }

    /// Runs `change` on `connection`, keeping the count of bytes held in step with what the
    /// connection holds after it.
    private func tracked<T>(_ connection: FastCGIConnection, _ change: (FastCGIConnection) -> T) -> T {
        let before = connection.heldBytes
        let result = change(connection)
        held.add(connection.heldBytes - before, ordering: .relaxed)
        return result
    }

    /// Runs `change` on `connection`, keeping the count of bytes held: what the connection holds
    /// after it, and the bytes of a request it decided, which stay counted until answered.
    private func counting(
        _ connection: FastCGIConnection, _ change: (FastCGIConnection) -> FastCGIConnection.Outcome?
    ) -> FastCGIConnection.Outcome? {
        let outcome = tracked(connection, change)
        held.add(outcome?.bytes ?? 0, ordering: .relaxed)
        return outcome
    }

    /// Reads what `connection` has and assembles its request; the outcome once it is decided.
    /// Past the bound on bytes held, a request still arriving is refused (503) and its bytes
    /// let go at once; its connection is closed after the answer.
    private func read(_ connection: FastCGIConnection, _ scratch: inout [UInt8]) -> FastCGIConnection.Outcome? {
        var received = FastCGIConnection.Received.nothing
        _ = counting(connection) { connection in
            received = connection.receive(limit: Responder.readTurn, scratch: &scratch)
            return nil
        }
        switch received {
        case .nothing: return nil
        case .ended: return counting(connection) { $0.ended(failed: false) }
        case .failed: return counting(connection) { $0.ended(failed: true) }
        case .bytes: break
        }
        if let outcome = assemble(connection) { return outcome }
        guard held.load(ordering: .relaxed) > limits.maxHeld else { return nil }
        log("requests not yet answered hold more than \(limits.maxHeld >> 20) MiB; one arriving was refused (503)")
        return counting(connection) {
            $0.refuse(
                APIError(
                    status: 503, reason: "busy", message: "the server holds too many requests at once; try again shortly",
                    headers: [("Retry-After", "1")]))
        }
    }

    /// Assembles what `connection` has buffered, keeping the count of bytes held.
    private func assemble(_ connection: FastCGIConnection) -> FastCGIConnection.Outcome? {
        counting(connection) { $0.assemble(limits: limits) }
    }

    /// Acts on a decided outcome: a request or a refusal goes to a worker, a closed or broken
    /// connection is closed. Whether the connection left the poller.
    private func settle(_ connection: FastCGIConnection, _ outcome: FastCGIConnection.Outcome?) -> Bool {
        guard let outcome else { return false }
        switch outcome {
        case .closed:
            closeConnection(connection)
        case .broken(let why):
            log("a connection was dropped: \(why)")
            closeConnection(connection)
        case .request, .refused, .aborted:
            inService.add(1, ordering: .sequentiallyConsistent)
            queue.push(Job(connection: connection, outcome: outcome, deadline: connection.decidedStartedAt + limits.deadlineMs))
        }
        return true
    }

    /// Accepts every pending connection (the new ones wait in the poll set for their first bytes).
    private func acceptAll(into connections: inout [FastCGIConnection]) {
        while true {
            let fd = acceptConnection(listenFD)
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { return }
                // Out of descriptors (EMFILE, ENFILE) or memory: the listening socket stays
                // readable, so it is left out of the poll for a while instead of spinning on it.
                log("accept failed: \(String(cString: strerror(errno))); accepting again in 100 ms")
                acceptPausedUntil = Clock.monotonicMilliseconds() + 100
                return
            }
            if open.load(ordering: .relaxed) >= Responder.maxConnections, !evictOldest(from: &connections) {
                _ = closeDescriptor(fd)
                logEviction("a new one was closed")
                continue
            }
            open.add(1, ordering: .relaxed)
            let connection = FastCGIConnection(fd: fd)
            connection.idleSince = Clock.monotonicMilliseconds()
            held.add(connection.heldBytes, ordering: .relaxed)
            connections.append(connection)
        }
    }

    /// At the most connections: closes the poller's connection that began its request longest
    /// ago, or idled longest, to make room for a new one; false when the poller holds none that
    /// is not sending an answer (they are all with the workers).
    private func evictOldest(from connections: inout [FastCGIConnection]) -> Bool {
        var oldest: (index: Int, since: Int64)?
        for (index, connection) in connections.enumerated() where !connection.hasPendingOutput {
            let since = connection.startedAt ?? connection.idleSince
            if oldest == nil || since < oldest!.since { oldest = (index, since) }
        }
        guard let oldest else { return false }
        closeConnection(connections.remove(at: oldest.index))
        logEviction("the one that began its request or idled longest ago was closed for a new one")
        return true
    }

    /// Says that the most connections were open, at most once a second (a peer that opens
    /// thousands would otherwise fill the log), with how many times since.
    private func logEviction(_ what: String) {
        evictions += 1
        let now = Clock.monotonicMilliseconds()
        guard now - lastEvictionLog >= 1000 else { return }
        log("\(Responder.maxConnections) connections were open; \(what) (\(evictions) times since the last such line)")
        lastEvictionLog = now
        evictions = 0
    }

    /// Closes a connection and lets go of the bytes it held.
    private func closeConnection(_ connection: FastCGIConnection) {
        held.subtract(connection.heldBytes, ordering: .relaxed)
        connection.close()
        open.subtract(1, ordering: .relaxed)
    }

    // MARK: - Workers

    private func workerLoop() {
        var answerer: RequestAnswerer?
        while let job = queue.pop() {
            let connection = job.connection
            let (bytes, keep) = serve(job) { request in
                if answerer == nil { answerer = makeAnswerer() }
                return answerer!.answer(request)
            }
            held.subtract(job.outcome.bytes, ordering: .relaxed)
            // Sent as far as the socket takes it now; a peer that does not read its answers gets
            // the rest from the poller, so it holds the answer's bytes and no worker.
            let sent = tracked(connection) { connection in
                connection.shrink()
                // An answer ready late still has a second to be taken.
                return connection.send(bytes, keep: keep, deadline: max(job.deadline, Clock.monotonicMilliseconds() + 1000))
            }
            if sent == .blocked || (sent == .done && keep && !stopping.load(ordering: .sequentiallyConsistent)) {
                returned.withLock { $0.append(connection) }
                var byte: UInt8 = 1
                _ = writeByte(wakeWrite, &byte)
            } else {
                closeConnection(connection)
            }
            inService.subtract(1, ordering: .sequentiallyConsistent)
        }
    }

    /// Answers a decided request (or its refusal): the records to write, and whether the
    /// connection stays open for another once they are taken.
    private func serve(_ job: Job, _ answer: (APIRequest) -> APIResponse) -> ([UInt8], Bool) {
        switch job.outcome {
        case .closed, .broken:
            return ([], false)
        case .aborted(let id, let keep):
            var out: [UInt8] = []
            FastCGI.appendEndRequest(requestID: id, to: &out)
            return (out, keep)
        case .refused(let id, let error):
            let response = error.response
            return (FastCGI.response(requestID: id, head: response.head(), body: response.body), false)
        case .request(let id, let keep, let parameters, let body):
            let response = answer(APIRequest(parameters: parameters, body: body))
            return (FastCGI.response(requestID: id, head: response.head(), body: response.body), keep)
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
