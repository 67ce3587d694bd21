import Foundation
import VitalsKit

/// `fetch`: the seed's `healthsync fetch`. Pages through `POST /api/v1/health/data` (offset and
/// limit) until the range is complete, writing each page as it arrives; the page size, the types
/// and the range are the user's. A page refused for the moment (429, 5xx, a failed connection) is
/// asked again (`RetryPolicy`). NDJSON output is `health_record` lines that `snapshot-delta take`
/// reads, then one `type_status` line per type, `complete` only when every page of the whole
/// archive arrived: a range, a `--limit` or a page refused midway leaves the types `partial`, so a
/// take of an incomplete fetch never reads as a mass deletion. Into `--output FILE`, the progress
/// is kept beside it after every page (`FetchProgress`), so `--resume` continues a fetch cut short.
extension Client {
    static let dataPath = "/api/v1/health/data"
    /// The pages asked for: the server's default, at most the seed's largest page (snapshot-delta's
    /// `SampleQuery.apiPages`, which this client cannot import: the two tools share no core).
    static let pages = PageLimits(defaultPerPage: 1000, maxPerPage: 10_000)
    /// The seed's CSV columns (the order its CLI writes them in).
    static let csvHeader = "Type,Value,Unit,Start Date,End Date,Source"
    /// The tries after the first of one request, by default.
    static let defaultRetries = 6

    func fetch() throws -> VitalsKit.ExitStatus {
        let pageSize = try options.integer("per-page", default: Client.pages.defaultPerPage, in: Client.pages.perPage)
        let policy = RetryPolicy(retries: try options.integer("retries", default: Client.defaultRetries, in: 0...100))
        let output = options.value("output").flatMap { $0 == "-" ? nil : $0 }
        if let output, output.isEmpty { throw UsageError("--output wants a file (or - for standard output)") }
        var progress: FetchProgress?
        var query: FetchQuery
        if options.has("resume") {
            guard let output else { throw UsageError("--resume continues a fetch into --output FILE: name that file") }
            for option in ["types", "since", "until", "limit", "format"] where options.has(option) {
                throw UsageError("--resume asks again what the fetch into \(output) asked; it takes no --\(option)")
            }
            let kept = try FetchProgress.load(for: output)
            progress = kept
            query = kept.query
        } else {
            query = try fetchQuery()
        }

        let (state, connection) = try pairedConnection()
        if let kept = progress, kept.serverCertificateSHA256 != state.serverCertificateSHA256 {
            throw ToolError(
                "\(FetchProgress.path(for: output!)) is a fetch from another server (paired again since?): fetch again without --resume")
        }
        var tally = RetryTally()
        if query.types.isEmpty {
            let answer = try patiently(connection, "GET", Client.typesPath, what: "the shared types", policy: policy, tally: &tally)
            query.types = try sharedTypes(answer, server: connection.server)
            guard !query.types.isEmpty else {
                context.diagnostics.note("\(connection.server) shares no types (its owner shares them with snapshot-delta share)")
                return .success
            }
            guard query.types.count <= 64 else {
                throw ToolError(
                    "\(connection.server) shares \(query.types.count) types; name at most 64 with --types (healthsync types lists them)")
            }
        }

        let sink = try FetchSink(output: output, resumingAt: progress?.bytes, standardOutput: context.output)
        defer { sink.finish() }
        var kept = progress ?? FetchProgress(serverCertificateSHA256: state.serverCertificateSHA256, query: query)
        if progress == nil {
            if query.format == "csv" { try sink.writer.write(Client.csvHeader) }
            try sink.keep(&kept)
        } else {
            context.diagnostics.note("resuming \(output!) after \(kept.offset) samples in \(kept.pages) pages")
        }

        var complete = false
        var failure: ToolError?
        do {
            while !Signals.stopRequested {
                let ask = query.limit.map { min(pageSize, $0 - kept.offset) } ?? pageSize
                var body = JSONObject([JSONField("types", .array(query.types.map { .string($0) }))])
                if let since = query.since { body["startDate"] = .string(Timestamp.format(milliseconds: since)) }
                if let until = query.until { body["endDate"] = .string(Timestamp.format(milliseconds: until)) }
                body["offset"] = .integer(kept.offset)
                body["limit"] = .integer(ask)
                let page = "page \(kept.pages + 1)"
                let answer = try patiently(connection, "POST", Client.dataPath, body: body, what: page, policy: policy, tally: &tally)
                guard answer.status == 200 else { throw SyncConnection.refusal(answer, server: connection.server) }
                guard let samples = answer.object["samples"]?.arrayValue, let hasMore = answer.object["hasMore"]?.boolValue,
                    samples.count <= ask
                else {
                    throw ToolError("\(connection.server) answered \(page) without samples and hasMore")
                }
                // A take between two pages (or between a fetch and its resumption) moves every
                // offset: the pages would not fit together.
                let pageSnapshot = answer.object["snapshotId"]?.stringValue
                if let first = kept.snapshot, first != pageSnapshot {
                    throw ToolError(
                        "the server's archive changed during the fetch (snapshot \(first ?? "none") became \(pageSnapshot ?? "none")), so the pages do not fit together"
                            + (progress != nil ? "; fetch again without --resume" : ""))
                }
                kept.snapshot = .some(pageSnapshot)
                for sample in samples { try emit(sample, types: query.types, format: query.format, to: sink.writer) }
                kept.pages += 1
                kept.offset += samples.count
                try sink.keep(&kept)
                if !hasMore {
                    complete = true
                    break
                }
                if samples.isEmpty { throw ToolError("\(connection.server) said more samples follow page \(kept.pages) but sent none") }
                if let limit = query.limit, kept.offset >= limit { break }
            }
        } catch let error as ToolError {
            failure = error
        }
        if query.format == "ndjson" {
            let quality = complete && query.since == nil && query.until == nil ? "complete" : "partial"
            for type in query.types {
                try sink.writer.write(
                    JSONValue.object(
                        JSONObject([
                            JSONField("type", .string("type_status")), JSONField("type_identifier", .string(type)),
                            JSONField("quality", .string(quality)),
                        ])
                    ).encoded())
            }
        }
        try sink.writer.flush()
        if tally.retries > 0 {
            context.diagnostics.note(
                "\(tally.retries) \(tally.retries == 1 ? "request was" : "requests were") tried again, after "
                    + "\(DurationText.describe(milliseconds: tally.waitedMs)) of waiting in all")
        }
        let finished = failure == nil && !Signals.stopRequested
        if finished, let output { try FetchProgress.remove(for: output) }
        if let failure {
            context.diagnostics.error(
                failure.message + "; the fetch stopped after \(kept.offset) samples in \(kept.pages) pages"
                    + (query.format == "ndjson" ? " (the types are marked partial)" : "")
                    + (output.map { "; healthsync fetch --output \($0) --resume continues it" }
                        ?? "; into --output FILE, --resume can continue a fetch cut short"))
            return .failure
        }
        if !complete, !Signals.stopRequested {
            context.diagnostics.note(
                "stopped at --limit \(query.limit ?? 0) with more samples in the range"
                    + (query.format == "ndjson" ? " (the types are marked partial)" : ""))
        }
        return .success
    }

    /// The query the command line asks: the types, the range, the limit and the format.
    private func fetchQuery() throws -> FetchQuery {
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
        return FetchQuery(
            types: types, since: since, until: until,
            limit: options.has("limit") ? try options.integer("limit", default: 0, in: 1...Int(Int32.max)) : nil,
            format: try options.choice("format"))
    }

    /// One sample of an answer, as a `health_record` line or a CSV row.
    private func emit(_ value: JSONValue, types: [String], format: String, to writer: RecordWriter) throws {
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
        try writer.write(
            JSONValue.object(
                JSONObject([
                    JSONField("type", .string("health_record")), JSONField("type_identifier", .string(type)),
                    JSONField("start", .string(Timestamp.format(milliseconds: start))),
                    JSONField("end", .string(Timestamp.format(milliseconds: end))),
                    JSONField("value", text.map { .string($0) } ?? number), JSONField("unit", unit.map { .string($0) } ?? .null),
                    JSONField("source", source.map { .string($0) } ?? .null), JSONField("uuid", sample["id"] ?? .null),
                ])
            ).encoded())
    }
}

/// What a fetch asks: the types (empty: every shared one, decided when the fetch starts), the
/// range (milliseconds), at most how many samples, and the output's format.
struct FetchQuery: Equatable {
    var types: [String]
    var since: Int64?
    var until: Int64?
    var limit: Int?
    var format: String
}

/// A fetch into a file, kept beside it (`FILE.resume`, mode 0600) after every page: what it
/// asked, of which server (its certificate's SHA-256), from which snapshot of the server's
/// archive, and how far it got (samples, pages, and the file's length then). Removed once the
/// fetch is done; `--resume` cuts the file back to that length and asks the next page.
struct FetchProgress {
    var serverCertificateSHA256: String
    var query: FetchQuery
    /// The snapshot the pages came from; nil before the first page, `.some(nil)` for none.
    var snapshot: String??
    var offset = 0
    var pages = 0
    var bytes: Int64 = 0

    init(serverCertificateSHA256: String, query: FetchQuery) {
        self.serverCertificateSHA256 = serverCertificateSHA256
        self.query = query
    }

    /// The file beside `output`.
    static func path(for output: String) -> String { output + ".resume" }

    /// The progress as a JSON object (`fetch_progress`).
    var object: JSONObject {
        var object = JSONObject([
            JSONField("type", .string("fetch_progress")),
            JSONField("server_certificate_sha256", .string(serverCertificateSHA256)),
            JSONField("types", .array(query.types.map { .string($0) })),
            JSONField("since", query.since.map { .string(Timestamp.format(milliseconds: $0)) } ?? .null),
            JSONField("until", query.until.map { .string(Timestamp.format(milliseconds: $0)) } ?? .null),
            JSONField("limit", query.limit.map { .integer($0) } ?? .null),
            JSONField("format", .string(query.format)),
            JSONField("offset", .integer(offset)), JSONField("pages", .integer(pages)), JSONField("bytes", .integer(Int(bytes))),
        ])
        if let snapshot { object["snapshot_id"] = snapshot.map { .string($0) } ?? .null }
        return object
    }

    /// Reads the progress kept beside `output`; a missing or unreadable one is an error that says so.
    static func load(for output: String) throws -> FetchProgress {
        let file = path(for: output)
        guard let data = FileManager.default.contents(atPath: file) else {
            throw ToolError("nothing to resume: no \(file) (the fetch into \(output) was finished, or never began)")
        }
        func broken() -> ToolError { ToolError("\(file) is not a fetch's progress (fetch again without --resume)") }
        guard let object = try? JSONParser.parse([UInt8](data)).objectValue, object["type"]?.stringValue == "fetch_progress",
            let sha256 = object["server_certificate_sha256"]?.stringValue, let types = object["types"]?.arrayValue,
            let format = object["format"]?.stringValue, ["ndjson", "csv"].contains(format),
            let offset = object["offset"]?.intValue, let pages = object["pages"]?.intValue, let bytes = object["bytes"]?.intValue,
            offset >= 0, pages >= 0, bytes >= 0
        else { throw broken() }
        func time(_ key: String) throws -> Int64? {
            guard let value = object[key], !value.isNull else { return nil }
            guard let text = value.stringValue, let time = Timestamp.parse(text) else { throw broken() }
            return time
        }
        var progress = FetchProgress(
            serverCertificateSHA256: sha256,
            query: FetchQuery(
                types: types.compactMap(\.stringValue), since: try time("since"), until: try time("until"),
                limit: object["limit"]?.intValue, format: format))
        guard progress.query.types.count == types.count, progress.query.types.allSatisfy(HealthTypeIdentifier.isValid) else {
            throw broken()
        }
        if let snapshot = object["snapshot_id"] { progress.snapshot = .some(snapshot.stringValue) }
        progress.offset = offset
        progress.pages = pages
        progress.bytes = Int64(bytes)
        return progress
    }

    /// Writes the progress beside `output` (temp + fsync + rename, mode 0600).
    func save(for output: String) throws {
        try AtomicFile.write(JSONValue.object(object).jsonText + "\n", to: FetchProgress.path(for: output))
    }

    /// Removes the progress of a finished fetch.
    static func remove(for output: String) throws {
        guard unlink(path(for: output)) == 0 || errno == ENOENT else {
            throw ToolError("cannot remove \(path(for: output)): \(String(cString: strerror(errno)))")
        }
    }
}

/// Where a fetch writes: standard output, or `--output FILE` (mode 0600: health data), whose
/// length after each page is kept in its progress.
final class FetchSink {
    let writer: RecordWriter
    /// The file, when there is one.
    private let output: String?
    private let fd: Int32

    /// Standard output without `output`; else the file, made anew, or with `resumingAt` cut
    /// back to that length (the end of the last page written) to be written on from there.
    init(output: String?, resumingAt bytes: Int64?, standardOutput: RecordWriter) throws {
        self.output = output
        guard let output else {
            writer = standardOutput
            fd = -1
            return
        }
        let flags = bytes == nil ? O_WRONLY | O_CREAT | O_TRUNC : O_WRONLY
        let opened = open(output, flags | O_CLOEXEC, 0o600)
        guard opened >= 0 else { throw ToolError("cannot open \(output): \(String(cString: strerror(errno)))") }
        if let bytes {
            var status = stat()
            guard fstat(opened, &status) == 0, Int64(status.st_size) >= bytes else {
                close(opened)
                throw ToolError("\(output) is shorter than the fetch kept it (\(bytes) bytes): fetch again without --resume")
            }
            guard ftruncate(opened, off_t(bytes)) == 0, lseek(opened, off_t(bytes), SEEK_SET) == off_t(bytes) else {
                close(opened)
                throw ToolError("cannot cut \(output) back to \(bytes) bytes: \(String(cString: strerror(errno)))")
            }
        }
        fd = opened
        writer = RecordWriter(fd: opened)
    }

    /// Flushes what was written; into a file, makes it durable and keeps the progress with the
    /// file's length now (standard output has nothing to resume).
    func keep(_ progress: inout FetchProgress) throws {
        try writer.flush()
        guard let output else { return }
        guard fsync(fd) == 0 else { throw ToolError("cannot write \(output): \(String(cString: strerror(errno)))") }
        progress.bytes = Int64(lseek(fd, 0, SEEK_CUR))
        try progress.save(for: output)
    }

    /// Closes the file, if there is one.
    func finish() {
        if fd >= 0 { close(fd) }
    }
}
