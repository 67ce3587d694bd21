import VitalsKit

/// `fetch`: the seed's `healthsync fetch`. Pages through `POST /api/v1/health/data` (offset and
/// limit) until the range is complete, writing each page as it arrives; the page size, the types
/// and the range are the user's. NDJSON output is `health_record` lines that `snapshot-delta take`
/// reads, then one `type_status` line per type, `complete` only when every page of the whole
/// archive arrived: a range, a `--limit` or a page refused midway leaves the types `partial`, so a
/// take of an incomplete fetch never reads as a mass deletion.
extension Client {
    static let dataPath = "/api/v1/health/data"
    /// The pages asked for: the server's default, at most the seed's largest page (snapshot-delta's
    /// `SampleQuery.apiPages`, which this client cannot import: the two tools share no core).
    static let pages = PageLimits(defaultPerPage: 1000, maxPerPage: 10_000)
    /// The seed's CSV columns (the order its CLI writes them in).
    static let csvHeader = "Type,Value,Unit,Start Date,End Date,Source"

    func fetch() throws -> VitalsKit.ExitStatus {
        let format = try options.choice("format")
        let pageSize = try options.integer("per-page", default: Client.pages.defaultPerPage, in: Client.pages.perPage)
        let limit: Int? = options.has("limit") ? try options.integer("limit", default: 0, in: 1...Int(Int32.max)) : nil
        let now = try options.now() ?? Clock.wallMilliseconds()
        let since = try options.time("since", now: now)
        let until = try options.time("until", now: now)
        if let since, let until, since >= until { throw UsageError("--since must be before --until") }
        var types: [String] = []
        for list in options.all("types") {
            for part in list.split(separator: ",") {
                let type = String(part).trimmingASCIIWhitespace
                guard HealthTypeIdentifier.isValid(type) else {
                    throw UsageError("--types: '\(type)' is not a type identifier (such as HKQuantityTypeIdentifierHeartRate)")
                }
                if !types.contains(type) { types.append(type) }
            }
        }
        guard types.count <= 64 else { throw UsageError("--types names \(types.count) types; the server takes at most 64 in one fetch") }

        let (_, connection) = try pairedConnection()
        if types.isEmpty {
            types = try sharedTypes(connection)
            guard !types.isEmpty else {
                context.diagnostics.note("\(connection.server) shares no types (its owner shares them with snapshot-delta share)")
                return .success
            }
            guard types.count <= 64 else {
                throw ToolError(
                    "\(connection.server) shares \(types.count) types; name at most 64 with --types (healthsync types lists them)")
            }
        }
        if format == "csv" { try writer.write(Client.csvHeader) }

        var offset = 0
        var pages = 0
        var complete = false
        var snapshot: String??
        var failure: ToolError?
        do {
            while !Signals.stopRequested {
                let ask = limit.map { min(pageSize, $0 - offset) } ?? pageSize
                var body = JSONObject([JSONField("types", .array(types.map { .string($0) }))])
                if let since { body["startDate"] = .string(Timestamp.format(milliseconds: since)) }
                if let until { body["endDate"] = .string(Timestamp.format(milliseconds: until)) }
                body["offset"] = .integer(offset)
                body["limit"] = .integer(ask)
                let answer = try connection.request("POST", Client.dataPath, body: body)
                guard answer.status == 200 else { throw SyncConnection.refusal(answer, server: connection.server) }
                guard let samples = answer.object["samples"]?.arrayValue, let hasMore = answer.object["hasMore"]?.boolValue,
                    samples.count <= ask
                else {
                    throw ToolError("\(connection.server) answered page \(pages + 1) without samples and hasMore")
                }
                // A take between two pages moves every offset: the pages would not fit together.
                let pageSnapshot = answer.object["snapshotId"]?.stringValue
                if let first = snapshot, first != pageSnapshot {
                    throw ToolError(
                        "the server's archive changed during the fetch (snapshot \(first ?? "none") became \(pageSnapshot ?? "none")), so the pages do not fit together"
                    )
                }
                snapshot = .some(pageSnapshot)
                for sample in samples { try emit(sample, types: types, format: format) }
                pages += 1
                offset += samples.count
                try writer.flush()
                if !hasMore {
                    complete = true
                    break
                }
                if samples.isEmpty { throw ToolError("\(connection.server) said more samples follow page \(pages) but sent none") }
                if let limit, offset >= limit { break }
            }
        } catch let error as ToolError {
            failure = error
        }
        if format == "ndjson" {
            let quality = complete && since == nil && until == nil ? "complete" : "partial"
            for type in types {
                try write(
                    JSONObject([
                        JSONField("type", .string("type_status")), JSONField("type_identifier", .string(type)),
                        JSONField("quality", .string(quality)),
                    ]))
            }
        }
        if let failure {
            context.diagnostics.error(
                failure.message + "; the fetch stopped after \(offset) samples in \(pages) pages"
                    + (format == "ndjson" ? " (the types are marked partial)" : "")
                    + (pages > 0 ? "; a larger --per-page needs fewer requests" : ""))
            return .failure
        }
        if !complete, !Signals.stopRequested {
            context.diagnostics.note(
                "stopped at --limit \(limit ?? 0) with more samples in the range"
                    + (format == "ndjson" ? " (the types are marked partial)" : ""))
        }
        return .success
    }

    /// One sample of an answer, as a `health_record` line or a CSV row.
    private func emit(_ value: JSONValue, types: [String], format: String) throws {
        guard let sample = value.objectValue, let type = sample["type"]?.stringValue, types.contains(type),
            let start = sample["startDate"]?.stringValue.flatMap(Timestamp.parse),
            let end = sample["endDate"]?.stringValue.flatMap(Timestamp.parse)
        else {
            throw ToolError(
                "a sample in the answer is not one of the types asked for with a startDate and an endDate: \(value.jsonText.prefix(200))")
        }
        let number = sample["value"] ?? .null
        let text = sample["valueText"]?.stringValue
        let unit = sample["unit"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
        let source = sample["sourceName"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
        if format == "csv" {
            let shown: String? = text ?? { if case .number(let literal) = number { return literal } else { return nil } }()
            try writer.write(
                CSV.row([
                    type, shown, unit, Timestamp.formatSeconds(milliseconds: start),
                    Timestamp.formatSeconds(milliseconds: end), source,
                ]))
            return
        }
        try write(
            JSONObject([
                JSONField("type", .string("health_record")), JSONField("type_identifier", .string(type)),
                JSONField("start", .string(Timestamp.format(milliseconds: start))),
                JSONField("end", .string(Timestamp.format(milliseconds: end))),
                JSONField("value", text.map { .string($0) } ?? number), JSONField("unit", unit.map { .string($0) } ?? .null),
                JSONField("source", source.map { .string($0) } ?? .null), JSONField("uuid", sample["id"] ?? .null),
            ]))
    }
}
