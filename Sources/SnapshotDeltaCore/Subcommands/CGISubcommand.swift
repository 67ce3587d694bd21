import Foundation
import VitalsKit

/// `cgi`: Health Sync's endpoints as a CGI program (nginx + fcgiwrap run it once a request).
extension Run {
    /// The longest a request body may take to arrive, from the program's start.
    static let cgiBodyDeadlineMs: Int64 = 10_000
    /// The largest body read (nginx's client_max_body_size refuses larger ones first).
    static let cgiMaxBody = 1 << 20

    func cgi() throws -> VitalsKit.ExitStatus {
        let environment = context.environment
        let started = Clock.monotonicMilliseconds()
        let method = environment["REQUEST_METHOD"] ?? ""
        let path = Run.cgiPath(environment)
        let response: HealthSyncAPI.Response
        switch readBody(environment, deadline: started + Run.cgiBodyDeadlineMs) {
        case .failure(let refusal):
            response = refusal
        case .success(let body):
            let certificate = environment["SSL_CLIENT_CERT"].map(Run.percentDecoded)
            let request = HealthSyncAPI.Request(method: method, path: path, clientCertificate: certificate, body: body)
            response = HealthSyncAPI.handle(request, archivePath: self.path, now: now, diagnostics: context.diagnostics)
        }
        var head = "Status: \(response.status) \(Run.reasonPhrase(response.status))\r\nContent-Type: application/json\r\nCache-Control: no-store\r\n"
        for (name, value) in response.headers { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        Streams.writeAll(context.streams.output, head + JSONValue.object(response.body).jsonText + "\n")
        return .success
    }

    /// The request path: nginx's normalized `DOCUMENT_URI`, else `REQUEST_URI` without its query.
    static func cgiPath(_ environment: [String: String]) -> String {
        if let uri = environment["DOCUMENT_URI"], !uri.isEmpty { return uri }
        let uri = environment["REQUEST_URI"] ?? environment["PATH_INFO"] ?? ""
        return String(uri.prefix { $0 != "?" })
    }

    /// Reads `CONTENT_LENGTH` bytes of stdin before `deadline` (monotonic milliseconds).
    private func readBody(_ environment: [String: String], deadline: Int64) -> Result<[UInt8], HealthSyncAPI.Response> {
        let declared = environment["CONTENT_LENGTH"].flatMap { Int($0) } ?? 0
        guard declared >= 0 else { return .failure(.error(400, "bad_request", "the request's length is not valid")) }
        guard declared <= Run.cgiMaxBody else { return .failure(.error(413, "payload_too_large", "the body is larger than 1 MB")) }
        var body = [UInt8](repeating: 0, count: declared)
        var filled = 0
        let fd = context.streams.input
        while filled < declared {
            let left = deadline - Clock.monotonicMilliseconds()
            guard left > 0 else { return .failure(.error(408, "request_timeout", "the body did not arrive within 10 s")) }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(min(left, 1000)))
            if ready < 0 && errno == EINTR { continue }
            if ready <= 0 { continue }
            let count = body.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, declared - filled) }
            if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            guard count > 0 else { return .failure(.error(400, "bad_request", "the body ended before its declared length")) }
            filled += count
        }
        return .success(body)
    }

    /// `%XX` escapes decoded (nginx's `$ssl_client_escaped_cert`); other text as it is.
    static func percentDecoded(_ text: String) -> String {
        guard text.contains("%") else { return text }
        return text.removingPercentEncoding ?? text
    }

    static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 413: return "Payload Too Large"
        case 500: return "Internal Server Error"
        case 503: return "Service Unavailable"
        default: return "Status"
        }
    }
}
