import Foundation
import HTTPTransport
import VitalsKit

/// Sends a spool's batches to the server's `POST /api/samples`, oldest first, one request at a time
/// on a connection kept open, and removes each batch once the server has answered 2xx for all of it.
///
/// What an answer means (vitals-serve(7), store-samples(1) REMOTE STORE):
/// - 2xx with the API's answer: delivered; the lines it lists as refused are kept apart
///   (`Spool.keepApart`) with their reasons. 400 with the API's answer: every line refused, likewise.
/// - A transport failure, 408, 429 and 5xx: tried again after a pause that doubles from 0.5 s up to
///   30 s (each a random time between half of it and all of it, so agents cut off together do not
///   come back together), or after the server's `Retry-After` when that is longer.
/// - 413: the piece is split in two and each sent; a single line refused so is kept apart.
/// - 401 or 403 (a token revoked), 404 or 405 (no such API there), a redirect (never followed, so the
///   token goes nowhere else), a certificate that cannot be trusted, or an answer that is not the API's:
///   nothing more is sent this run, and the spool stays as it is.
/// - Another 4xx: the piece's lines are kept apart whole, with the server's reason.
///
/// Driven from the ingesting thread: `pump` between samples, `deliverSome` at a commit, `drain` at the end.
final class RemoteSender {
    /// Lines of a batch sent in one request: bytes `range` of it, from its line `firstLine` (1-based).
    struct Piece: Equatable {
        /// The bytes, whole lines with their line feeds.
        var range: Range<Int>
        /// The number of the first line in the batch.
        var firstLine: Int
        /// How many lines.
        var lines: Int
    }

    /// The batch being sent: its bytes and the pieces the server has not yet taken.
    struct Delivery {
        /// The spool's entry.
        let entry: Spool.Entry
        /// The batch file's bytes.
        let bytes: [UInt8]
        /// What is left to send, in order.
        var pieces: [Piece]
    }

    /// The largest request body: half of the server's 1 MiB limit (nginx's client_max_body_size 1m and
    /// the responder's own), so a request is never refused for its size by a server set up as
    /// vitals-serve(7) says; about 2,000 samples of probe-http's.
    static let maxBodyBytes = 512 << 10
    /// The most bytes of an answer kept (the API's answer lists every refused line with its reason).
    static let maxAnswerBytes = 4 << 20
    /// The first pause after a failure, ms; it doubles up to `maxPauseMs`.
    static let firstPauseMs: Int64 = 500
    /// The longest pause between tries, ms (unless the server's Retry-After asks for more).
    static let maxPauseMs: Int64 = 30_000
    /// The refused lines named on standard error, one by one, in a run (the rest are counted).
    static let refusalsShown = 10

    let location: RemoteLocation
    let spool: Spool
    let diagnostics: Diagnostics
    private let engine = HTTPEngine(maxInFlight: 1, wakeFD: Signals.wakeFD)
    /// The batch being sent.
    private var current: Delivery?
    /// The storage of the last batch delivered, which the next one is read into (`Spool.contents`).
    private var spare: [UInt8] = []
    /// The token of the request on the wire.
    private var inFlight: Int?
    private var lastToken = 0
    /// Failures since the last piece delivered.
    private var failures = 0
    /// When the next try may start (monotonic ms).
    private(set) var notBeforeMs: Int64 = 0
    /// The server's last `Retry-After`, ms, while it holds.
    private(set) var askedToWaitMs: Int64?
    /// Why nothing more is sent this run (said on standard error when it happened).
    private(set) var halted: String?
    /// Whether another run holds the spool's lock (and sends its batches).
    private(set) var busy: Bool
    /// The last failure that is tried again, in words.
    private(set) var problem: String?
    /// Samples the server took (stored, or stored already).
    private(set) var deliveredSamples = 0
    /// Lines the server refused, kept apart.
    private(set) var refusedLines = 0
    /// When a piece was last delivered, or sending began (monotonic ms).
    private(set) var lastProgressMs = Clock.monotonicMilliseconds()
    /// The time budget of a request, ms.
    private var requestTimeoutMs = 20_000

    /// A sender for `spool`'s batches; it sends only when it holds the spool's lock.
    init(location: RemoteLocation, spool: Spool, diagnostics: Diagnostics) {
        self.location = location
        self.spool = spool
        self.diagnostics = diagnostics
        busy = !spool.tryLock()
    }

    /// Lets the request on the wire move on, and starts the next one when one is due; never waits.
    func pump() {
        guard !busy else { return }
        if inFlight != nil { collect(engine.step(timeoutMs: 0)) }
        startIfDue()
    }

    /// Sends what is due, for about `budgetMs`: a request started is finished; a pause is not waited out.
    func deliverSome(budgetMs: Int64) {
        guard !busy else { return }
        let end = Clock.monotonicMilliseconds() + budgetMs
        while !Signals.stopRequested {
            if inFlight == nil {
                guard Clock.monotonicMilliseconds() < end else { return }
                startIfDue()
                guard inFlight != nil else { return }
            }
            collect(engine.step(timeoutMs: 1_000))
        }
    }

    /// Waits for the request on the wire, if any, to be answered.
    func settle() {
        while inFlight != nil, !Signals.stopRequested { collect(engine.step(timeoutMs: 1_000)) }
    }

    /// Sends every batch waiting, including those another run added (taking the lock if that run
    /// has ended), until none is left, sending is halted, a stop signal arrives, or failures have
    /// gone on for `waitMs` since the last piece delivered (a Retry-After past that ends it at once).
    func drain(waitMs: Int64) {
        if busy, spool.tryLock() {
            busy = false
            try? spool.refresh()
        }
        guard !busy else { return }
        lastProgressMs = Clock.monotonicMilliseconds()
        var listedAgain = false
        while !Signals.stopRequested, halted == nil {
            if inFlight != nil {
                collect(engine.step(timeoutMs: 1_000))
                continue
            }
            if current == nil, spool.entries.isEmpty {
                // Once more: a run that could not take the lock may have spooled meanwhile.
                if listedAgain { break }
                listedAgain = true
                try? spool.refresh()
                continue
            }
            let now = Clock.monotonicMilliseconds()
            if notBeforeMs > now {
                let deadline = lastProgressMs + waitMs
                if notBeforeMs > deadline {
                    // A pause past the deadline: one last try at it, unless the server asked for the wait.
                    guard askedToWaitMs == nil, now < deadline else { break }
                    notBeforeMs = deadline
                }
                _ = engine.step(timeoutMs: Int(notBeforeMs - now))  // a stop signal ends the pause
                continue
            }
            requestTimeoutMs = Int(max(2_000, min(20_000, waitMs - (now - lastProgressMs))))
            startIfDue()
            if inFlight == nil, current == nil, !spool.entries.isEmpty, halted == nil { break }  // nothing could start
        }
        if inFlight != nil {
            engine.cancelAll()
            inFlight = nil
        }
    }

    // MARK: - Sending

    /// Starts the next request when nothing is on the wire, no pause runs and sending goes on.
    private func startIfDue() {
        guard !busy, halted == nil, inFlight == nil, !Signals.stopRequested, Clock.monotonicMilliseconds() >= notBeforeMs else { return }
        if current == nil { current = nextDelivery() }
        guard let delivery = current, let piece = delivery.pieces.first else { return }
        spool.sending = delivery.entry.seq
        var request = HTTPRequest(
            url: location.endpoint, method: "POST", timeoutMs: requestTimeoutMs, userAgent: "vitals-store-samples/\(Vitals.version)")
        // The whole batch (the usual case) goes without a copy of our own.
        request.body = piece.range == delivery.bytes.indices ? delivery.bytes : Array(delivery.bytes[piece.range])
        request.headers = ["Authorization: Bearer \(location.token)", "Content-Type: application/x-ndjson", "Expect:"]
        request.bodyPolicy = .collect(limit: RemoteSender.maxAnswerBytes)
        request.maxRedirects = 0
        request.keepResponseHeaders = true
        request.reuseConnection = true
        request.protocols = "https"
        request.tls.caFile = location.caFile
        request.tls.collectCertificates = false
        lastToken += 1
        engine.submit(request, token: lastToken)
        inFlight = lastToken
    }

    /// The oldest batch waiting, read and cut into pieces; nil when none is left (or one cannot be read).
    private func nextDelivery() -> Delivery? {
        while let entry = spool.entries.first {
            do {
                var bytes = spare
                spare = []
                guard try spool.contents(of: entry, into: &bytes) else {
                    spare = bytes
                    spool.remove(entry)  // sent by another run, or dropped
                    continue
                }
                let pieces = RemoteSender.pieces(of: bytes)
                if pieces.isEmpty {
                    spare = bytes
                    spool.remove(entry)
                    continue
                }
                return Delivery(entry: entry, bytes: bytes, pieces: pieces)
            } catch {
                halt("\(error)")
                return nil
            }
        }
        return nil
    }

    /// A batch cut at line feeds into pieces of at most `maxBodyBytes` (a longer line is a piece alone).
    static func pieces(of bytes: [UInt8], limit: Int = maxBodyBytes) -> [Piece] {
        var pieces: [Piece] = []
        var start = 0
        var lineStart = 0
        var line = 1
        var lines = 0
        var firstLine = 1
        while lineStart < bytes.count {
            var end = lineStart
            while end < bytes.count, bytes[end] != 0x0A { end += 1 }
            end = min(bytes.count, end + 1)
            if lines > 0, end - start > limit {
                pieces.append(Piece(range: start..<lineStart, firstLine: firstLine, lines: lines))
                start = lineStart
                firstLine = line
                lines = 0
            }
            lines += 1
            line += 1
            lineStart = end
        }
        if lines > 0 { pieces.append(Piece(range: start..<bytes.count, firstLine: firstLine, lines: lines)) }
        return pieces
    }

    // MARK: - Answers

    /// Handles the answers that came in.
    private func collect(_ completions: [HTTPCompletion]) {
        for completion in completions where completion.token == inFlight {
            inFlight = nil
            answer(completion.result)
        }
    }

    /// What one answer means for the piece sent (see the type's documentation).
    private func answer(_ result: HTTPResult) {
        guard let delivery = current, let piece = delivery.pieces.first else { return }
        if let failure = result.failure {
            // A certificate that cannot be trusted is a setting to change, not a moment to wait out.
            if failure == .tls, [58, 60, 77, 83, 90, 91].contains(result.curlCode) {
                halt(
                    "cannot trust the certificate of \(location.display): \(RemoteSender.words(result.curlMessage)) (cacert=FILE names a CA to trust)"
                )
            } else if failure == .tooLarge {
                halt("\(location.display) answered with headers over 256 KiB: not vitals' API")
            } else {
                retry("\(failure.rawValue): \(RemoteSender.words(result.curlMessage))", afterMs: nil)
            }
            return
        }
        let code = result.httpCode
        let said = RemoteSender.said(result.body)
        switch code {
        case 200..<300, 400:
            guard !result.stoppedAtLimit, let refusals = RemoteSender.refusals(in: result.body) else {
                if code == 400 {
                    keepApart(piece, reason: "HTTP 400\(said)")
                } else {
                    halt(
                        "\(location.display) answered HTTP \(code) but not as vitals' POST /api/samples does\(said): the batch stays in the spool"
                    )
                }
                return
            }
            keep(refusals, of: piece)
        case 401, 403:
            halt(
                "\(location.display) refused this agent's token (HTTP \(code)\(said)): nothing more is sent this run; "
                    + "make a new token on the server (store-samples agents token ID) and write it in the token file")
        case 404, 405:
            halt("\(location.display) has no POST /api/samples (HTTP \(code)\(said)): check the address in --db")
        case 300..<400:
            let target = result.header("Location").map { " to " + RemoteSender.words(Redaction.url($0)) } ?? ""
            halt(
                "\(location.display) redirects (HTTP \(code)\(target)): not followed, so the token goes nowhere else; "
                    + "write the final address in --db")
        case 408, 429, 500..<600:
            let after = result.header("Retry-After").flatMap { HTTPDate.retryAfterMs($0, nowMs: Clock.wallMilliseconds()) }
            retry("HTTP \(code)\(said)", afterMs: after)
        case 413:
            guard piece.lines > 1 else {
                keepApart(piece, reason: "larger than the server takes (HTTP 413\(said))")
                return
            }
            let halves = RemoteSender.pieces(of: Array(delivery.bytes[piece.range]), limit: max(1, piece.range.count / 2)).map {
                Piece(range: $0.range.offset(by: piece.range.lowerBound), firstLine: $0.firstLine + piece.firstLine - 1, lines: $0.lines)
            }
            current?.pieces.replaceSubrange(0..<1, with: halves)
        default:
            keepApart(piece, reason: "HTTP \(code)\(said)")
        }
    }

    /// The refused lines of an API answer (`{"stored":N,...,"refused":[{"line":L,"error":"..."}]}`),
    /// nil when the body is not such an answer.
    static func refusals(in body: [UInt8]) -> [(line: Int, error: String)]? {
        guard let answer = (try? JSONParser.parse(body))?.objectValue, answer["stored"]?.intValue != nil,
            let refused = answer["refused"]?.arrayValue
        else { return nil }
        var lines: [(Int, String)] = []
        for item in refused {
            guard let object = item.objectValue, let line = object["line"]?.intValue else { return nil }
            lines.append((line, words(object["error"]?.stringValue ?? "refused")))
        }
        return lines
    }

    /// Keeps the refused lines of a piece apart, then counts the piece delivered.
    private func keep(_ refusals: [(line: Int, error: String)], of piece: Piece) {
        guard let delivery = current else { return }
        var lines: [UInt8] = []
        var reasons: [String] = []
        if !refusals.isEmpty {
            let pieceLines = RemoteSender.lineRanges(Array(delivery.bytes[piece.range]))
            for refusal in refusals where refusal.line >= 1 && refusal.line <= pieceLines.count {
                lines += delivery.bytes[pieceLines[refusal.line - 1].offset(by: piece.range.lowerBound)]
                if lines.last != 0x0A { lines.append(0x0A) }
                reasons.append("line \(piece.firstLine + refusal.line - 1) of batch \(delivery.entry.seq): \(refusal.error)")
            }
        }
        if !reasons.isEmpty {
            do {
                let file = try spool.keepApart(lines, reasons: reasons, seq: delivery.entry.seq, firstLine: piece.firstLine)
                report(reasons, file: file)
            } catch {
                halt("cannot keep refused lines apart: \(error)")
                return
            }
        }
        delivered(piece, refused: reasons.count)
    }

    /// Keeps every line of a piece apart for one `reason`, then counts the piece done.
    private func keepApart(_ piece: Piece, reason: String) {
        guard let delivery = current else { return }
        let reasons = (0..<piece.lines).map { "line \(piece.firstLine + $0) of batch \(delivery.entry.seq): \(reason)" }
        do {
            let file = try spool.keepApart(
                Array(delivery.bytes[piece.range]), reasons: reasons, seq: delivery.entry.seq, firstLine: piece.firstLine)
            report(reasons, file: file)
        } catch {
            halt("cannot keep refused lines apart: \(error)")
            return
        }
        delivered(piece, refused: reasons.count)
    }

    /// Says which lines were refused and why: each of the first few, then how many more.
    private func report(_ reasons: [String], file: String) {
        for (index, reason) in reasons.enumerated() {
            refusedLines += 1
            if refusedLines <= RemoteSender.refusalsShown {
                diagnostics.error("refused by \(location.display): \(reason)", source: file, line: index + 1)
            } else if refusedLines == RemoteSender.refusalsShown + 1 {
                diagnostics.error("more lines refused by \(location.display): each is kept in \(spool.refusedPath) with its reason")
            }
        }
    }

    /// A piece the server has answered for: the next piece, or the batch removed once all are.
    private func delivered(_ piece: Piece, refused: Int) {
        failures = 0
        problem = nil
        askedToWaitMs = nil
        lastProgressMs = Clock.monotonicMilliseconds()
        deliveredSamples += piece.lines - refused
        guard var delivery = current else { return }
        delivery.pieces.removeFirst()
        if delivery.pieces.isEmpty {
            spool.remove(delivery.entry)
            spool.sending = nil
            current = nil
            spare = delivery.bytes
        } else {
            current = delivery
        }
    }

    /// A failure worth trying again: the pause before the next try (see the type's documentation).
    private func retry(_ words: String, afterMs: Int64?) {
        failures += 1
        let pause = min(RemoteSender.maxPauseMs, RemoteSender.firstPauseMs << Int64(min(failures - 1, 16)))
        let jittered = pause / 2 + Int64.random(in: 0...(pause / 2))
        notBeforeMs = Clock.monotonicMilliseconds() + max(jittered, afterMs ?? 0)
        askedToWaitMs = afterMs
        problem = words
    }

    /// Stops sending for this run, saying why.
    private func halt(_ why: String) {
        guard halted == nil else { return }
        halted = why
        diagnostics.error(why)
    }

    // MARK: - Words

    /// `: the server's words` from an error answer (`{"error":"..."}`, else its first line), or empty.
    static func said(_ body: [UInt8]) -> String {
        if let object = (try? JSONParser.parse(body))?.objectValue, let error = object["error"]?.stringValue {
            return ": " + words(error)
        }
        let line = body.prefix(300).split(separator: 0x0A).first.map { String(decoding: $0, as: UTF8.self) } ?? ""
        let text = words(line)
        return text.isEmpty ? "" : ": " + text
    }

    /// Text from a server, safe for a terminal: control characters replaced, at most 200 characters.
    static func words(_ text: String) -> String {
        let cleaned = String(
            text.unicodeScalars.prefix(200).map { $0.value < 0x20 || ($0.value >= 0x7F && $0.value < 0xA0) ? "?" : Character($0) })
        return cleaned.trimmingCharacters(in: .whitespaces)
    }

    /// Each line's range in `bytes` (with its line feed).
    static func lineRanges(_ bytes: [UInt8]) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        var start = 0
        for (index, byte) in bytes.enumerated() where byte == 0x0A {
            ranges.append(start..<(index + 1))
            start = index + 1
        }
        if start < bytes.count { ranges.append(start..<bytes.count) }
        return ranges
    }
}

extension Range where Bound == Int {
    /// The range moved by `offset`.
    fileprivate func offset(by offset: Int) -> Range<Int> { (lowerBound + offset)..<(upperBound + offset) }
}
