import VitalsKit

/// A request refused with an HTTP status and a JSON error, `{"error": message, "reason": reason}`:
/// the one error writer of every API (OnlineTracker's, its device endpoints, Health Sync's).
public struct APIError: Error, Sendable {
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
    public static func method(_ method: String, allowed: [String]) -> APIError {
        APIError(
            status: 405, reason: "method_not_allowed", message: "\(method) is not allowed here; use \(allowed.joined(separator: " or "))",
            headers: [("Allow", allowed.joined(separator: ", "))])
    }

    /// A 404 for a path no route knows.
    public static func notFound(_ what: String = "no such resource") -> APIError {
        APIError(status: 404, reason: "not_found", message: what)
    }

    /// A 500 whose body says only that the server failed (the details go to the log).
    // swift-format-ignore: DontRepeatTypeInStaticProperties
    // HTTP's own name for the status (500 Internal Server Error); `internal` is a keyword.
    public static let internalError = APIError(status: 500, reason: "internal", message: "the server could not answer this request")

    /// The response that says so.
    public var response: APIResponse {
        var response = APIResponse.json(
            status: status, .object(JSONObject([JSONField("error", .string(message)), JSONField("reason", .string(reason))] + fields)))
        response.headers += headers
        return response
    }
}

/// An answer: a status, headers and a body. A responder writes it as FastCGI STDOUT records, a CGI
/// program on standard output; either way the web server turns the `Status:` line into the HTTP
/// status line.
public struct APIResponse: Sendable {
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
    public static func json(status: Int = 200, _ value: JSONValue) -> APIResponse {
        APIResponse(status: status, body: value.encoded() + [0x0A])
    }

    /// The CGI header block (RFC 3875 §6): Status, Content-Type, Content-Length, Cache-Control and
    /// the extra headers, each line ending CR LF, then a blank line.
    public func head() -> [UInt8] {
        var head = "Status: \(status) \(APIResponse.phrase(status))\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.count)\r\n"
        head += "Cache-Control: no-store\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        return Array(head.utf8)
    }

    /// The header block and the body, as a CGI program writes them.
    public func serialized() -> [UInt8] { head() + body }

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
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 413: return "Content Too Large"
        case 415: return "Unsupported Media Type"
        case 429: return "Too Many Requests"
        case 500: return "Internal Server Error"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        default: return "Status \(status)"
        }
    }
}
