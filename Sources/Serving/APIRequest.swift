import VitalsKit

/// One HTTP request as the web server hands it on, through FastCGI or CGI alike: the method,
/// the path, the query, the parameters the server passed (RFC 3875's meta-variables: HTTP_*
/// headers, HTTPS, SSL_* values) and the body.
///
/// Nothing here names a program, a file or a database: a responder is started for one store or
/// archive, and whatever a request carries (SCRIPT_FILENAME, a VITALS_DB parameter) only
/// describes the request.
public struct APIRequest: Sendable {
    /// `GET`, `POST`, ... (REQUEST_METHOD), upper case.
    public let method: String
    /// The path's segments, each percent-decoded on its own (so `%2F` stays inside its segment),
    /// empty and `.` segments dropped and `..` removing the one before (RFC 3986 §5.2.4, as nginx
    /// resolves the path it routes on): `/api/monitors/a%2Fb/history` is
    /// `["api", "monitors", "a/b", "history"]`, `/api/v1/pair/../pair` is `["api", "v1", "pair"]`.
    public let segments: [String]
    /// The path as the client sent it, without the query.
    public let rawPath: String
    /// The query's name=value pairs in order, percent-decoded (`+` is a space).
    public let query: [(name: String, value: String)]
    /// The parameters the web server passed: HTTP_* headers, HTTPS, SSL_* values, REMOTE_ADDR, ...
    public let parameters: [String: String]
    /// The body.
    public let body: [UInt8]

    /// Creates a request from its parts.
    public init(method: String, rawPath: String, query: String = "", parameters: [String: String] = [:], body: [UInt8] = []) {
        self.method = method.uppercased()
        self.rawPath = rawPath
        var segments: [String] = []
        for part in rawPath.split(separator: "/", omittingEmptySubsequences: true) {
            let segment = URLText.percentDecoded(part)
            if segment == ".." {
                _ = segments.popLast()
            } else if segment != "." {
                segments.append(segment)
            }
        }
        self.segments = segments
        self.query = query.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (
                URLText.percentDecoded(parts[0], plusAsSpace: true),
                parts.count > 1 ? URLText.percentDecoded(parts[1], plusAsSpace: true) : ""
            )
        }
        self.parameters = parameters
        self.body = body
    }

    /// A request from the web server's parameters (FastCGI PARAMS, or a CGI environment) and its
    /// body: the path from REQUEST_URI (as the client wrote it), else DOCUMENT_URI; the query from
    /// QUERY_STRING, else the part of REQUEST_URI after `?`.
    public init(parameters: [String: String], body: [UInt8]) {
        let uri = parameters["REQUEST_URI"].flatMap { $0.isEmpty ? nil : $0 } ?? parameters["DOCUMENT_URI"] ?? "/"
        let pathPart = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? "/"
        let query = parameters["QUERY_STRING"] ?? (uri.firstIndex(of: "?").map { String(uri[uri.index(after: $0)...]) } ?? "")
        self.init(method: parameters["REQUEST_METHOD"] ?? "GET", rawPath: pathPart, query: query, parameters: parameters, body: body)
    }

    /// The value of the first query parameter `name`, or nil.
    public func parameter(_ name: String) -> String? { query.first { $0.name == name }?.value }

    /// An HTTP header by name, case-insensitive (`Authorization` reads HTTP_AUTHORIZATION).
    public func header(_ name: String) -> String? {
        parameters["HTTP_" + name.uppercased().replacingOccurrences(of: "-", with: "_")]
    }

    /// The bearer token of the Authorization header (`Bearer TOKEN`, the scheme in any case), or nil.
    public var bearerToken: String? {
        guard let header = header("Authorization"), header.utf8.count > 7, header.prefix(7).lowercased() == "bearer " else { return nil }
        let token = header.dropFirst(7).trimmingSpaces
        return token.isEmpty ? nil : token
    }

    /// A whole-number query parameter in `range`, or `defaultValue` when absent; anything else is
    /// a 400 naming the parameter and the range.
    public func integer(_ name: String, default defaultValue: Int, in range: ClosedRange<Int>) throws(APIError) -> Int {
        guard let text = parameter(name) else { return defaultValue }
        guard text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let number = Int(text), range.contains(number) else {
            throw APIError(
                status: 400, reason: "bad_parameter",
                message: "\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound)",
                fields: [JSONField("parameter", .string(name))])
        }
        return number
    }
}

extension Substring {
    /// The text without leading and trailing spaces and tabs.
    var trimmingSpaces: String {
        var text = self
        while let first = text.first, first == " " || first == "\t" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        return String(text)
    }
}
