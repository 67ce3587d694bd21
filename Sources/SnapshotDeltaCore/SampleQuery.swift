import VitalsCrypto
import VitalsKit

/// A question to the sample archive: which types, which time range, which page. The one query
/// both `snapshot-delta samples` and Health Sync's `POST /api/v1/health/data` run.
struct SampleQuery: Sendable {
    /// Type identifiers (`HKQuantityTypeIdentifierHeartRate`, ...), at least one.
    var types: [String]
    /// Samples starting at or after this time (milliseconds), nil for the beginning.
    var from: Int64?
    /// Samples starting before this time, nil for no end.
    var to: Int64?
    /// How many of the newest to skip.
    var offset: Int
    /// At most this many.
    var limit: Int

    /// Pages of samples on the command line (`samples --page --per-page`): 1,000 by default, up to a
    /// million at once.
    static let pages = PageLimits(defaultPerPage: apiPages.defaultPerPage, maxPerPage: 1_000_000)
    /// Pages of Health Sync's data endpoint (its `offset` and `limit`): the same default, at most
    /// 10,000 a response.
    static let apiPages = PageLimits(defaultPerPage: 1000, maxPerPage: 10_000)

    /// The query as it is written to the operation log (one type as `type_identifier`, as
    /// `samples` always logged it, unless `listTypes`).
    func logDetail(listTypes: Bool) -> JSONObject {
        JSONObject([
            types.count == 1 && !listTypes
                ? JSONField("type_identifier", .string(types[0])) : JSONField("types", .array(types.map { .string($0) })),
            JSONField("from", from.map { Records.time($0) } ?? .null), JSONField("to", to.map { Records.time($0) } ?? .null),
            JSONField("offset", .integer(offset)), JSONField("limit", .integer(limit)),
        ])
    }
}

/// What a logged fetch returned.
struct SampleFetch {
    /// Samples passed on.
    var returned: Int
    /// Whether more follow the page.
    var hasMore: Bool
    /// The latest snapshot when the page was read (nil before the first take).
    var snapshotID: String?
}

extension Archive {
    /// Runs `query`, passing each sample to `body`, newest first, then appends the access to the
    /// operation log as `operation` with the query, what it returned and the `extra` fields (the
    /// client and status of an API request). The log entry is written after the read, so it
    /// records what was returned.
    func fetchSamples(
        _ query: SampleQuery, operation: String, extra: JSONObject = JSONObject(), at time: () -> Int64,
        diagnostics: Diagnostics, beforeLog: () throws -> Void = {},
        _ body: (ArchivedSample) throws -> Void
    ) throws -> SampleFetch {
        var hasMore = false
        // One read transaction: the page and the snapshot it belongs to are read from the same state
        // of the archive, so a client paging through it can tell when a take came in between pages.
        try db.execute("BEGIN", context: "begin a read")
        let returned: Int
        let snapshotID: String?
        do {
            snapshotID = try db.scalarText("SELECT id FROM snapshots WHERE quality <> 'loading' ORDER BY seq DESC LIMIT 1")
            returned = try samples(query, lookAhead: true) { sample, extra in
                if extra { hasMore = true } else { try body(sample) }
            }
            try db.execute("COMMIT", context: "end a read")
        } catch {
            rollback()
            throw error
        }
        var detail = query.logDetail(listTypes: operation != "samples")
        for field in extra { detail[field.key] = field.value }
        detail["returned"] = .integer(returned)
        _ = try withLoggedChange(operation, snapshotIDs: [], at: time(), diagnostics: diagnostics) {
            try beforeLog()
            return ((), detail)
        }
        return SampleFetch(returned: returned, hasMore: hasMore, snapshotID: snapshotID)
    }
}

/// The seed's `HealthSample` on the wire: `id` (UUID), `startDate`, `endDate` (ISO 8601 in
/// UTC, whole seconds, as Swift's `.iso8601` date strategy reads and writes), `value` (a
/// number), `unit`, `sourceName`; plus `type`, the type identifier, since a request may name
/// several. A value that is not a number (a category such as a sleep stage) is 0 with the
/// text in `valueText`.
enum HealthSampleJSON {
    static func object(_ sample: Archive.ArchivedSample) -> JSONObject {
        var value: JSONValue = .integer(0)
        var valueText: String?
        if let text = sample.value {
            if case .number(let literal)? = try? JSONParser.parse(text), Double(literal)?.isFinite == true {
                value = .number(literal)
            } else {
                valueText = text
            }
        }
        var object = JSONObject([
            JSONField("id", .string(id(sample))),
            JSONField("type", .string(sample.typeIdentifier)),
            JSONField("startDate", .string(date(sample.start))),
            JSONField("endDate", .string(date(sample.end))),
            JSONField("value", value),
            JSONField("unit", .string(sample.unit ?? "")),
            JSONField("sourceName", .string(sample.source ?? "")),
        ])
        if let valueText { object["valueText"] = .string(valueText) }
        return object
    }

    /// ISO 8601 in UTC with whole seconds: `2026-01-10T08:00:00Z`.
    static func date(_ milliseconds: Int64) -> String {
        Timestamp.formatSeconds(milliseconds: milliseconds)
    }

    /// The sample's HealthKit UUID when the export had one; otherwise a UUID made from its
    /// identity in the archive (SHA-256 of type, start, fingerprint and occurrence, with the
    /// RFC 9562 version 8 and variant bits), the same on every request.
    static func id(_ sample: Archive.ArchivedSample) -> String {
        if let uuid = sample.uuid, isUUID(uuid) { return uuid.uppercased() }
        var text = sample.typeIdentifier + "\u{1F}" + String(sample.start)
        if let identity = sample.identity { text += "\u{1F}\(identity.fingerprint)\u{1F}\(identity.occurrence)" }
        var bytes = Array(SHA256.digest(text).prefix(16))
        bytes[6] = bytes[6] & 0x0F | 0x80
        bytes[8] = bytes[8] & 0x3F | 0x80
        let hex = SHA256.hex(bytes).uppercased()
        let characters = Array(hex)
        return [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(characters[$0]) }.joined(separator: "-")
    }

    static func isUUID(_ text: String) -> Bool {
        let characters = Array(text)
        guard characters.count == 36 else { return false }
        for (index, character) in characters.enumerated() {
            if [8, 13, 18, 23].contains(index) {
                guard character == "-" else { return false }
            } else if !character.isHexDigit {
                return false
            }
        }
        return true
    }
}
