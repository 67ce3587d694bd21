import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Unsafe pointers here are C interop (recv(2) and send(2) on the connection's socket): kept.

/// The bounds every request is held to, whoever sent it.
public struct RequestLimits: Sendable {
    /// The largest body taken (nginx's `client_max_body_size` should refuse larger ones first).
    public var maxBody: Int
    /// Milliseconds from a request's first byte to the last byte of its answer. A request that has
    /// not arrived whole by then is answered 408; an answer not taken by then is abandoned.
    public var deadlineMs: Int64
    /// The most bytes of PARAMS (the request line's values and headers) taken.
    public var maxParams: Int
    /// The most bytes the responder holds for its connections, all together: each one's read
    /// buffer (16 KiB at least), requests arriving and those waiting for a worker, and answers
    /// the peers have not taken yet, counted by what was allocated. Past it, a request still
    /// arriving is answered 503 (busy) and its connection closed, so memory stays bounded however
    /// many peers send halves of large requests or never read their answers. 64 MiB: 64 whole
    /// bodies of 1 MiB at once, where nginx (which buffers a body before it passes it on) sends
    /// at most as many requests at once as it holds connections.
    public var maxHeld: Int

    /// Creates limits.
    public init(maxBody: Int = 1 << 20, deadlineMs: Int64 = 10_000, maxParams: Int = 64 << 10, maxHeld: Int = 64 << 20) {
        self.maxBody = maxBody
        self.deadlineMs = deadlineMs
        self.maxParams = maxParams
        self.maxHeld = maxHeld
    }
}

/// One connection from the web server: records in, records out. Owned by one thread at a time
/// (the poller while it is idle or while its request arrives, a worker while it answers),
/// handed between them through the responder's queues; hence `@unchecked Sendable`.
///
/// A request is assembled as its bytes come (`receive`, then `assemble`), never by a thread
/// waiting for them: the poller reads whatever a readable connection has and parses the whole
/// records in it, so a peer that sends part of a request and stops holds a little memory and no
/// thread.
final class FastCGIConnection: @unchecked Sendable {
    let fd: Int32
    /// Bytes read and not yet used; `start` is the first unused one.
    private var buffer: [UInt8] = []
    private var start = 0
    /// When it was last handed to the poller (monotonic ms), for closing long-idle ones.
    var idleSince: Int64 = 0
    /// When the request in progress began, its first byte (monotonic ms); nil between requests.
    private(set) var startedAt: Int64?
    /// When the request decided last began: its deadline runs on while it is answered.
    private(set) var decidedStartedAt: Int64 = 0

    /// The request being assembled: its id once BEGIN_REQUEST came, the keep flag, PARAMS'
    /// bytes, the parameters once PARAMS ended, and the body so far.
    private var requestID: UInt16?
    private var keep = false
    private var paramBytes: [UInt8] = []
    private var parameters: [String: String]?
    private var body: [UInt8] = []

    init(fd: Int32) {
        self.fd = fd
        buffer.reserveCapacity(16 << 10)
    }

    /// Whether bytes of a next request are already buffered (the peer sent it before our answer).
    var hasBufferedBytes: Bool { start < buffer.count }

    /// An answer the peer has not taken yet: its bytes and how many were sent; whether the
    /// connection stays open after it, and by when (monotonic ms) it must be taken.
    private var output: [UInt8] = []
    private var sent = 0
    private(set) var keepAfterOutput = false
    private(set) var outputDeadline: Int64 = 0

    /// The memory this connection holds for requests and answers: the capacity of its read
    /// buffer (16 KiB at least), of PARAMS and of the body so far, and an answer not yet taken.
    /// Capacities, not counts: what a peer makes the responder allocate is what is bounded.
    var heldBytes: Int { buffer.capacity + paramBytes.capacity + body.capacity + output.capacity }

    /// Whether an answer is waiting for the peer to take it.
    var hasPendingOutput: Bool { sent < output.count }

    /// Whether this connection has not yet carried a request: a peer that connects and sends
    /// nothing is closed at the deadline, not after the idle limit of a kept connection.
    private(set) var fresh = true

    /// Whether a request has begun to arrive and is not yet whole.
    var inProgress: Bool { startedAt != nil }

    /// Lets go of a buffer a large request grew, once nothing is buffered: a kept connection
    /// idles with 16 KiB, not with the 1 MiB of the last body it carried.
    func shrink() {
        guard start == buffer.count, buffer.capacity > 64 << 10 else { return }
        buffer = []
        buffer.reserveCapacity(16 << 10)
        start = 0
    }

    /// After a turn of reading: what is left of the buffer (a part of a record, 64 KiB at most)
    /// moves to the front of a buffer no larger than it needs, so a peer that sent 256 KiB in one
    /// turn does not keep the responder holding them.
    private func compact() {
        if start == buffer.count {
            if buffer.capacity > 64 << 10 {
                shrink()
            } else {
                buffer.removeAll(keepingCapacity: true)
                start = 0
            }
        } else if buffer.capacity > 128 << 10 {
            var rest: [UInt8] = []
            rest.reserveCapacity(max(16 << 10, buffer.count - start))
            rest += buffer[start...]
            buffer = rest
            start = 0
        }
    }

    /// Closes the socket.
    func close() {
        _ = closeDescriptor(fd)
    }

    /// What reading a request gave.
    enum Outcome {
        /// A whole request: its id, whether the connection is kept for another, PARAMS and body.
        case request(id: UInt16, keep: Bool, parameters: [String: String], body: [UInt8])
        /// A request that is answered with an error and not read further (the connection closes).
        case refused(id: UInt16, APIError)
        /// The web server aborted the request (ABORT_REQUEST): it wants only END_REQUEST.
        case aborted(id: UInt16, keep: Bool)
        /// The peer closed the connection between requests.
        case closed
        /// A read failed, the deadline passed before any request began, or the peer broke the
        /// protocol: close without an answer.
        case broken(String)

        /// The bytes of the request it carries (PARAMS values and body), for the responder's count.
        var bytes: Int {
            guard case .request(_, _, let parameters, let body) = self else { return 0 }
            return body.capacity + parameters.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
        }
    }

    /// What one `receive` found on the socket.
    enum Received {
        /// Bytes were read (and the socket may have more).
        case bytes(Int)
        /// Nothing now.
        case nothing
        /// The peer closed its end.
        case ended
        /// The read failed.
        case failed
    }

    /// Reads what the socket has now, at most `limit` bytes, through `scratch` (the poller's
    /// 64 KiB, so a connection's buffer grows only by what arrived); never waits. The first
    /// byte of a request starts its deadline.
    func receive(limit: Int, scratch: inout [UInt8]) -> Received {
        var total = 0
        while total < limit {
            let n = scratch.withUnsafeMutableBytes { recvBytes(fd, $0.baseAddress!, min($0.count, limit - total)) }
            if n > 0 {
                if start > 0, start == buffer.count || start > 64 << 10 {
                    buffer.removeFirst(start)
                    start = 0
                }
                buffer.append(contentsOf: scratch[0..<n])
                total += n
                continue
            }
            if n < 0, errno == EINTR { continue }
            if total > 0 { break }
            if n == 0 { return .ended }
            return errno == EAGAIN || errno == EWOULDBLOCK ? .nothing : .failed
        }
        if startedAt == nil { startedAt = Clock.monotonicMilliseconds() }
        return .bytes(total)
    }

    /// Parses the whole records buffered, answering management records (GET_VALUES) and refusing
    /// a second request multiplexed onto this connection; the outcome once the request is decided
    /// (the connection is then ready for the next), nil while more bytes are needed.
    func assemble(limits: RequestLimits) -> Outcome? {
        while buffer.count - start >= 8 {
            guard let header = FastCGI.Header(buffer[start...]) else { return finish(.broken("a record that is not FastCGI 1")) }
            guard buffer.count - start >= header.recordLength else { return nil }
            let content = Array(buffer[(start + 8)..<(start + 8 + header.contentLength)])
            start += header.recordLength
            if start == buffer.count {
                buffer.removeAll(keepingCapacity: true)
                start = 0
            }
            guard let type = FastCGI.RecordType(rawValue: header.type) else {
                guard reply({ FastCGI.appendRecord(.unknownType, requestID: 0, [UInt8(header.type), 0, 0, 0, 0, 0, 0, 0], to: &$0) }) else {
                    return finish(.broken("the peer does not read its answers"))
                }
                continue
            }
            if header.requestID == 0 {
                if type == .getValues, !answerGetValues(content) { return finish(.broken("the peer does not read its answers")) }
                continue
            }
            if let outcome = take(type, header.requestID, content, limits: limits) { return finish(outcome) }
        }
        compact()
        return nil
    }

    /// One record of a request: the outcome when it decides the request, else nil.
    private func take(_ type: FastCGI.RecordType, _ id: UInt16, _ content: [UInt8], limits: RequestLimits) -> Outcome? {
        switch type {
        case .beginRequest:
            guard content.count >= 8 else { return .broken("a short BEGIN_REQUEST") }
            let role = UInt16(content[0]) << 8 | UInt16(content[1])
            var refusal: [UInt8] = []
            if requestID != nil {
                // nginx never multiplexes; a peer that does is told so and the new request ignored.
                FastCGI.appendEndRequest(requestID: id, .cantMultiplex, to: &refusal)
            } else if role != FastCGI.responderRole {
                FastCGI.appendEndRequest(requestID: id, .unknownRole, to: &refusal)
            } else {
                requestID = id
                keep = content[2] & FastCGI.keepConnectionFlag != 0
            }
            if !refusal.isEmpty, !reply({ $0 = refusal }) { return .broken("the peer does not read its answers") }
        case .abortRequest where id == requestID:
            return .aborted(id: id, keep: keep)
        case .params where id == requestID && parameters == nil:
            if content.isEmpty {
                guard let pairs = FastCGI.nameValuePairs(paramBytes) else {
                    return .refused(
                        id: id, APIError(status: 400, reason: "bad_request", message: "the request's parameters could not be read"))
                }
                var values: [String: String] = [:]
                for pair in pairs {
                    values[String(decoding: pair.name, as: UTF8.self)] = String(decoding: pair.value, as: UTF8.self)
                }
                parameters = values
                paramBytes = []
                if let length = values["CONTENT_LENGTH"].flatMap({ Int($0) }), length > limits.maxBody {
                    return .refused(id: id, Self.tooLarge(limits))
                }
            } else {
                paramBytes += content
                if paramBytes.count > limits.maxParams {
                    return .refused(
                        id: id, APIError(status: 431, reason: "headers_too_large", message: "the request's headers are too large"))
                }
            }
        case .stdin where id == requestID:
            guard let parameters else { return .broken("STDIN before the end of PARAMS") }
            if content.isEmpty { return .request(id: id, keep: keep, parameters: parameters, body: body) }
            body += content
            if body.count > limits.maxBody { return .refused(id: id, Self.tooLarge(limits)) }
        default:
            break  // DATA, records of another request id, a second PARAMS stream: ignored
        }
        return nil
    }

    /// Ends the request in progress with `outcome`: the connection is ready for the next one.
    private func finish(_ outcome: Outcome) -> Outcome {
        fresh = false
        decidedStartedAt = startedAt ?? Clock.monotonicMilliseconds()
        requestID = nil
        keep = false
        paramBytes = []
        parameters = nil
        body = []
        // Bytes already here belong to the next request, whose deadline runs from now.
        startedAt = hasBufferedBytes ? Clock.monotonicMilliseconds() : nil
        return outcome
    }

    /// The request in progress missed its deadline: answered 408 when it had begun, else dropped.
    func timedOut(limits: RequestLimits) -> Outcome {
        guard let requestID else { return finish(.broken("no request arrived in time")) }
        return finish(
            .refused(
                id: requestID,
                APIError(status: 408, reason: "timeout", message: "the request did not arrive within \(limits.deadlineMs / 1000) s")))
    }

    /// Refuses the request in progress with `error` (the responder's own bound): answered when it
    /// had begun, else dropped; what it had is let go.
    func refuse(_ error: APIError) -> Outcome {
        guard let requestID else { return finish(.broken("\(error.message) (before a request began)")) }
        return finish(.refused(id: requestID, error))
    }

    /// The peer closed its end, or a read failed: a clean end between requests, else a broken one.
    func ended(failed: Bool) -> Outcome {
        if !failed, requestID == nil, start == buffer.count { return finish(.closed) }
        return finish(.broken(failed ? "reading the connection failed" : "the connection closed inside a request"))
    }

    /// Reads until one request is decided or `deadline` (monotonic ms) passes, waiting on the
    /// socket in between: the assembler driven by one thread, for tests of the codec.
    func readRequest(limits: RequestLimits, deadline: Int64) -> Outcome {
        var scratch = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            if let outcome = assemble(limits: limits) { return outcome }
            switch receive(limit: 1 << 20, scratch: &scratch) {
            case .bytes: continue
            case .ended: return ended(failed: false)
            case .failed: return ended(failed: true)
            case .nothing:
                guard wait(for: Int16(POLLIN), deadline: deadline) else {
                    return Clock.monotonicMilliseconds() >= deadline ? timedOut(limits: limits) : ended(failed: true)
                }
            }
        }
    }

    static func tooLarge(_ limits: RequestLimits) -> APIError {
        let size = limits.maxBody % (1 << 20) == 0 ? "\(limits.maxBody >> 20) MiB" : "\(limits.maxBody) bytes"
        return APIError(status: 413, reason: "too_large", message: "the request body is larger than \(size)")
    }

    /// Writes `bytes` whole by `deadline`; false when the peer went away or did not take them in time.
    func write(_ bytes: [UInt8], deadline: Int64) -> Bool {
        bytes.withUnsafeBytes { all in
            var offset = 0
            while offset < all.count {
                let n = sendBytes(fd, all.baseAddress! + offset, all.count - offset)
                if n > 0 {
                    offset += n
                    continue
                }
                if n < 0, errno == EINTR { continue }
                guard n < 0, errno == EAGAIN || errno == EWOULDBLOCK, wait(for: Int16(POLLOUT), deadline: deadline) else { return false }
            }
            return true
        }
    }

    /// What sending an answer came to.
    enum Sent {
        /// All of it was taken.
        case done
        /// The socket takes no more now: the rest waits for `flush`.
        case blocked
        /// The peer went away.
        case failed
    }

    /// Sends an answer as far as the socket takes it now, never waiting: a peer that does not
    /// read its answers holds the rest (counted in `heldBytes`) and no thread. `keep`: whether
    /// the connection stays open after it; `deadline`: by when it must be taken.
    func send(_ bytes: [UInt8], keep: Bool, deadline: Int64) -> Sent {
        output = bytes
        sent = 0
        keepAfterOutput = keep
        outputDeadline = deadline
        return flush()
    }

    /// Sends more of the answer waiting, as far as the socket takes it now.
    func flush() -> Sent {
        let result = output.withUnsafeBytes { all -> Sent in
            while sent < all.count {
                let n = sendBytes(fd, all.baseAddress! + sent, all.count - sent)
                if n > 0 {
                    sent += n
                    continue
                }
                if n < 0, errno == EINTR { continue }
                return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? .blocked : .failed
            }
            return .done
        }
        if result != .blocked {
            output = []
            sent = 0
        }
        return result
    }

    /// Waits until the socket is ready for `events` or the deadline passes.
    private func wait(for events: Int16, deadline: Int64) -> Bool {
        while true {
            let left = deadline - Clock.monotonicMilliseconds()
            guard left > 0 else { return false }
            var entry = pollfd(fd: fd, events: events, revents: 0)
            let ready = poll(&entry, 1, Int32(min(left, 60_000)))
            if ready > 0 { return true }
            if ready < 0, errno != EINTR { return false }
        }
    }

    // MARK: - Management records

    /// Writes records built by `build` now, without waiting (small management answers, sent from
    /// the poller): false when the socket would not take them at once.
    private func reply(_ build: (inout [UInt8]) -> Void) -> Bool {
        var out: [UInt8] = []
        build(&out)
        return write(out, deadline: 0)
    }

    /// Answers GET_VALUES (§4.1) with the variables it asks for that a responder knows; false
    /// when the answer could not be written at once.
    private func answerGetValues(_ content: [UInt8]) -> Bool {
        let known = ["FCGI_MAX_CONNS": "1024", "FCGI_MAX_REQS": "1024", "FCGI_MPXS_CONNS": "0"]
        let asked = FastCGI.nameValuePairs(content) ?? []
        let pairs = asked.compactMap { pair -> (String, String)? in
            let name = String(decoding: pair.name, as: UTF8.self)
            return known[name].map { (name, $0) }
        }
        let encoded = FastCGI.encodePairs(pairs)
        guard encoded.count <= FastCGI.maxContent else { return true }
        return reply { out in FastCGI.appendRecord(.getValuesResult, requestID: 0, encoded[...], to: &out) }
    }
}

/// close(2), recv(2) and send(2), named apart from the connection's own methods.
@inline(__always)
func closeDescriptor(_ fd: Int32) -> Int32 {
    #if canImport(Glibc)
        return Glibc.close(fd)
    #else
        return Darwin.close(fd)
    #endif
}

@inline(__always)
func recvBytes(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    recv(fd, buffer, count, 0)
}

@inline(__always)
func sendBytes(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
        return send(fd, buffer, count, Int32(MSG_NOSIGNAL))
    #else
        return send(fd, buffer, count, 0)
    #endif
}
