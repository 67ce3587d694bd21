import HTTPTransport
import VitalsKit
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a ClickHouse store is: `clickhouse://[user[:password]@]host[:port]/database[?options]`.
///
/// The password comes from the URL, else from the file named by `password_file=PATH`, else from
/// `$VITALS_CLICKHOUSE_PASSWORD`; it is never printed (`display` masks it).
struct ClickHouseLocation: Sendable, Equatable {
    /// `http` or `https` (`?secure=1`).
    var scheme = "http"
    var host: String
    var port: Int
    var database: String
    var user: String?
    var password: String?
    /// `?cluster=NAME`: a `Distributed` table over local tables on every shard of the cluster.
    var cluster: String?
    /// `?shards=HOST:PORT,...`: every shard's HTTP endpoint, where store-samples runs the DDL,
    /// mutations and partition drops on the local tables. Without it, a cluster's DDL runs
    /// `ON CLUSTER` (which needs ClickHouse Keeper or ZooKeeper).
    var shards: [String] = []
    /// The URL as given, with the password masked.
    var display: String

    /// The URL prefix: `clickhouse://`.
    static let prefix = "clickhouse://"

    /// Reads a `--db` value starting with `clickhouse://`; `environment` gives
    /// `VITALS_CLICKHOUSE_PASSWORD`, `readFile` a password file's text.
    init(_ text: String, environment: [String: String], readFile: (String) throws -> String) throws {
        let url = URLText(text)
        var display = "clickhouse://"
        if let user = url.redactedUserInfo { display += user + "@" }
        display += url.hostPort + url.path + (url.redactedQuery.map { "?" + $0 } ?? "")
        self.display = display
        guard url.scheme == "clickhouse", !url.host.isEmpty else {
            throw UsageError("--db \(display): expected clickhouse://[user[:password]@]host[:port]/database[?options]")
        }
        host = url.host
        let name = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
        guard !name.isEmpty, name.utf8.allSatisfy({ ClickHouseLocation.isNameByte($0) }) else {
            throw UsageError("--db \(display): name a database of letters, digits and '_' after the host (clickhouse://host:8123/vitals)")
        }
        database = name
        if let info = url.userInfo {
            if let colon = info.firstIndex(of: ":") {
                user = ClickHouseLocation.percentDecoded(String(info[..<colon]))
                password = ClickHouseLocation.percentDecoded(String(info[info.index(after: colon)...]))
            } else {
                user = ClickHouseLocation.percentDecoded(info)
            }
        }
        var secure = false
        var passwordFile: String?
        for part in (url.query ?? "").split(separator: "&") where !part.isEmpty {
            let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = String(pieces[0])
            let value = pieces.count > 1 ? ClickHouseLocation.percentDecoded(String(pieces[1])) : ""
            switch key {
            case "cluster":
                guard !value.isEmpty, value.utf8.allSatisfy({ ClickHouseLocation.isNameByte($0) }) else {
                    throw UsageError("--db \(display): cluster= wants the name of a cluster in the servers' remote_servers")
                }
                cluster = value
            case "shards":
                shards = value.split(separator: ",").map(String.init)
                guard !shards.isEmpty, shards.allSatisfy({ URLText($0).port != nil && !URLText($0).host.isEmpty }) else {
                    throw UsageError("--db \(display): shards= wants every shard's HTTP endpoint as HOST:PORT, comma-separated")
                }
            case "secure": secure = value == "1" || value == "true"
            case "password_file": passwordFile = value
            default:
                throw UsageError("--db \(display): unknown option '\(key)' (cluster, shards, secure, password_file)")
            }
        }
        if !shards.isEmpty, cluster == nil {
            throw UsageError("--db \(display): shards= goes with cluster=NAME")
        }
        scheme = secure ? "https" : "http"
        port = url.port ?? (secure ? 8443 : 8123)
        if password == nil, let passwordFile {
            do {
                password = try readFile(passwordFile).trimmingCharacters(in: .newlines)
            } catch {
                throw ToolError("--db \(display): cannot read the password file \(passwordFile)")
            }
        }
        if password == nil, let fromEnvironment = environment["VITALS_CLICKHOUSE_PASSWORD"], !fromEnvironment.isEmpty {
            password = fromEnvironment
        }
    }

    /// A database, table or cluster name: letters, digits, `_`.
    static func isNameByte(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x5F
    }

    static func percentDecoded(_ text: String) -> String {
        guard text.contains("%") else { return text }
        var bytes: [UInt8] = []
        var index = text.utf8.startIndex
        let utf8 = text.utf8
        while index < utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%"), utf8.distance(from: index, to: utf8.endIndex) >= 3,
               let value = UInt8(String(decoding: utf8[utf8.index(after: index)..<utf8.index(index, offsetBy: 3)], as: UTF8.self), radix: 16) {
                bytes.append(value)
                index = utf8.index(index, offsetBy: 3)
            } else {
                bytes.append(byte)
                index = utf8.index(after: index)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `text` for a URL's query string: unreserved bytes as they are, the rest `%XX`.
    static func percentEncoded(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count * 3 / 2)
        for byte in text.utf8 {
            if isNameByte(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "~") {
                out.append(byte)
            } else {
                out.append(contentsOf: [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

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
    private let engine = HTTPEngine(maxInFlight: 1)
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
    func run(_ query: String, data: [UInt8]? = nil, endpoint: String? = nil, settings: [String: String] = [:],
             beforeResend: (() throws -> Void)? = nil) throws -> [UInt8] {
        try finish(start(query, data: data, endpoint: endpoint, settings: settings), beforeResend: beforeResend)
    }

    /// Sends a request and returns at once; `finish` waits for its answer (and retries), `pump`
    /// moves it along meanwhile. One request is on the wire at a time: later ones wait their turn.
    func start(_ query: String, data: [UInt8]? = nil, endpoint: String? = nil, settings: [String: String] = [:]) -> Pending {
        let base = "\(location.scheme)://\(endpoint ?? (location.host.contains(":") ? "[\(location.host)]" : location.host) + ":\(location.port)")/"
        // Every table name is qualified with the database, which need not exist yet.
        var parameters: [String] = []
        for (key, value) in settings.sorted(by: { $0.key < $1.key }) { parameters.append(key + "=" + ClickHouseLocation.percentEncoded(value)) }
        if data != nil { parameters.append("query=" + ClickHouseLocation.percentEncoded(query)) }
        var request = HTTPRequest(url: base + "?" + parameters.joined(separator: "&"), method: "POST", timeoutMs: timeoutMs,
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
        return Pending(request: request, token: submit(request), started: Clock.monotonicMilliseconds(), place: place, isInsert: data != nil)
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
                if result.stoppedAtLimit { throw ToolError("ClickHouse at \(pending.place): an answer larger than \(ClickHouseClient.maxAnswerBytes >> 20) MiB") }
                return result.body
            }
            if result.failure == nil {
                throw ToolError("ClickHouse at \(pending.place) refused: \(ClickHouseClient.explain(result.body, code: result.httpCode))")
            }
            attempt += 1
            let elapsed = Clock.monotonicMilliseconds() - pending.started
            let pause: Int64 = waitMs > 0 ? min(2_000, 100 << Int64(min(attempt, 5))) : (attempt == 1 ? 100 : 400)
            let retry = waitMs > 0 ? elapsed + pause < waitMs : attempt < 3
            if !retry || Signals.stopRequested {
                let why = result.curlMessage.isEmpty ? (result.failure?.rawValue ?? "no answer") : result.curlMessage
                throw ToolError("cannot reach ClickHouse at \(pending.place): \(why)"
                                + (waitMs > 0 ? " (still failing after --wait \(DefaultText.duration(milliseconds: waitMs)))" : " (--wait DURATION keeps retrying)"))
            }
            usleep(useconds_t(pause * 1000))
            if pending.isInsert { try beforeResend?() }
            result = wait(for: submit(pending.request))
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

/// Rows in ClickHouse's `RowBinary` format: little-endian numbers, LEB128-length strings, a
/// null byte before a Nullable's value. Exact for doubles both ways (the text formats' parser
/// of 18.16 can be one ulp off), and the cheapest for the server to read.
struct RowBinaryWriter {
    var bytes: [UInt8] = []

    mutating func uint8(_ value: UInt8) { bytes.append(value) }

    mutating func int64(_ value: Int64) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }

    mutating func uint64(_ value: UInt64) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }

    mutating func float64(_ value: Double) { uint64(value.bitPattern) }

    mutating func string(_ value: UnsafeBufferPointer<UInt8>) {
        var length = UInt64(value.count)
        repeat {
            let low = UInt8(length & 0x7F)
            length >>= 7
            bytes.append(length == 0 ? low : low | 0x80)
        } while length != 0
        bytes.append(contentsOf: value)
    }

    mutating func string(_ value: String) {
        var value = value
        value.withUTF8 { string($0) }
    }

    mutating func optionalString(_ value: String?) {
        guard let value else { return bytes.append(1) }
        bytes.append(0)
        string(value)
    }

    mutating func optionalBytes(_ value: UnsafeBufferPointer<UInt8>?) {
        guard let value else { return bytes.append(1) }
        bytes.append(0)
        string(value)
    }

    mutating func optionalInt64(_ value: Int64?) {
        guard let value else { return bytes.append(1) }
        bytes.append(0)
        int64(value)
    }

    mutating func optionalFloat64(_ value: Double?) {
        guard let value else { return bytes.append(1) }
        bytes.append(0)
        float64(value)
    }

    mutating func optionalUInt8(_ value: UInt8?) {
        guard let value else { return bytes.append(1) }
        bytes.append(0)
        bytes.append(value)
    }
}

/// Reads an answer in `RowBinary`, column by column as the query listed them.
struct RowBinaryReader {
    let bytes: [UInt8]
    private(set) var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { offset >= bytes.count }

    struct Truncated: Error {}

    private mutating func take(_ count: Int) throws -> Int {
        guard offset + count <= bytes.count else { throw ToolError("ClickHouse sent a truncated answer") }
        defer { offset += count }
        return offset
    }

    mutating func uint8() throws -> UInt8 { bytes[try take(1)] }

    mutating func uint64() throws -> UInt64 {
        let start = try take(8)
        var value: UInt64 = 0
        for index in (0..<8).reversed() { value = value << 8 | UInt64(bytes[start + index]) }
        return value
    }

    mutating func int64() throws -> Int64 { Int64(bitPattern: try uint64()) }

    mutating func float64() throws -> Double { Double(bitPattern: try uint64()) }

    mutating func isNull() throws -> Bool { try uint8() != 0 }

    /// The place of the next string's bytes (after its LEB128 length).
    private mutating func stringRange() throws -> Range<Int> {
        var length = 0
        var shift = 0
        while true {
            let byte = try uint8()
            length |= Int(byte & 0x7F) << shift
            if byte & 0x80 == 0 { break }
            shift += 7
        }
        let start = try take(length)
        return start..<(start + length)
    }

    mutating func string() throws -> String {
        String(decoding: bytes[try stringRange()], as: UTF8.self)
    }

    /// A string's bytes, handed to `body` without copying.
    mutating func withStringBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) throws -> R {
        let range = try stringRange()
        return try bytes.withUnsafeBufferPointer { try body(UnsafeBufferPointer(rebasing: $0[range])) }
    }

    mutating func optionalString() throws -> String? { try isNull() ? nil : try string() }
    mutating func optionalInt64() throws -> Int64? { try isNull() ? nil : try int64() }
    mutating func optionalFloat64() throws -> Double? { try isNull() ? nil : try float64() }
    mutating func optionalUInt8() throws -> UInt8? { try isNull() ? nil : try uint8() }
}
