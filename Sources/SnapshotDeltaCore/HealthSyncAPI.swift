import Foundation
import Serving
import VitalsCrypto
import VitalsKit

/// Health Sync's endpoints, one request at a time: `POST /api/v1/pair` and
/// `POST /api/v1/health/data`. A thin adapter: the fetch is `Archive.fetchSamples`, the
/// query `snapshot-delta samples` runs; pairing is `Archive.redeemPairingToken`.
///
/// nginx has already done TLS 1.3, the client certificate handshake, the rate limit, the size
/// cap and the timeouts; what arrives here is the method, the path (nginx's normalized
/// `DOCUMENT_URI`), the client certificate (PEM in `SSL_CLIENT_CERT`, %-escaped, when one was
/// presented) and the body. Every answer is JSON; errors are `APIError`s,
/// `{"error": "words", "reason": "word"}`, with nothing internal in them.
enum HealthSyncAPI {
    static let dataPath = "/api/v1/health/data"
    static let pairPath = "/api/v1/pair"
    /// The most types one request may name.
    static let maxTypes = 64

    /// The limits of every request (the seed's: 1 MB bodies, 10 s a request), held by the responder
    /// itself as well as by nginx.
    static let limits = RequestLimits(maxBody: 1 << 20, deadlineMs: 10_000)

    /// The two endpoints; any other path is a 404, another method a 405 naming POST.
    static let router: Router<(archivePath: String, now: @Sendable () -> Int64, diagnostics: Diagnostics)> = {
        var router = Router<(archivePath: String, now: @Sendable () -> Int64, diagnostics: Diagnostics)>(notFound: "there is no such endpoint")
        router.add(["POST"], pairPath) { request, _, context in
            try withArchive(request, context.archivePath, context.diagnostics) { archive, fingerprint in
                try pair(request, archive: archive, fingerprint: fingerprint, now: context.now, diagnostics: context.diagnostics)
            }
        }
        router.add(["POST"], dataPath) { request, _, context in
            try withArchive(request, context.archivePath, context.diagnostics) { archive, fingerprint in
                try data(request, archive: archive, fingerprint: fingerprint, now: context.now, diagnostics: context.diagnostics)
            }
        }
        return router
    }()

    /// Answers one request against the archive at `archivePath`.
    static func handle(_ request: APIRequest, archivePath: String, now: @escaping @Sendable () -> Int64, diagnostics: Diagnostics) -> APIResponse {
        router.answer(request, (archivePath, now, diagnostics), log: { diagnostics.error($0) })
    }

    /// Runs `body` with the archive and the client certificate's SHA-256 fingerprint (nil when the
    /// client presented none); 503 while there is no archive.
    private static func withArchive(_ request: APIRequest, _ archivePath: String, _ diagnostics: Diagnostics,
                                    _ body: (Archive, String?) throws -> APIResponse) throws -> APIResponse {
        var fingerprint: String?
        if let escaped = request.parameters["SSL_CLIENT_CERT"], !escaped.isEmpty {
            guard let certificate = Certificate(pem: URLText.percentDecoded(escaped)) else {
                throw APIError(status: 401, reason: "unauthorized", message: "the client certificate could not be read")
            }
            fingerprint = certificate.sha256Fingerprint
        }
        guard access(archivePath, F_OK) == 0 else {
            diagnostics.error("no archive at \(archivePath)")
            throw APIError(status: 503, reason: "unavailable", message: "the archive is not ready", headers: [("Retry-After", "60")])
        }
        return try body(try Archive(path: archivePath, create: false), fingerprint)
    }

    static func refusal(_ status: Int, _ reason: String, _ message: String) -> APIError {
        APIError(status: status, reason: reason, message: message)
    }

    // MARK: - POST /api/v1/pair

    static func pair(_ request: APIRequest, archive: Archive, fingerprint: String?, now: @Sendable () -> Int64, diagnostics: Diagnostics) throws -> APIResponse {
        guard let fingerprint else {
            try logRefusal(archive, "pair", fingerprint: nil, status: 401, outcome: "no_client_certificate", now: now, diagnostics: diagnostics)
            throw refusal(401, "unauthorized", "pairing needs a client certificate (curl --cert)")
        }
        let body = try parseObject(request.body)
        guard let token = body["token"]?.stringValue, !token.isEmpty, token.utf8.count <= 256 else {
            throw refusal(400, "bad_request", "the body needs \"token\": the pairing token snapshot-delta pair printed")
        }
        switch try archive.redeemPairingToken(sha256: PairingToken.hash(token), fingerprint: fingerprint, at: now(), diagnostics: diagnostics) {
        case .success(let client):
            return .json(.object(JSONObject([
                JSONField("status", .string("paired")),
                JSONField("id", .string(client.id)),
                JSONField("certificateFingerprint", .string(client.certificateFingerprint)),
                JSONField("pairedAt", .string(HealthSampleJSON.date(client.pairedAt))),
            ])))
        case .failure(let why):
            throw refusal(401, "pairing_refused", why.rawValue)
        }
    }

    // MARK: - POST /api/v1/health/data

    static func data(_ request: APIRequest, archive: Archive, fingerprint: String?, now: @Sendable () -> Int64, diagnostics: Diagnostics) throws -> APIResponse {
        guard let fingerprint else {
            try logRefusal(archive, "health_data", fingerprint: nil, status: 401, outcome: "no_client_certificate", now: now, diagnostics: diagnostics)
            throw refusal(401, "unauthorized", "a paired client certificate is required")
        }
        guard let client = try archive.pairedClient(fingerprint) else {
            try logRefusal(archive, "health_data", fingerprint: fingerprint, status: 401, outcome: "not_paired", now: now, diagnostics: diagnostics)
            throw refusal(401, "unauthorized", "this client certificate is not paired")
        }
        let query: SampleQuery
        do {
            query = try parseQuery(request.body)
        } catch {
            try logRefusal(archive, "health_data", fingerprint: fingerprint, status: error.status, outcome: error.reason, now: now,
                           diagnostics: diagnostics)
            throw error
        }
        var samples: [JSONValue] = []
        let extra = JSONObject([JSONField("client_fingerprint", .string(fingerprint)), JSONField("status", .integer(200))])
        let fetch = try archive.fetchSamples(query, operation: "health_data", extra: extra, at: now, diagnostics: diagnostics,
                                             beforeLog: { try archive.touch(client, at: now()) }) { sample in
            samples.append(.object(HealthSampleJSON.object(sample)))
        }
        return .json(.object(JSONObject([
            JSONField("samples", .array(samples)),
            JSONField("offset", .integer(query.offset)),
            JSONField("limit", .integer(query.limit)),
            JSONField("returnedCount", .integer(fetch.returned)),
            JSONField("hasMore", .bool(fetch.hasMore)),
        ])))
    }

    /// Reads the data request: `types` (required), `startDate` and `endDate` (ISO 8601; also
    /// `start_date`, `end_date`), `offset` (default 0) and `limit` (default 1000, at most 10,000).
    static func parseQuery(_ bytes: [UInt8]) throws(APIError) -> SampleQuery {
        let body = try parseObject(bytes)
        func bad(_ message: String) -> APIError { refusal(400, "bad_request", message) }
        guard let list = body["types"]?.arrayValue, !list.isEmpty else {
            throw bad("\"types\" must be a non-empty array of type identifiers")
        }
        guard list.count <= maxTypes else { throw bad("\"types\" names more than \(maxTypes) types") }
        var types: [String] = []
        for item in list {
            guard let type = item.stringValue, isTypeIdentifier(type) else {
                throw bad("each of \"types\" must be a type identifier such as HKQuantityTypeIdentifierHeartRate")
            }
            if !types.contains(type) { types.append(type) }
        }
        var dates: [Int64?] = []
        for (name, alias) in [("startDate", "start_date"), ("endDate", "end_date")] {
            let value = body[name] ?? body[alias] ?? .null
            if value.isNull { dates.append(nil); continue }
            guard let text = value.stringValue, text.utf8.count <= 64, let time = Timestamp.parse(text) else {
                throw bad("\"\(name)\" must be an ISO 8601 date such as 2026-01-10T08:00:00Z")
            }
            dates.append(time)
        }
        if let from = dates[0], let to = dates[1], from >= to { throw bad("\"startDate\" must be before \"endDate\"") }
        guard let offset = integer(body["offset"], default: 0), offset >= 0, offset <= Int(Int32.max) else {
            throw bad("\"offset\" must be a whole number from 0")
        }
        let pages = SampleQuery.apiPages
        guard let limit = integer(body["limit"], default: pages.defaultPerPage), pages.perPage.contains(limit) else {
            throw bad("\"limit\" must be a whole number from 1 to \(pages.maxPerPage)")
        }
        return SampleQuery(types: types, from: dates[0], to: dates[1], offset: offset, limit: limit)
    }

    /// HealthKit-style identifiers: letters, digits, `_`, `.`, `-`; 1 to 128 characters.
    static func isTypeIdentifier(_ text: String) -> Bool {
        let bytes = text.utf8
        guard (1...128).contains(bytes.count) else { return false }
        return bytes.allSatisfy { byte in
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
                || byte == UInt8(ascii: "-")
        }
    }

    private static func integer(_ value: JSONValue?, default defaultValue: Int) -> Int? {
        guard let value, !value.isNull else { return defaultValue }
        return value.intValue
    }

    private static func parseObject(_ bytes: [UInt8]) throws(APIError) -> JSONObject {
        guard !bytes.isEmpty, let value = try? JSONParser.parse(bytes), let object = value.objectValue else {
            throw refusal(400, "bad_request", "the body must be a JSON object")
        }
        return object
    }

    /// Logs a request that was refused before it reached the archive's samples.
    private static func logRefusal(_ archive: Archive, _ operation: String, fingerprint: String?, status: Int, outcome: String,
                                   now: @Sendable () -> Int64, diagnostics: Diagnostics) throws {
        let detail = JSONObject([JSONField("client_fingerprint", fingerprint.map { .string($0) } ?? .null),
                                 JSONField("status", .integer(status)), JSONField("outcome", .string(outcome))])
        _ = try archive.withLoggedChange(operation, snapshotIDs: [], at: now(), diagnostics: diagnostics) { ((), detail) }
    }
}
