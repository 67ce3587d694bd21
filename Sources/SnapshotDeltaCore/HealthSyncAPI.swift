import Foundation
import Serving
import VitalsCrypto
import VitalsKit

/// Health Sync's endpoints, one request at a time: `POST /api/v1/pair`, `POST /api/v1/health/data`
/// and `GET /api/v1/health/types`. A thin adapter: the fetch is `Archive.fetchSamples`, the
/// query `snapshot-delta samples` runs, of the types `snapshot-delta share` shares; pairing is
/// `Archive.redeemPairingToken`.
///
/// nginx has already done TLS 1.3, the client certificate handshake, the rate limit, the size
/// cap and the timeouts; what arrives here is the method, the path (nginx's normalized
/// `DOCUMENT_URI`), the client certificate (PEM in `SSL_CLIENT_CERT`, %-escaped, when one was
/// presented) and the body. Every answer is JSON; errors are `APIError`s,
/// `{"error": "words", "reason": "word"}`, with nothing internal in them.
enum HealthSyncAPI {
    static let dataPath = "/api/v1/health/data"
    static let pairPath = "/api/v1/pair"
    static let typesPath = "/api/v1/health/types"
    /// The most types one request may name.
    static let maxTypes = 64

    /// The limits of every request (the seed's: 1 MB bodies, 10 s a request), held by the responder
    /// itself as well as by nginx.
    static let limits = RequestLimits(maxBody: 1 << 20, deadlineMs: 10_000)

    /// The three endpoints; any other path is a 404, another method a 405 naming the right one.
    static let router: Router<(archivePath: String, now: @Sendable () -> Int64, diagnostics: Diagnostics)> = {
        var router = Router<(archivePath: String, now: @Sendable () -> Int64, diagnostics: Diagnostics)>(
            notFound: "there is no such endpoint")
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
        router.add(["GET"], typesPath) { request, _, context in
            try withArchive(request, context.archivePath, context.diagnostics) { archive, fingerprint in
                try types(archive: archive, fingerprint: fingerprint, now: context.now, diagnostics: context.diagnostics)
            }
        }
        return router
    }()

    /// Answers one request against the archive at `archivePath`.
    static func handle(_ request: APIRequest, archivePath: String, now: @escaping @Sendable () -> Int64, diagnostics: Diagnostics)
        -> APIResponse
    {
        router.answer(request, (archivePath, now, diagnostics), log: { diagnostics.error($0) })
    }

    /// Runs `body` with the archive and the client certificate's SHA-256 fingerprint (nil when the
    /// client presented none); 503 while there is no archive.
    private static func withArchive(
        _ request: APIRequest, _ archivePath: String, _ diagnostics: Diagnostics,
        _ body: (Archive, String?) throws -> APIResponse
    ) throws -> APIResponse {
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

    static func pair(_ request: APIRequest, archive: Archive, fingerprint: String?, now: @Sendable () -> Int64, diagnostics: Diagnostics)
        throws -> APIResponse
    {
        guard let fingerprint else {
            try logRefusal(
                archive, "pair", fingerprint: nil, status: 401, outcome: "no_client_certificate", now: now, diagnostics: diagnostics)
            throw refusal(401, "unauthorized", "pairing needs a client certificate (curl --cert)")
        }
        let body = try parseObject(request.body)
        guard let token = body["token"]?.stringValue, !token.isEmpty, token.utf8.count <= 256 else {
            throw refusal(400, "bad_request", "the body needs \"token\": the pairing token snapshot-delta pair printed")
        }
        switch try archive.redeemPairingToken(
            sha256: PairingToken.hash(token), fingerprint: fingerprint, at: now(), diagnostics: diagnostics)
        {
        case .success(let client):
            return .json(
                .object(
                    JSONObject([
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

    static func data(_ request: APIRequest, archive: Archive, fingerprint: String?, now: @Sendable () -> Int64, diagnostics: Diagnostics)
        throws -> APIResponse
    {
        let (fingerprint, client) = try pairedClient(archive, "health_data", fingerprint, now: now, diagnostics: diagnostics)
        let query: SampleQuery
        do {
            query = try parseQuery(request.body)
        } catch {
            try logRefusal(
                archive, "health_data", fingerprint: fingerprint, status: error.status, outcome: error.reason, now: now,
                diagnostics: diagnostics)
            throw error
        }
        // The seed's rule: a request naming a type that is not shared is refused whole (403), so a
        // client never takes a partial answer for the whole; the refused types are named.
        let shared = try archive.sharedTypes()
        let refused = query.types.filter { !shared.allows($0) }
        if !refused.isEmpty {
            var detail = query.logDetail(listTypes: true)
            detail["client_fingerprint"] = .string(fingerprint)
            detail["status"] = .integer(403)
            detail["outcome"] = .string("not_shared")
            detail["refused_types"] = .array(refused.map { .string($0) })
            _ = try archive.withLoggedChange("health_data", snapshotIDs: [], at: now(), diagnostics: diagnostics) { ((), detail) }
            throw APIError(
                status: 403, reason: "not_shared",
                message: "not shared by this server: \(refused.joined(separator: ", ")) (its owner shares types with snapshot-delta share)",
                fields: [JSONField("types", .array(refused.map { .string($0) }))])
        }
        var samples: [JSONValue] = []
        let extra = JSONObject([JSONField("client_fingerprint", .string(fingerprint)), JSONField("status", .integer(200))])
        let touch: () throws -> Void = { try archive.touch(client, at: now()) }
        let fetch = try archive.fetchSamples(
            query, operation: "health_data", extra: extra, at: now, diagnostics: diagnostics,
            beforeLog: touch
        ) { sample in
            samples.append(.object(HealthSampleJSON.object(sample)))
        }
        return .json(
            .object(
                JSONObject([
                    JSONField("samples", .array(samples)),
                    JSONField("offset", .integer(query.offset)),
                    JSONField("limit", .integer(query.limit)),
                    JSONField("returnedCount", .integer(fetch.returned)),
                    JSONField("hasMore", .bool(fetch.hasMore)),
                    JSONField("snapshotId", fetch.snapshotID.map { .string($0) } ?? .null),
                ])))
    }

    // MARK: - GET /api/v1/health/types

    /// The types a paired client may fetch, as the seed's `TypesResponse`: `{"enabledTypes": [...]}`.
    /// While every type is shared, those the latest snapshot counted samples of; once types are
    /// chosen, the chosen ones.
    static func types(archive: Archive, fingerprint: String?, now: @Sendable () -> Int64, diagnostics: Diagnostics) throws -> APIResponse {
        let (fingerprint, client) = try pairedClient(archive, "health_types", fingerprint, now: now, diagnostics: diagnostics)
        let shared = try archive.sharedTypes()
        let types = shared.everything ? try archive.latestTypeCounts().filter { $0.count > 0 }.map(\.type) : shared.chosen.sorted()
        let detail = JSONObject([
            JSONField("client_fingerprint", .string(fingerprint)), JSONField("status", .integer(200)),
            JSONField("returned", .integer(types.count)),
        ])
        _ = try archive.withLoggedChange("health_types", snapshotIDs: [], at: now(), diagnostics: diagnostics) {
            try archive.touch(client, at: now())
            return ((), detail)
        }
        return .json(.object(JSONObject([JSONField("enabledTypes", .array(types.map { .string($0) }))])))
    }

    /// The paired client a request comes from; 401 (logged as `operation`) for no certificate or an unpaired one.
    private static func pairedClient(
        _ archive: Archive, _ operation: String, _ fingerprint: String?, now: @Sendable () -> Int64,
        diagnostics: Diagnostics
    ) throws -> (String, Archive.PairedClient) {
        guard let fingerprint else {
            try logRefusal(
                archive, operation, fingerprint: nil, status: 401, outcome: "no_client_certificate", now: now, diagnostics: diagnostics)
            throw refusal(401, "unauthorized", "a paired client certificate is required")
        }
        guard let client = try archive.pairedClient(fingerprint) else {
            try logRefusal(
                archive, operation, fingerprint: fingerprint, status: 401, outcome: "not_paired", now: now, diagnostics: diagnostics)
            throw refusal(401, "unauthorized", "this client certificate is not paired")
        }
        return (fingerprint, client)
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
            guard let type = item.stringValue, HealthTypeIdentifier.isValid(type) else {
                throw bad("each of \"types\" must be a type identifier such as HKQuantityTypeIdentifierHeartRate")
            }
            if !types.contains(type) { types.append(type) }
        }
        var dates: [Int64?] = []
        for (name, alias) in [("startDate", "start_date"), ("endDate", "end_date")] {
            let value = body[name] ?? body[alias] ?? .null
            if value.isNull {
                dates.append(nil)
                continue
            }
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
    private static func logRefusal(
        _ archive: Archive, _ operation: String, fingerprint: String?, status: Int, outcome: String,
        now: @Sendable () -> Int64, diagnostics: Diagnostics
    ) throws {
        let detail = JSONObject([
            JSONField("client_fingerprint", fingerprint.map { .string($0) } ?? .null),
            JSONField("status", .integer(status)), JSONField("outcome", .string(outcome)),
        ])
        _ = try archive.withLoggedChange(operation, snapshotIDs: [], at: now(), diagnostics: diagnostics) { ((), detail) }
    }
}
