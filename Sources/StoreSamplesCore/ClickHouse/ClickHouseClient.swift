import HTTPTransport
import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// ClickHouse's HTTP interface through HTTPTransport: one request at a time, on the thread that
/// made the client. Transport failures (refused, reset, timed out, a reply cut off) are retried
/// briefly, or for as long as `--wait` allows; an answer from the server that says no is not.
final class ClickHouseClient {
    let location: ClickHouseLocation
    /// How long to keep retrying a request the transport failed, ms (`--wait`); 0 tries three times within a second.
    let waitMs: Int64
    /// Time budget of one request, ms.
    var timeoutMs = 120_000
    /// Bytes of an answer kept at most.
    static let maxAnswerBytes = 512 << 20
    private let engine = HTTPEngine(maxInFlight: 1, wakeFD: Signals.wakeFD)
    private var token = 0

    init(location: ClickHouseLocation, waitMs: Int64) {
        self.location = location
        self.waitMs = waitMs
    }

    /// A request started by `start` and not finished yet.
    struct Pending {
        fileprivate let request: HTTPRequest
        fileprivate let token: Int
        fileprivate let started: Int64
        fileprivate let place: String
        /// An INSERT with rows: a resend may double them.
        fileprivate let isInsert: Bool
    }

    /// Runs `query` (its answer in the `format` the query names) on the server of the URL, or on
    /// the shard endpoint `endpoint` (`HOST:PORT`). With `data`, the query is an INSERT whose rows
    /// are `data`. `settings` are ClickHouse settings sent as URL parameters.
    /// `beforeResend` runs before `data` is sent a second time (and later times): the server may
    /// have stored what it did not acknowledge.
    func run(
        _ query: String, data: [UInt8]? = nil, endpoint: String? = nil, settings: [String: String] = [:],
        beforeResend: (() throws -> Void)? = nil
    ) throws -> [UInt8] {
        try finish(start(query, data: data, endpoint: endpoint, settings: settings), beforeResend: beforeResend)
    }

    /// Sends a request and returns at once; `finish` waits for its answer (and retries), `pump`
    /// moves it along meanwhile. One request is on the wire at a time: later ones wait their turn.
    func start(_ query: String, data: [UInt8]? = nil, endpoint: String? = nil, settings: [String: String] = [:]) -> Pending {
        let base =
            "\(location.scheme)://\(endpoint ?? (location.host.contains(":") ? "[\(location.host)]" : location.host) + ":\(location.port)")/"
        // Every table name is qualified with the database, which need not exist yet.
        var parameters: [String] = []
        // A query's answer is sent only once the query is done: otherwise an error the server
        // meets halfway is appended to rows already sent under "200 OK", and would be read as rows.
        let settings = data == nil ? settings.merging(["wait_end_of_query": "1"]) { given, _ in given } : settings
        for (key, value) in settings.sorted(by: { $0.key < $1.key }) { parameters.append(key + "=" + URLText.percentEncoded(value)) }
        if data != nil { parameters.append("query=" + URLText.percentEncoded(query)) }
        var request = HTTPRequest(
            url: base + "?" + parameters.joined(separator: "&"), method: "POST", timeoutMs: timeoutMs,
            userAgent: "vitals-store-samples/\(Vitals.version)")
        request.body = data ?? Array(query.utf8)
        request.headers = ["Expect:", "Content-Type: application/octet-stream"]
        request.bodyPolicy = .collect(limit: ClickHouseClient.maxAnswerBytes)
        request.maxRedirects = 0
        // One connection kept open per client: a responder's worker asks the same server request
        // after request (ClickHouse's HTTP interface keeps connections alive).
        request.reuseConnection = true
        request.username = location.user ?? (location.password != nil ? "default" : nil)
        request.password = location.password
        let place = endpoint.map { "the shard at \($0) of \(location.display)" } ?? location.display
        return Pending(
            request: request, token: submit(request), started: Clock.monotonicMilliseconds(), place: place, isInsert: data != nil)
    }

    /// Lets the transfers in progress move on without waiting (an upload stalls while nobody does).
    func pump() {
        for done in engine.step(timeoutMs: 0) { finished[done.token] = done.result }
    }

    /// Waits for a started request's answer, retrying a transport failure as `run` says.
    func finish(_ pending: Pending, beforeResend: (() throws -> Void)? = nil) throws -> [UInt8] {
        var attempt = 0
        var result = wait(for: pending.token)
        while true {
            if result.failure == nil, result.httpCode == 200 {
                if result.stoppedAtLimit {
                    throw ToolError("ClickHouse at \(pending.place): an answer larger than \(ClickHouseClient.maxAnswerBytes >> 20) MiB")
                }
                return result.body
            }
            attempt += 1
            try pauseBeforeRetry(result, pending, attempt: attempt)
            if pending.isInsert { try beforeResend?() }
            result = wait(for: submit(pending.request))
        }
    }

    /// For a request that failed (`result`) on its `attempt`th try: throws when the server said no,
    /// or when the transport failed and `--wait` allows no more tries; else waits before the next.
    private func pauseBeforeRetry(_ result: HTTPResult, _ pending: Pending, attempt: Int, body: [UInt8]? = nil) throws {
        if result.failure == nil {
            throw ToolError(
                "ClickHouse at \(pending.place) refused: \(ClickHouseClient.explain(body ?? result.body, code: result.httpCode))")
        }
        let elapsed = Clock.monotonicMilliseconds() - pending.started
        let pause: Int64 = waitMs > 0 ? min(2_000, 100 << Int64(min(attempt, 5))) : (attempt == 1 ? 100 : 400)
        let retry = waitMs > 0 ? elapsed + pause < waitMs : attempt < 3
        if !retry || Signals.stopRequested {
            let why = result.curlMessage.isEmpty ? (result.failure?.rawValue ?? "no answer") : result.curlMessage
            throw ToolError(
                "cannot reach ClickHouse at \(pending.place): \(why)"
                    + (waitMs > 0
                        ? " (still failing after --wait \(DefaultText.duration(milliseconds: waitMs)))"
                        : " (--wait DURATION keeps retrying)"))
        }
        usleep(useconds_t(pause * 1000))
    }

    /// Runs `query` (its answer in the format it names) and hands the answer to `consume` in
    /// pieces as they arrive, the last with `last` true: an answer of any length in bounded
    /// memory (the server sends it only once the query is done, so an error is a status, never
    /// bytes after rows). A transport failure before the first piece is retried as `run` does;
    /// after it, it is an error.
    func stream(_ query: String, endpoint: String? = nil, _ consume: (_ bytes: [UInt8], _ last: Bool) throws -> Void) throws {
        var attempt = 0
        var pending = start(query, endpoint: endpoint)
        while true {
            var consumed = false
            var refusal: [UInt8] = []
            var result: HTTPResult?
            while result == nil {
                if let done = finished.removeValue(forKey: pending.token) {
                    result = done
                } else {
                    for done in engine.step(timeoutMs: 1_000) { finished[done.token] = done.result }
                }
                let (code, bytes) = engine.drainBody(token: pending.token)
                guard !bytes.isEmpty else { continue }
                if code == 200 {
                    try consume(bytes, false)
                    consumed = true
                } else {
                    refusal += bytes
                }
            }
            let done = result!
            if done.failure == nil, done.httpCode == 200 {
                if done.stoppedAtLimit {
                    throw ToolError("ClickHouse at \(pending.place): more than \(ClickHouseClient.maxAnswerBytes >> 20) MiB came at once")
                }
                try consume(done.body, true)
                return
            }
            if consumed {
                throw ToolError(
                    "ClickHouse at \(pending.place): the answer was cut off (\(done.curlMessage.isEmpty ? "no more bytes" : done.curlMessage))"
                )
            }
            attempt += 1
            try pauseBeforeRetry(done, pending, attempt: attempt, body: refusal + done.body)
            pending = Pending(
                request: pending.request, token: submit(pending.request), started: pending.started, place: pending.place,
                isInsert: false)
        }
    }

    /// Runs a query whose answer is ignored.
    func execute(_ query: String, endpoint: String? = nil, settings: [String: String] = [:]) throws {
        _ = try run(query, endpoint: endpoint, settings: settings)
    }

    private func submit(_ request: HTTPRequest) -> Int {
        token += 1
        engine.submit(request, token: token)
        return token
    }

    /// Answers that came in while waiting for another request, by token.
    private var finished: [Int: HTTPResult] = [:]

    private func wait(for token: Int) -> HTTPResult {
        while true {
            if let done = finished.removeValue(forKey: token) { return done }
            for done in engine.step(timeoutMs: 1_000) { finished[done.token] = done.result }
        }
    }

    /// ClickHouse's error text in a line: `Code: 60, e.displayText() = DB::Exception: Table x doesn't exist., e.what() = ...`
    /// becomes `Table x doesn't exist (code 60)`.
    static func explain(_ body: [UInt8], code: Int) -> String {
        var text = String(decoding: body.prefix(2_000), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        var number: String?
        if text.hasPrefix("Code: "), let comma = text.firstIndex(of: ",") {
            number = String(text[text.index(text.startIndex, offsetBy: 6)..<comma])
        }
        if let range = text.range(of: "DB::Exception: ") { text = String(text[range.upperBound...]) }
        if let range = text.range(of: ", e.what()") { text = String(text[..<range.lowerBound]) }
        if let range = text.range(of: " (version ") { text = String(text[..<range.lowerBound]) }
        if let newline = text.firstIndex(of: "\n") { text = String(text[..<newline]) }
        if text.hasSuffix(".") { text.removeLast() }
        if text.isEmpty { text = "HTTP status \(code)" }
        return text + (number.map { " (code \($0))" } ?? "")
    }
}

/// A string literal for a ClickHouse query.
func clickHouseLiteral(_ text: String) -> String {
    var out = "'"
    for character in text.unicodeScalars {
        switch character {
        case "\\": out += "\\\\"
        case "'": out += "\\'"
        case "\0": out += "\\0"
        default: out.unicodeScalars.append(character)
        }
    }
    return out + "'"
}
