import Testing
import VitalsKit

@testable import Serving

#if canImport(Glibc)
    import Glibc
#endif

@Suite("FastCGI records, worked by hand from the specification")
struct FastCGIRecordTests {
    @Test("name-value pairs (FastCGI 1.0 §3.4): one-byte lengths below 128, four bytes with the top bit set from 128")
    func pairs() throws {
        // "A"=>"bc": lengths 1 and 2, then the bytes.
        #expect(FastCGI.encodePairs([("A", "bc")]) == [1, 2, 0x41, 0x62, 0x63])
        // A 200-byte value: its length is 0x80 0x00 0x00 0xC8.
        let long = String(repeating: "v", count: 200)
        let encoded = FastCGI.encodePairs([("K", long)])
        #expect(Array(encoded.prefix(6)) == [1, 0x80, 0x00, 0x00, 0xC8, 0x4B])
        let decoded = try #require(FastCGI.nameValuePairs(encoded + FastCGI.encodePairs([("", "")])))
        #expect(decoded.count == 2 && decoded[0].name == [0x4B] && decoded[0].value.count == 200 && decoded[1].name.isEmpty)
        // A length that runs past the end is no pair at all.
        #expect(FastCGI.nameValuePairs([5, 1, 0x41]) == nil)
        #expect(FastCGI.nameValuePairs([0x80, 0, 0]) == nil)
    }

    @Test("a record is its 8-byte header, the content and padding to a multiple of 8")
    func records() {
        var out: [UInt8] = []
        FastCGI.appendRecord(.stdout, requestID: 0x0102, [0x41, 0x42, 0x43], to: &out)
        #expect(out == [1, 6, 0x01, 0x02, 0x00, 0x03, 5, 0, 0x41, 0x42, 0x43, 0, 0, 0, 0, 0])
        var end: [UInt8] = []
        FastCGI.appendEndRequest(requestID: 1, appStatus: 0x0102_0304, .cantMultiplex, to: &end)
        #expect(end == [1, 3, 0, 1, 0, 8, 0, 0, 1, 2, 3, 4, 1, 0, 0, 0])
    }

    @Test("an answer of 130,000 bytes: STDOUT records of at most 65,528 bytes, the empty one, END_REQUEST")
    func response() {
        let body = [UInt8](repeating: 0x78, count: 130_000)
        let head = Array("Status: 200 OK\r\n\r\n".utf8)
        let bytes = FastCGI.response(requestID: 9, head: head, body: body)
        var index = 0
        var stdout: [UInt8] = []
        var types: [UInt8] = []
        while index < bytes.count {
            let header = FastCGI.Header(bytes[index...])!
            #expect(header.contentLength <= 65_528 && header.requestID == 9)
            types.append(header.type)
            if header.type == 6 { stdout += bytes[(index + 8)..<(index + 8 + header.contentLength)] }
            index += header.recordLength
        }
        #expect(index == bytes.count)
        // 18 + 130,000 bytes: 65,528 and 64,490, the empty record that ends the stream, END_REQUEST.
        #expect(types == [6, 6, 6, 3])
        #expect(stdout == head + body)
    }
}

/// A connection over one end of a socket pair, the test writing the web server's side on the other.
final class SocketPair {
    let responder: Int32
    let peer: Int32
    init() throws {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else { throw ToolError("socketpair failed") }
        responder = fds[0]
        peer = fds[1]
        setNonBlocking(responder)
    }
    deinit {
        close(responder)
        close(peer)
    }
    func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Streams.writeAll(peer, $0) }
    }
    /// A request's records as nginx sends them.
    static func request(id: UInt16 = 1, keep: Bool = true, parameters: [(String, String)], body: [UInt8] = [], role: UInt16 = 1) -> [UInt8]
    {
        var out: [UInt8] = []
        FastCGI.appendRecord(.beginRequest, requestID: id, [UInt8(role >> 8), UInt8(role & 0xFF), keep ? 1 : 0, 0, 0, 0, 0, 0], to: &out)
        FastCGI.appendRecord(.params, requestID: id, FastCGI.encodePairs(parameters)[...], to: &out)
        FastCGI.appendRecord(.params, requestID: id, [], to: &out)
        FastCGI.appendStream(.stdin, requestID: id, body, to: &out)
        FastCGI.appendRecord(.stdin, requestID: id, [], to: &out)
        return out
    }
    /// What the responder wrote so far.
    func received() -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var entry = pollfd(fd: peer, events: Int16(POLLIN), revents: 0)
        while poll(&entry, 1, 50) > 0 {
            let n = recv(peer, &buffer, buffer.count, 0)
            guard n > 0 else { break }
            out += buffer[0..<n]
        }
        return out
    }
}

@Suite("a FastCGI connection: whole requests within their limits")
struct FastCGIConnectionTests {
    let limits = RequestLimits(maxBody: 100, deadlineMs: 300, maxParams: 200)

    @Test("a whole request: its parameters and body, and whether the connection is kept; then a clean end")
    func wholeRequest() throws {
        let pair = try SocketPair()
        let connection = FastCGIConnection(fd: pair.responder)
        pair.send(SocketPair.request(parameters: [("REQUEST_METHOD", "POST"), ("CONTENT_LENGTH", "5")], body: Array("hello".utf8)))
        guard
            case .request(let id, let keep, let parameters, let body) = connection.readRequest(
                limits: limits, deadline: Clock.monotonicMilliseconds() + 2000)
        else {
            Issue.record("no request")
            return
        }
        #expect(id == 1 && keep && parameters["REQUEST_METHOD"] == "POST" && body == Array("hello".utf8))
        shutdown(pair.peer, Int32(SHUT_WR))
        guard case .closed = connection.readRequest(limits: limits, deadline: Clock.monotonicMilliseconds() + 2000) else {
            Issue.record("the peer's end is a clean close")
            return
        }
    }

    @Test("a body over the limit is a 413 as soon as CONTENT_LENGTH says so, or as soon as the bytes do")
    func tooLarge() throws {
        for declared in ["101", "5"] {
            let pair = try SocketPair()
            let connection = FastCGIConnection(fd: pair.responder)
            pair.send(SocketPair.request(parameters: [("CONTENT_LENGTH", declared)], body: [UInt8](repeating: 0x20, count: 101)))
            guard case .refused(_, let error) = connection.readRequest(limits: limits, deadline: Clock.monotonicMilliseconds() + 2000)
            else {
                Issue.record("declared \(declared): not refused")
                continue
            }
            #expect(error.status == 413 && error.reason == "too_large" && error.message == "the request body is larger than 100 bytes")
        }
    }

    @Test("a request that has not arrived whole by its deadline is a 408; parameters over their limit a 431")
    func deadlineAndParameters() throws {
        let pair = try SocketPair()
        let connection = FastCGIConnection(fd: pair.responder)
        let whole = SocketPair.request(parameters: [("CONTENT_LENGTH", "4")], body: Array("abcd".utf8))
        pair.send(Array(whole.prefix(whole.count - 12)))  // the body's record, short
        guard case .refused(_, let error) = connection.readRequest(limits: limits, deadline: Clock.monotonicMilliseconds() + 300) else {
            Issue.record("a stalled request is refused at its deadline")
            return
        }
        #expect(error.status == 408)
        let second = try SocketPair()
        let other = FastCGIConnection(fd: second.responder)
        second.send(SocketPair.request(parameters: [("HTTP_X", String(repeating: "y", count: 300))]))
        guard case .refused(_, let big) = other.readRequest(limits: limits, deadline: Clock.monotonicMilliseconds() + 2000) else {
            Issue.record("parameters over the limit are refused")
            return
        }
        #expect(big.status == 431)
    }

    @Test("management records are answered, another role and a multiplexed request refused, and the request still read")
    func protocolCorners() throws {
        let pair = try SocketPair()
        let connection = FastCGIConnection(fd: pair.responder)
        var out: [UInt8] = []
        FastCGI.appendRecord(.getValues, requestID: 0, FastCGI.encodePairs([("FCGI_MPXS_CONNS", ""), ("FCGI_UNKNOWN", "")])[...], to: &out)
        out += SocketPair.request(id: 3, parameters: [("A", "1")], role: 2)  // an authorizer: not ours
        // Request 1 begins; request 2 tries to share the connection.
        var first = SocketPair.request(id: 1, parameters: [("REQUEST_URI", "/one")])
        first.removeLast(8)  // hold back the empty STDIN record that ends the request
        out += first
        FastCGI.appendRecord(.beginRequest, requestID: 2, [0, 1, 0, 0, 0, 0, 0, 0], to: &out)
        FastCGI.appendRecord(.stdin, requestID: 1, [], to: &out)
        pair.send(out)
        guard
            case .request(let id, _, let parameters, _) = connection.readRequest(
                limits: limits, deadline: Clock.monotonicMilliseconds() + 2000)
        else {
            Issue.record("request 1 is read")
            return
        }
        #expect(id == 1 && parameters["REQUEST_URI"] == "/one")
        let answers = pair.received()
        // GET_VALUES_RESULT with FCGI_MPXS_CONNS=0 only; END_REQUEST UNKNOWN_ROLE for 3; CANT_MPX_CONN for 2.
        let values = FastCGI.encodePairs([("FCGI_MPXS_CONNS", "0")])
        var expected: [UInt8] = []
        FastCGI.appendRecord(.getValuesResult, requestID: 0, values[...], to: &expected)
        FastCGI.appendEndRequest(requestID: 3, .unknownRole, to: &expected)
        FastCGI.appendEndRequest(requestID: 2, .cantMultiplex, to: &expected)
        #expect(answers == expected)
    }
}
