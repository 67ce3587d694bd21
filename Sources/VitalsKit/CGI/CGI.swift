import Foundation

/// One HTTP request as a CGI program receives it (RFC 3875): the request line and headers in
/// environment variables, the body on standard input. nginx hands requests to the tools through
/// fcgiwrap, which runs the program with no arguments for each request; `VitalsCommand.main`
/// then runs the tool's `cgi` subcommand, which builds one of these and answers with a `CGIResponse`.
public struct CGIRequest: Sendable {
    /// `GET`, `POST`, ... (REQUEST_METHOD).
    public let method: String
    /// The path's segments, each percent-decoded on its own (so `%2F` stays inside its segment),
    /// empty segments dropped: `/api/monitors/a%2Fb/history` is `["api", "monitors", "a/b", "history"]`.
    public let segments: [String]
    /// The path as the client sent it, without the query (from REQUEST_URI, else DOCUMENT_URI).
    public let rawPath: String
    /// The query's name=value pairs in order, percent-decoded (`+` is a space).
    public let query: [(name: String, value: String)]
    /// The whole CGI environment: HTTP_* headers, HTTPS, SSL_* values nginx was told to pass, ...
    public let environment: [String: String]
    /// The body (CONTENT_LENGTH bytes of standard input).
    public let body: [UInt8]

    /// Creates a request from its parts (tests, and `read`).
    public init(method: String, rawPath: String, query: String = "", environment: [String: String] = [:], body: [UInt8] = []) {
        self.method = method.uppercased()
        self.rawPath = rawPath
        self.segments = rawPath.split(separator: "/", omittingEmptySubsequences: true).map { CGIRequest.decode(Substring($0), plus: false) }
        self.query = query.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (CGIRequest.decode(parts[0], plus: true), parts.count > 1 ? CGIRequest.decode(parts[1], plus: true) : "")
        }
        self.environment = environment
        self.body = body
    }

    /// Reads the request of this process: the environment, and CONTENT_LENGTH bytes from `input`
    /// (at most `maxBody`; nginx caps bodies before they get here, this is the second fence).
    public static func read(environment: [String: String], input: Int32, maxBody: Int = 16 << 20) throws -> CGIRequest {
        let uri = environment["REQUEST_URI"] ?? environment["DOCUMENT_URI"] ?? environment["PATH_INFO"] ?? "/"
        let pathPart = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? "/"
        let query = environment["QUERY_STRING"]
            ?? (uri.firstIndex(of: "?").map { String(uri[uri.index(after: $0)...]) } ?? "")
        let length = Int(environment["CONTENT_LENGTH"] ?? "") ?? 0
        guard length <= maxBody else { throw CGIError(status: 413, reason: "too_large", message: "the request body is larger than \(maxBody) bytes") }
        var body = [UInt8](repeating: 0, count: max(length, 0))
        var got = 0
        while got < body.count {
            let n = body.withUnsafeMutableBytes { Foundation.read(input, $0.baseAddress! + got, $0.count - got) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { break }
            got += n
        }
        guard got == body.count else { throw CGIError(status: 400, reason: "short_body", message: "the body ended after \(got) of \(length) bytes") }
        return CGIRequest(method: environment["REQUEST_METHOD"] ?? "GET", rawPath: pathPart, query: query, environment: environment, body: body)
    }

    /// The value of the first query parameter `name`, or nil.
    public func parameter(_ name: String) -> String? { query.first { $0.name == name }?.value }

    /// An HTTP header by name, case-insensitive (`Authorization` reads HTTP_AUTHORIZATION).
    public func header(_ name: String) -> String? {
        environment["HTTP_" + name.uppercased().replacingOccurrences(of: "-", with: "_")]
    }

    /// Percent-decodes `text`; a malformed escape is kept as it is.
    static func decode(_ text: Substring, plus: Bool) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = Array(text.utf8)[...]
        while let byte = iterator.popFirst() {
            if byte == UInt8(ascii: "%"), iterator.count >= 2,
               let high = hexValue(iterator[iterator.startIndex]), let low = hexValue(iterator[iterator.startIndex + 1]) {
                bytes.append(high << 4 | low)
                iterator = iterator.dropFirst(2)
            } else if plus, byte == UInt8(ascii: "+") {
                bytes.append(0x20)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

/// A request refused with an HTTP status and a JSON error (`{"error": message, "reason": reason}`).
public struct CGIError: Error, Sendable {
    /// The HTTP status.
    public let status: Int
    /// A stable word for programs (`bad_parameter`, `not_found`, ...).
    public let reason: String
    /// What went wrong, in words for people; never internals or secrets.
    public let message: String
    /// Extra response headers (`Allow` on a 405, `Retry-After` on a 503).
    public let headers: [(String, String)]
    /// Extra fields of the JSON error, after error and reason.
    public let fields: [JSONField]

    /// Creates an error.
    public init(status: Int, reason: String, message: String, headers: [(String, String)] = [], fields: [JSONField] = []) {
        self.status = status
        self.reason = reason
        self.message = message
        self.headers = headers
        self.fields = fields
    }

    /// A 405 naming the methods the resource takes.
    public static func method(_ method: String, allowed: [String]) -> CGIError {
        CGIError(status: 405, reason: "method_not_allowed", message: "\(method) is not allowed here; use \(allowed.joined(separator: " or "))",
                 headers: [("Allow", allowed.joined(separator: ", "))])
    }

    /// A 404 for a path no route knows.
    public static func notFound(_ what: String = "no such resource") -> CGIError {
        CGIError(status: 404, reason: "not_found", message: what)
    }

    /// The response that says so.
    public var response: CGIResponse {
        var response = CGIResponse.json(status: status, .object(JSONObject([JSONField("error", .string(message)), JSONField("reason", .string(reason))] + fields)))
        response.headers += headers
        return response
    }
}

/// The answer of a CGI program: a status, headers and a body, written to standard output
/// with a `Status:` header line that fcgiwrap and nginx turn into the HTTP status line.
public struct CGIResponse: Sendable {
    /// The HTTP status.
    public var status: Int
    /// Headers besides Status, Content-Type and Content-Length.
    public var headers: [(String, String)]
    /// The media type of the body.
    public var contentType: String
    /// The body.
    public var body: [UInt8]

    /// Creates a response.
    public init(status: Int, contentType: String = "application/json", headers: [(String, String)] = [], body: [UInt8]) {
        self.status = status
        self.contentType = contentType
        self.headers = headers
        self.body = body
    }

    /// A JSON response of `value`, with a newline after it as the command line prints it.
    public static func json(status: Int = 200, _ value: JSONValue) -> CGIResponse {
        CGIResponse(status: status, body: value.encoded() + [0x0A])
    }

    /// The bytes of the CGI answer: headers, a blank line, the body.
    public func serialized() -> [UInt8] {
        var head = "Status: \(status) \(CGIResponse.phrase(status))\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.count)\r\n"
        head += "Cache-Control: no-store\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        return Array(head.utf8) + body
    }

    /// The reason phrase of the statuses the tools answer with.
    public static func phrase(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 201: return "Created"
        case 204: return "No Content"
        case 207: return "Multi-Status"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 409: return "Conflict"
        case 413: return "Content Too Large"
        case 415: return "Unsupported Media Type"
        case 429: return "Too Many Requests"
        case 500: return "Internal Server Error"
        case 503: return "Service Unavailable"
        default: return "Status \(status)"
        }
    }
}

extension CGIRequest {
    /// Runs `answer` on this process's request and writes its response (or the JSON error it threw)
    /// to `output`. Anything thrown that is not a `CGIError` becomes a 500 whose body says only that
    /// the server failed; the details go to `diagnostics` (nginx's error log), never to the client.
    public static func serve(environment: [String: String], input: Int32, output: Int32, diagnostics: Diagnostics,
                             _ answer: (CGIRequest) throws -> CGIResponse) -> ExitStatus {
        let response: CGIResponse
        do {
            response = try answer(try CGIRequest.read(environment: environment, input: input))
        } catch let error as CGIError {
            response = error.response
        } catch {
            diagnostics.error("\(environment["REQUEST_METHOD"] ?? "?") \(environment["DOCUMENT_URI"] ?? "?"): \(error)")
            response = CGIError(status: 500, reason: "internal", message: "the server could not answer this request").response
        }
        let bytes = response.serialized()
        _ = bytes.withUnsafeBytes { Streams.writeAll(output, $0) }
        return response.status >= 500 ? .failure : .success
    }
}
