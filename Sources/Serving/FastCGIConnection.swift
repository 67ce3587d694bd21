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

    /// Creates limits.
    public init(maxBody: Int = 1 << 20, deadlineMs: Int64 = 10_000, maxParams: Int = 64 << 10) {
        self.maxBody = maxBody
        self.deadlineMs = deadlineMs
        self.maxParams = maxParams
    }
}

/// One connection from the web server: records in, records out. Owned by one thread at a time
/// (the poller while it is idle, a worker while it serves a request), handed between them
/// through the responder's queues; hence `@unchecked Sendable`.
final class FastCGIConnection: @unchecked Sendable {
    let fd: Int32
    /// Bytes read and not yet used; `start` is the first unused one.
    private var buffer: [UInt8] = []
    private var start = 0
    /// When it was last handed to the poller (monotonic ms), for closing long-idle ones.
    var idleSince: Int64 = 0

    init(fd: Int32) {
        self.fd = fd
        buffer.reserveCapacity(16 << 10)
    }

    /// Whether bytes of a next request are already buffered (the peer sent it before our answer).
    var hasBufferedBytes: Bool { start < buffer.count }

    /// Lets go of a buffer a large request grew, once nothing is buffered: a kept connection
    /// idles with 16 KiB, not with the 1 MiB of the last body it carried.
    func shrink() {
        guard start == buffer.count, buffer.capacity > 256 << 10 else { return }
        buffer = []
        buffer.reserveCapacity(16 << 10)
        start = 0
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
    }

    /// Reads records until one request is whole, answering management records (GET_VALUES) and
    /// refusing a second request multiplexed onto this connection, by `deadline` (monotonic ms).
    func readRequest(limits: RequestLimits, deadline: Int64) -> Outcome {
        var requestID: UInt16?
        var keep = false
        var paramBytes: [UInt8] = []
        var parameters: [String: String]?
        var body: [UInt8] = []
        while true {
            guard let header = nextHeader(deadline: deadline), let content = nextContent(header, deadline: deadline) else {
                return cutShort(requestID: requestID, limits: limits, deadline: deadline)
            }
            guard let type = FastCGI.RecordType(rawValue: header.type) else {
                reply { out in FastCGI.appendRecord(.unknownType, requestID: 0, [UInt8(header.type), 0, 0, 0, 0, 0, 0, 0], to: &out) }
                continue
            }
            if header.requestID == 0 {
                if type == .getValues { answerGetValues(content) }
                continue
            }
            switch type {
            case .beginRequest:
                guard content.count >= 8 else { return .broken("a short BEGIN_REQUEST") }
                let role = UInt16(content[0]) << 8 | UInt16(content[1])
                if requestID != nil {
                    // nginx never multiplexes; a peer that does is told so and the new request ignored.
                    reply { FastCGI.appendEndRequest(requestID: header.requestID, .cantMultiplex, to: &$0) }
                } else if role != FastCGI.responderRole {
                    reply { FastCGI.appendEndRequest(requestID: header.requestID, .unknownRole, to: &$0) }
                } else {
                    requestID = header.requestID
                    keep = content[2] & FastCGI.keepConnectionFlag != 0
                }
            case .abortRequest where header.requestID == requestID:
                return .aborted(id: header.requestID, keep: keep)
            case .params where header.requestID == requestID && parameters == nil:
                if content.isEmpty {
                    guard let pairs = FastCGI.nameValuePairs(paramBytes) else {
                        return .refused(
                            id: header.requestID,
                            APIError(status: 400, reason: "bad_request", message: "the request's parameters could not be read"))
                    }
                    var values: [String: String] = [:]
                    for pair in pairs {
                        values[String(decoding: pair.name, as: UTF8.self)] = String(decoding: pair.value, as: UTF8.self)
                    }
                    parameters = values
                    if let length = values["CONTENT_LENGTH"].flatMap({ Int($0) }), length > limits.maxBody {
                        return .refused(id: header.requestID, Self.tooLarge(limits))
                    }
                } else {
                    paramBytes += content
                    if paramBytes.count > limits.maxParams {
                        return .refused(
                            id: header.requestID,
                            APIError(status: 431, reason: "headers_too_large", message: "the request's headers are too large"))
                    }
                }
            case .stdin where header.requestID == requestID:
                guard let parameters else { return .broken("STDIN before the end of PARAMS") }
                if content.isEmpty { return .request(id: header.requestID, keep: keep, parameters: parameters, body: body) }
                body += content
                if body.count > limits.maxBody { return .refused(id: header.requestID, Self.tooLarge(limits)) }
            default:
                continue  // DATA, records of another request id, a second PARAMS stream: ignored
            }
        }
    }

    /// What a read that stopped short means: the peer closed between requests, a request that
    /// missed its deadline (answered 408), or a broken connection.
    private func cutShort(requestID: UInt16?, limits: RequestLimits, deadline: Int64) -> Outcome {
        if timedOut(deadline) {
            guard let requestID else { return .broken("no request arrived in time") }
            return .refused(
                id: requestID,
                APIError(
                    status: 408, reason: "timeout",
                    message: "the request did not arrive within \(limits.deadlineMs / 1000) s"))
        }
        if requestID == nil, lastReadWasEOF, start == buffer.count { return .closed }
        return .broken(lastReadWasEOF ? "the connection closed inside a request" : "reading the connection failed")
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

    // MARK: - Reading

    private var lastReadWasEOF = false

    private func timedOut(_ deadline: Int64) -> Bool { Clock.monotonicMilliseconds() >= deadline }

    /// The next record's header, reading as needed; the header stays in the buffer until `nextContent`.
    private func nextHeader(deadline: Int64) -> FastCGI.Header? {
        guard ensure(8, deadline: deadline) else { return nil }
        return FastCGI.Header(buffer[start...])
    }

    /// The content of the record whose header is buffered, its padding skipped.
    private func nextContent(_ header: FastCGI.Header, deadline: Int64) -> [UInt8]? {
        guard ensure(header.recordLength, deadline: deadline) else { return nil }
        let content = Array(buffer[(start + 8)..<(start + 8 + header.contentLength)])
        start += header.recordLength
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        return content
    }

    /// Makes `count` unread bytes available, reading until the deadline; false at end of input,
    /// a read error, or the deadline.
    private func ensure(_ count: Int, deadline: Int64) -> Bool {
        while buffer.count - start < count {
            if start > 0, start == buffer.count || start > 64 << 10 {
                buffer.removeFirst(start)
                start = 0
            }
            let old = buffer.count
            let want = max(64 << 10, count - (old - start))
            buffer.append(contentsOf: repeatElement(0, count: want))
            let n = buffer.withUnsafeMutableBytes { recvBytes(fd, $0.baseAddress! + old, want) }
            buffer.removeLast(want - max(n, 0))
            if n > 0 { continue }
            if n == 0 {
                lastReadWasEOF = true
                return false
            }
            if errno == EINTR { continue }
            guard errno == EAGAIN || errno == EWOULDBLOCK, wait(for: Int16(POLLIN), deadline: deadline) else { return false }
        }
        return true
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

    /// Writes records built by `build` at once (small management answers; failures show up later).
    private func reply(_ build: (inout [UInt8]) -> Void) {
        var out: [UInt8] = []
        build(&out)
        _ = write(out, deadline: Clock.monotonicMilliseconds() + 1000)
    }

    /// Answers GET_VALUES (§4.1) with the variables it asks for that a responder knows.
    private func answerGetValues(_ content: [UInt8]) {
        let known = ["FCGI_MAX_CONNS": "1024", "FCGI_MAX_REQS": "1024", "FCGI_MPXS_CONNS": "0"]
        let asked = FastCGI.nameValuePairs(content) ?? []
        let pairs = asked.compactMap { pair -> (String, String)? in
            let name = String(decoding: pair.name, as: UTF8.self)
            return known[name].map { (name, $0) }
        }
        let encoded = FastCGI.encodePairs(pairs)
        guard encoded.count <= FastCGI.maxContent else { return }
        reply { out in FastCGI.appendRecord(.getValuesResult, requestID: 0, encoded[...], to: &out) }
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
