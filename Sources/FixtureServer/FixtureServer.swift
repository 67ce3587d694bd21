import Foundation
import Synchronization
import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Unsafe pointers here are C interop (bind(2), getsockname(2) and send(2) take raw pointers): kept.

/// A request the fixture server received, for tests to assert on.
public struct RecordedRequest: Sendable, Equatable {
    /// The method.
    public var method: String
    /// The path with its query.
    public var path: String
    /// Header lines as received (`Name: value`).
    public var headers: [String]
    /// The body.
    public var body: [UInt8]

    /// The value of the first header named `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        let prefix = name.lowercased() + ":"
        guard let line = headers.first(where: { $0.lowercased().hasPrefix(prefix) }) else { return nil }
        return String(line.dropFirst(prefix.count)).trimmingCharacters(in: .whitespaces)
    }
}

/// A scripted HTTP/1.1 server on loopback for tests and the demo: healthy, slow, failing and
/// flapping endpoints, and hostile ones (slow headers, no answer, endless body, huge headers,
/// redirect loops, resets, garbage). One thread per connection; every response closes the
/// connection. The routes are listed in `FixtureServer.routes`.
public final class FixtureServer: Sendable {
    /// The port it listens on.
    public let port: Int
    /// The address it listens on (`127.0.0.1` or `::1`).
    public let host: String
    private let listenFDs: [Int32]
    private let log = Mutex<[RecordedRequest]>([])
    private let counters = Mutex<[String: Int]>([:])
    private let openConnections = Mutex<Set<Int32>>([])
    private let stopped = Atomic<Bool>(false)
    /// How long `/bytes/N` takes to send its body, in milliseconds (0: at once).
    public let bytesPaceMs: Int

    /// Every route, with what it does (the demo prints this list).
    public static let routes: [(String, String)] = [
        ("/ok", "200 with a short body"),
        ("/status/CODE", "answers CODE"),
        ("/delay/MS", "waits MS milliseconds, then 200"),
        ("/flap?period=N", "N answers 200, then N answers 503, and so on (default 1)"),
        ("/head-405, /head-501", "405 or 501 to HEAD, 200 to GET"),
        ("/head-reset, /head-close", "resets or closes on HEAD, 200 to GET"),
        ("/content?text=T", "200 with T inside an HTML body"),
        ("/body?size=N&needle=T", "200 with N bytes of body ending in T"),
        ("/bytes/N", "200 with N bytes of body (spread over the server's byte pace, when it has one)"),
        ("/fixed", "200 with a fixed body (for hash checks)"),
        ("/echo", "200 with the request echoed as JSON"),
        ("/redirect/N", "N redirects, then 200"),
        ("/redirect-loop", "redirects to itself forever"),
        ("/redirect-307", "307 to /echo: the method and body must be sent again"),
        ("/slow-headers?interval=MS", "sends the status line one byte per MS milliseconds (default 1000)"),
        ("/hang", "reads the request and never answers"),
        ("/endless", "200 with a body that never ends"),
        ("/huge-headers", "200 with 4 MiB of headers"),
        ("/huge-header-line", "200 with one header line of 4 MiB"),
        ("/reset", "resets the connection"),
        ("/close", "closes the connection without an answer"),
        ("/garbage", "answers bytes that are not HTTP"),
    ]

    /// The base URL, `http://127.0.0.1:PORT`.
    public var baseURL: String { host.contains(":") ? "http://[\(host)]:\(port)" : "http://\(host):\(port)" }

    /// Starts listening on `host` (and, with `alsoIPv6`, on `::1` at the same port) and
    /// serving on background threads. Port 0 picks a free port. With `bytesPaceMs`, `/bytes/N`
    /// sends its body in pieces after a pause each, so the body's last byte leaves at least that
    /// long after the headers, however fast the machine: a download whose duration (and so its
    /// speed's confidence) does not depend on the machine's speed.
    public init(host: String = "127.0.0.1", port: Int = 0, alsoIPv6: Bool = false, bytesPaceMs: Int = 0) throws {
        let first = try FixtureServer.listen(host: host, port: port)
        var fds = [first.fd]
        if alsoIPv6, let second = try? FixtureServer.listen(host: "::1", port: first.port) {
            fds.append(second.fd)
        }
        self.host = host
        self.port = first.port
        self.listenFDs = fds
        self.bytesPaceMs = max(0, bytesPaceMs)
        for fd in fds {
            Thread.detachNewThread { [self] in self.acceptLoop(fd) }
        }
    }

    deinit { stop() }

    /// Stops accepting and cuts every open connection.
    public func stop() {
        if stopped.exchange(true, ordering: .sequentiallyConsistent) { return }
        for fd in listenFDs {
            shutdown(fd, Int32(SHUT_RDWR))
            close(fd)
        }
        openConnections.withLock { fds in
            for fd in fds { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    /// The requests received so far, in arrival order.
    public var requests: [RecordedRequest] { log.withLock { $0 } }

    /// The requests received for `path` (query ignored).
    public func requests(for path: String) -> [RecordedRequest] {
        requests.filter { $0.path.split(separator: "?").first.map(String.init) == path }
    }

    // MARK: - Sockets

    private static func listen(host: String, port: Int) throws -> (fd: Int32, port: Int) {
        let isV6 = host.contains(":")
        let fd = socket(isV6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw FixtureError("socket: \(String(cString: strerror(errno)))") }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var bound: Int32
        if isV6 {
            setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &yes, socklen_t(MemoryLayout<Int32>.size))
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = in_port_t(UInt16(port).bigEndian)
            inet_pton(AF_INET6, host, &address.sin6_addr)
            bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            inet_pton(AF_INET, host, &address.sin_addr)
            bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        guard bound == 0 else {
            let message = String(cString: strerror(errno))
            close(fd)
            throw FixtureError("bind \(host):\(port): \(message)")
        }
        guard Glibc.listen(fd, 512) == 0 else {
            close(fd)
            throw FixtureError("listen: \(String(cString: strerror(errno)))")
        }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(fd, $0, &length) }
        }
        let chosen: UInt16 = withUnsafePointer(to: &storage) { pointer in
            if isV6 {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
            }
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
        return (fd, Int(chosen))
    }

    private func acceptLoop(_ listenFD: Int32) {
        while !stopped.load(ordering: .sequentiallyConsistent) {
            let client = accept(listenFD, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            var one: Int32 = 1
            setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            openConnections.withLock { _ = $0.insert(client) }
            Thread.detachNewThread { [self] in
                self.serve(client)
                self.openConnections.withLock { _ = $0.remove(client) }
            }
        }
    }

    // MARK: - HTTP

    private func serve(_ fd: Int32) {
        var closeNormally = true
        defer { if closeNormally { close(fd) } }
        guard let request = readRequest(fd) else { return }
        log.withLock { $0.append(request) }
        let pathOnly = String(request.path.split(separator: "?", maxSplits: 1).first ?? "")
        let query = FixtureServer.query(of: request.path)
        let parts = pathOnly.split(separator: "/").map(String.init)
        let isHead = request.method == "HEAD"

        switch parts.first ?? "" {
        case "", "ok":
            respond(fd, 200, body: Array((parts.isEmpty ? "vitals fixture server\n" : "ok\n").utf8), head: isHead)
        case "status":
            let code = parts.count > 1 ? Int(parts[1]) ?? 500 : 500
            respond(fd, code, body: Array("status \(code)\n".utf8), head: isHead)
        case "delay":
            let ms = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
            if ms > 0 { usleep(UInt32(min(ms, 600_000)) * 1000) }
            respond(fd, 200, body: Array("ok after \(ms)ms\n".utf8), head: isHead)
        case "flap":
            let period = max(1, Int(query["period"] ?? "1") ?? 1)
            let count = counters.withLock { counters -> Int in
                let value = counters[pathOnly, default: 0]
                counters[pathOnly] = value + 1
                return value
            }
            let failing = (count / period) % 2 == 1
            respond(fd, failing ? 503 : 200, body: Array((failing ? "flapping: down\n" : "flapping: up\n").utf8), head: isHead)
        case "head-405", "head-501":
            if isHead {
                respond(fd, parts[0] == "head-405" ? 405 : 501, body: [], head: true)
            } else {
                respond(fd, 200, body: Array("ok\n".utf8), head: false)
            }
        case "head-reset":
            if isHead {
                reset(fd)
                closeNormally = false
            } else {
                respond(fd, 200, body: Array("ok\n".utf8), head: false)
            }
        case "head-close":
            if !isHead { respond(fd, 200, body: Array("ok\n".utf8), head: false) }
        case "content":
            let text = query["text"] ?? ""
            respond(fd, 200, body: Array("<html><body><p>\(text)</p></body></html>\n".utf8), head: isHead)
        case "body":
            let size = max(0, Int(query["size"] ?? "0") ?? 0)
            let needle = Array((query["needle"] ?? "").utf8)
            var body = [UInt8](repeating: UInt8(ascii: "a"), count: max(size - needle.count, 0))
            body.append(contentsOf: needle)
            respond(fd, 200, body: body, head: isHead)
        case "bytes":
            let size = parts.count > 1 ? max(0, Int(parts[1]) ?? 0) : 0
            let body = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
            if bytesPaceMs > 0 && !isHead {
                sendPaced(fd, body)
            } else {
                respond(fd, 200, body: body, head: isHead, contentType: "application/octet-stream")
            }
        case "fixed":
            respond(fd, 200, body: Array(FixtureServer.fixedBody.utf8), head: isHead)
        case "echo":
            var object: [String: Any] = ["method": request.method, "path": request.path, "headers": request.headers]
            object["body"] = String(decoding: request.body, as: UTF8.self)
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
            respond(fd, 200, body: Array(data), head: isHead, contentType: "application/json")
        case "redirect":
            let remaining = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
            if remaining <= 0 {
                respond(fd, 200, body: Array("redirected\n".utf8), head: isHead)
            } else {
                respond(fd, 302, body: [], head: isHead, extraHeaders: ["Location: /redirect/\(remaining - 1)"])
            }
        case "redirect-loop":
            respond(fd, 302, body: [], head: isHead, extraHeaders: ["Location: /redirect-loop"])
        case "redirect-307":
            respond(fd, 307, body: [], head: isHead, extraHeaders: ["Location: /echo"])
        case "slow-headers":
            let interval = max(1, Int(query["interval"] ?? "1000") ?? 1000)
            let line = Array("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n".utf8)
            for byte in line {
                if stopped.load(ordering: .sequentiallyConsistent) { return }
                var value = byte
                if send(fd, &value, 1, Int32(MSG_NOSIGNAL)) <= 0 { return }
                usleep(UInt32(interval) * 1000)
            }
        case "hang":
            waitForClose(fd)
        case "endless":
            let head = Array("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n".utf8)
            if !sendAll(fd, head) { return }
            let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 64 * 1024)
            while !stopped.load(ordering: .sequentiallyConsistent), sendAll(fd, chunk) {}
        case "huge-headers":
            // Sent as it is made, 64 KiB at a time: the first bytes leave at once, however slow the machine.
            var head = Array("HTTP/1.1 200 OK\r\n".utf8)
            let filler = [UInt8](repeating: UInt8(ascii: "f"), count: 1000)
            for index in 0..<4096 {
                head.append(contentsOf: "X-Filler-\(index): ".utf8)
                head.append(contentsOf: filler)
                head.append(contentsOf: [13, 10])
                if head.count >= 64 * 1024 {
                    guard sendAll(fd, head) else { return }
                    head.removeAll(keepingCapacity: true)
                }
            }
            head.append(contentsOf: "Content-Length: 3\r\nConnection: close\r\n\r\nok\n".utf8)
            _ = sendAll(fd, head)
        case "huge-header-line":
            guard sendAll(fd, Array("HTTP/1.1 200 OK\r\nX-Filler: ".utf8)) else { return }
            let filler = [UInt8](repeating: UInt8(ascii: "f"), count: 64 * 1024)
            for _ in 0..<64 { guard sendAll(fd, filler) else { return } }
            _ = sendAll(fd, Array("\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n".utf8))
        case "reset":
            reset(fd)
            closeNormally = false
        case "close":
            return
        case "garbage":
            _ = sendAll(fd, Array("\u{01}\u{02}SSH-2.0-not-http \u{7f}garbage\r\n\r\n".utf8))
        default:
            respond(fd, 404, body: Array("no such fixture: \(pathOnly)\n".utf8), head: isHead)
        }
    }

    /// The body `/fixed` serves.
    public static let fixedBody = "vitals fixture body\n"

    private func respond(
        _ fd: Int32, _ code: Int, body: [UInt8], head: Bool, contentType: String = "text/plain",
        extraHeaders: [String] = []
    ) {
        var text =
            "HTTP/1.1 \(code) \(FixtureServer.phrase(code))\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.count)\r\nConnection: close\r\n"
        for header in extraHeaders { text += header + "\r\n" }
        text += "\r\n"
        var bytes = Array(text.utf8)
        if !head { bytes.append(contentsOf: body) }
        _ = sendAll(fd, bytes)
    }

    /// The headers at once, then the body in up to `pacePieces` pieces, each after an equal share
    /// of `bytesPaceMs`: the last byte leaves no sooner than `bytesPaceMs` after the headers.
    private func sendPaced(_ fd: Int32, _ body: [UInt8]) {
        let head = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        guard sendAll(fd, Array(head.utf8)) else { return }
        let pieces = max(1, min(FixtureServer.pacePieces, body.count))
        let pause = UInt32((bytesPaceMs * 1000 + pieces - 1) / pieces)
        var offset = 0
        for piece in 1...pieces {
            usleep(pause)
            if stopped.load(ordering: .sequentiallyConsistent) { return }
            let end = body.count * piece / pieces
            guard sendAll(fd, Array(body[offset..<end])) else { return }
            offset = end
        }
    }

    /// How many pieces a paced body is sent in, at most.
    static let pacePieces = 20

    private func reset(_ fd: Int32) {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close(fd)
    }

    private func waitForClose(_ fd: Int32) {
        var scratch = [UInt8](repeating: 0, count: 4096)
        while !stopped.load(ordering: .sequentiallyConsistent) {
            let count = recv(fd, &scratch, scratch.count, 0)
            if count <= 0 { return }
        }
    }

    private func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += sent
        }
        return true
    }

    private func readRequest(_ fd: Int32) -> RecordedRequest? {
        var buffer: [UInt8] = []
        var scratch = [UInt8](repeating: 0, count: 8192)
        var headerEnd: Int?
        while headerEnd == nil {
            let count = recv(fd, &scratch, scratch.count, 0)
            if count <= 0 { return nil }
            buffer.append(contentsOf: scratch[0..<count])
            if buffer.count > 1 << 20 { return nil }
            if buffer.count >= 4 {
                for index in max(0, buffer.count - count - 3)...(buffer.count - 4)
                where buffer[index] == 13 && buffer[index + 1] == 10 && buffer[index + 2] == 13 && buffer[index + 3] == 10 {
                    headerEnd = index
                    break
                }
            }
        }
        let head = String(decoding: buffer[0..<headerEnd!], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count >= 2 else { return nil }
        var request = RecordedRequest(method: String(requestLine[0]), path: String(requestLine[1]), headers: lines, body: [])
        var body = Array(buffer[(headerEnd! + 4)...])
        if let length = request.header("Content-Length").flatMap({ Int($0) }), length > 0 {
            while body.count < length {
                let count = recv(fd, &scratch, scratch.count, 0)
                if count <= 0 { break }
                body.append(contentsOf: scratch[0..<count])
            }
        }
        request.body = body
        return request
    }

    static func query(of path: String) -> [String: String] {
        guard let question = path.firstIndex(of: "?") else { return [:] }
        var result: [String: String] = [:]
        for pair in path[path.index(after: question)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            let key = String(parts[0])
            let value = parts.count > 1 ? URLText.percentDecoded(parts[1]) : ""
            result[key] = value.replacingOccurrences(of: "+", with: " ")
        }
        return result
    }

    static func phrase(_ code: Int) -> String {
        switch code {
        case 200: return "OK"
        case 204: return "No Content"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 304: return "Not Modified"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 429: return "Too Many Requests"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        default: return "Status"
        }
    }
}

/// A fixture server could not start.
public struct FixtureError: Error, CustomStringConvertible {
    /// Why.
    public let description: String
    init(_ description: String) { self.description = description }
}
