import HTTPTransport
import VitalsKit

/// HTTPS to one Health Sync server through HTTPTransport (libcurl): TLS 1.3 only, this client's
/// certificate presented, the server trusted by its public key pin (curl's `--pinnedpubkey`, checked
/// in the handshake before anything is sent) and by the SHA-256 of its certificate (checked when the
/// answer is in). No certificate authority is asked: the pairing text is what vouches for the server.
/// One request at a time, each on a fresh connection, so each shows the certificate to check.
final class SyncConnection {
    /// `https://HOST[:PORT]`.
    let server: String
    private let tls: TLSOptions
    private let timeoutMs: Int
    private let engine = HTTPEngine(maxInFlight: 1, wakeFD: Signals.wakeFD)
    private var token = 0
    /// Why the last request got no answer at all (nil when it got one).
    private(set) var lastFailure: TransportFailure?

    /// The largest answer read: a page of 10,000 samples is about 3 MB.
    static let maxAnswerBytes = 64 << 20

    init(server: String, certificateSHA256: String, publicKeyPin: String, clientCertificate: String, clientKey: String, timeoutMs: Int) {
        self.server = server
        var tls = TLSOptions()
        tls.verify = false
        tls.pinnedPublicKey = publicKeyPin
        tls.pinnedCertificateSHA256 = certificateSHA256
        tls.minimumVersion = .v1_3
        tls.clientCertificate = clientCertificate
        tls.clientKey = clientKey
        tls.collectCertificates = true
        self.tls = tls
        self.timeoutMs = timeoutMs
    }

    /// An answer: the HTTP status, the JSON object of the body, and how long its Retry-After
    /// header asks to wait (milliseconds; nil without one).
    struct Answer {
        var status: Int
        var object: JSONObject
        var retryAfterMs: Int64? = nil
    }

    /// Connects and completes the TLS handshake only, sending nothing: whether the server shows the
    /// pinned key and certificate, checked before a pairing token goes out.
    func checkServer() throws {
        var request = HTTPRequest(url: server + "/", method: "GET", timeoutMs: timeoutMs, userAgent: SyncConnection.userAgent)
        request.connectOnly = true
        _ = try perform(request)
    }

    /// Sends one request and returns the server's answer, whatever its status; throws when there
    /// is none (the server could not be reached, showed another key or certificate, or did not
    /// answer JSON), in words that say what to do.
    func request(_ method: String, _ path: String, body: JSONObject? = nil) throws -> Answer {
        var request = HTTPRequest(url: server + path, method: method, timeoutMs: timeoutMs, userAgent: SyncConnection.userAgent)
        if let body {
            request.body = JSONValue.object(body).encoded()
            request.headers = ["Content-Type: application/json", "Expect:"]
        }
        request.maxRedirects = 0
        request.bodyPolicy = .collect(limit: SyncConnection.maxAnswerBytes)
        request.keepResponseHeaders = true
        let done = try perform(request)
        if done.stoppedAtLimit { throw ToolError("\(server) answered more than \(SyncConnection.maxAnswerBytes >> 20) MiB") }
        guard let object = try? JSONParser.parse(done.body).objectValue else {
            throw ToolError("\(server) answered HTTP \(done.httpCode) without a JSON object (is it a Health Sync server?)")
        }
        let retryAfter = done.header("Retry-After").flatMap { HTTPDate.retryAfterMs($0, nowMs: Clock.wallMilliseconds()) }
        return Answer(status: done.httpCode, object: object, retryAfterMs: retryAfter)
    }

    static let userAgent = "vitals-healthsync/\(Vitals.version)"

    /// Runs a request with the pinned TLS settings; throws when the transport failed.
    private func perform(_ prepared: HTTPRequest) throws -> HTTPResult {
        var request = prepared
        request.tls = tls
        token += 1
        engine.submit(request, token: token)
        var result: HTTPResult?
        while result == nil {
            if Signals.stopRequested { throw ToolError("stopped before \(server) answered") }
            result = engine.step(timeoutMs: 1_000).first { $0.token == token }?.result
        }
        let done = result!
        lastFailure = done.failure
        if let failure = done.failure {
            let why = done.curlMessage.isEmpty ? failure.rawValue : done.curlMessage
            let hint =
                failure == .tls
                ? " (it is not the server this client paired with, or its certificate changed: scan a new pairing text)"
                : failure == .connect || failure == .dns || failure == .timeout
                    ? " (is the server running and reachable? It is looked for by Bonjour when it moved)" : ""
            throw ToolError("cannot reach the Health Sync server at \(server): \(why)\(hint)")
        }
        return done
    }

    /// The error for an answer that is not 200, with the server's words and what to do.
    static func refusal(_ answer: Answer, server: String) -> ToolError {
        let reason = answer.object["reason"]?.stringValue ?? "refused"
        let words = answer.object["error"]?.stringValue ?? "no words given"
        let hint: String
        switch answer.status {
        case 401 where reason == "pairing_refused":
            hint = "; ask for a new pairing text (snapshot-delta pair on the server)"
        case 401:
            hint = "; to pair again, scan a new pairing text (snapshot-delta pair on the server)"
        case 429:
            hint = "; the server takes at most 60 requests a minute from a client: wait a minute and run again"
        case 403 where reason == "not_local":
            hint = "; it answers its local network only (its owner can open it wider: scripts/serve --allow)"
        default:
            hint = ""
        }
        return ToolError("\(server) refused with HTTP \(answer.status) (\(reason)): \(words)\(hint)")
    }
}
