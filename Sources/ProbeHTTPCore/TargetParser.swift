import HTTPTransport
import VitalsKit

/// Defaults for target fields, set by command-line options.
public struct TargetDefaults: Sendable {
    /// `timeout_seconds` when a target has none (5 s, isitup's).
    public var timeoutMs = 5000
    /// `http_ok_threshold_ms` when a target has none (none: latency alone never degrades).
    public var okThresholdMs: Double?
    /// `http_degraded_threshold_ms` when a target has none.
    public var degradedThresholdMs: Double?
    /// `ssl_ok_threshold_days` (30, OnlineTracker's).
    public var sslOkDays = 30
    /// `ssl_warning_threshold_days` (14, OnlineTracker's).
    public var sslWarningDays = 14
    /// `ip` when a target has none.
    public var ip: IPChoice = .any
    /// `max_redirects` when a target has none.
    public var maxRedirects = 5
    /// A speed test for every target without `speed_test_bytes` (`--speed-test`).
    public var speedTestBytes: Int?
    /// Skip certificate verification for every target (`--insecure`).
    public var insecure = false
    /// `--interval`: overrides every target's `check_interval`.
    public var intervalOverrideMs: Int64?

    /// The defaults of the seeds.
    public init() {}
}

/// Reads targets: one per line as a bare URL or a JSON object, or a file holding one JSON
/// array of targets (isitup's `services.json`). Blank lines and lines starting with `#` are
/// skipped. Every problem is a diagnostic naming the line; the other targets are kept.
public struct TargetParser {
    /// The targets read so far, in input order.
    public private(set) var targets: [Target] = []
    private let defaults: TargetDefaults
    private let diagnostics: Diagnostics
    private var ids = TargetIDs()

    /// Field names probe-http reads from a target.
    public static let knownFields: Set<String> = [
        "id", "name", "url", "target", "kind", "method", "headers", "body", "expected_status", "expected_content",
        "expected_body_hash", "timeout_seconds", "http_ok_threshold_ms", "http_degraded_threshold_ms",
        "ssl_ok_threshold_days", "ssl_warning_threshold_days", "check_interval", "max_redirects", "ip",
        "speed_test_bytes", "client_cert", "client_key", "pinned_pubkey", "ca_file", "tls_min", "insecure",
        "type", "enabled", "config",
    ]

    /// Creates a parser.
    public init(defaults: TargetDefaults, diagnostics: Diagnostics) {
        self.defaults = defaults
        self.diagnostics = diagnostics
    }

    /// Reads every target from `reader`.
    public mutating func read(_ reader: LineReader) {
        var sawContent = false
        while let event = reader.next() {
            switch event {
            case .tooLong(let length):
                diagnostics.error("line is \(length) bytes, over the 16 MiB limit; skipped", source: reader.source, line: reader.lineNumber)
            case .line(let bytes):
                guard let first = bytes.firstIndex(where: { $0 != 0x20 && $0 != 0x09 }) else { continue }
                if bytes[first] == UInt8(ascii: "#") { continue }
                if !sawContent, bytes[first] == UInt8(ascii: "[") {
                    readArray(startingWith: bytes, reader: reader)
                    return
                }
                sawContent = true
                readLine(bytes, source: reader.source, line: reader.lineNumber)
            }
        }
    }

    /// Reads one line (a bare URL or a JSON object).
    public mutating func readLine(_ bytes: UnsafeBufferPointer<UInt8>, source: String, line: Int) {
        let first = bytes.firstIndex(where: { $0 != 0x20 && $0 != 0x09 }) ?? 0
        if bytes[first] == UInt8(ascii: "{") {
            do {
                let value = try JSONParser.parse(bytes)
                guard case .object(let object) = value else { return }
                add(object, source: source, line: line)
            } catch {
                diagnostics.error("not valid JSON: \(error)", source: source, line: line)
            }
            return
        }
        let text = String(decoding: bytes, as: UTF8.self).trimmingSpaces
        if text.contains(where: { $0 == " " || $0 == "\t" }) {
            diagnostics.error("expected a URL or a JSON object, got '\(Redaction.url(String(text.prefix(80))))'", source: source, line: line)
            return
        }
        add(JSONObject([JSONField("url", .string(text))]), source: source, line: line)
    }

    private mutating func readArray(startingWith firstLine: UnsafeBufferPointer<UInt8>, reader: LineReader) {
        let startLine = reader.lineNumber
        var whole = Array(firstLine)
        while let event = reader.next() {
            whole.append(0x0A)
            switch event {
            case .line(let bytes): whole.append(contentsOf: bytes)
            case .tooLong(let length):
                diagnostics.error("line is \(length) bytes, over the 16 MiB limit; the target array cannot be read",
                                  source: reader.source, line: reader.lineNumber)
                return
            }
        }
        whole.withUnsafeBufferPointer { buffer in
            let elements: [Range<Int>]
            do {
                elements = try JSONParser.scanArray(buffer)
            } catch let error as JSONSyntaxError {
                let line = startLine + buffer[0..<min(error.column - 1, buffer.count)].filter { $0 == 0x0A }.count
                diagnostics.error("not a valid JSON array of targets: \(error.message)", source: reader.source, line: line)
                return
            } catch {
                return
            }
            var newlines = 0
            var counted = 0
            for range in elements {
                for index in counted..<range.lowerBound where buffer[index] == 0x0A { newlines += 1 }
                counted = range.lowerBound
                let line = startLine + newlines
                let element = UnsafeBufferPointer(rebasing: buffer[range])
                if element.first == UInt8(ascii: "\"") {
                    if case .string(let url)? = try? JSONParser.parse(element) {
                        add(JSONObject([JSONField("url", .string(url))]), source: reader.source, line: line)
                    }
                } else if element.first == UInt8(ascii: "{") {
                    if case .object(let object)? = try? JSONParser.parse(element) {
                        add(object, source: reader.source, line: line)
                    } else {
                        diagnostics.error("target is not valid JSON", source: reader.source, line: line)
                    }
                } else {
                    diagnostics.error("expected a target object or a URL string in the array", source: reader.source, line: line)
                }
            }
        }
    }

    /// Validates one target object and adds it (with a unique id), or reports why not.
    public mutating func add(_ object: JSONObject, source: String, line: Int) {
        if let skipped = TargetParser.otherProbeKind(object) {
            diagnostics.warning("kind '\(skipped)' is probed by probe-ping; skipped", source: source, line: line)
            return
        }
        switch TargetParser.build(object, defaults: defaults) {
        case .failure(let problem):
            diagnostics.error(problem.message, source: source, line: line)
        case .success(nil):
            return
        case .success(var target?):
            target.source = source
            target.line = line
            let (id, first) = ids.register(target.id, source: source, line: line)
            if let first {
                diagnostics.error("duplicate id '\(target.id)' (first on \(first.source):\(first.line)); probing this one as '\(id)'",
                                  source: source, line: line)
                target.id = id
            }
            targets.append(target)
        }
    }

    private static func otherProbeKind(_ object: JSONObject) -> String? {
        if case .string(let kind)? = object["kind"], kind == "ping" || kind == "tcp" { return kind }
        return nil
    }

    /// A problem with one target, in words.
    public struct Problem: Error {
        /// What is wrong and how to fix it.
        public let message: String
    }

    /// Builds a target from an object; `.success(nil)` for a target that is switched off (`enabled: false`).
    public static func build(_ object: JSONObject, defaults: TargetDefaults) -> Result<Target?, Problem> {
        do {
            return .success(try buildThrowing(object, defaults: defaults))
        } catch let problem as Problem {
            return .failure(problem)
        } catch {
            return .failure(Problem(message: "\(error)"))
        }
    }

    private static func buildThrowing(_ object: JSONObject, defaults: TargetDefaults) throws -> Target? {
        if case .string(let type)? = object["type"], type != "target" {
            throw Problem(message: "a '\(type)' record is not a target")
        }
        if case .bool(false)? = object["enabled"] { return nil }
        let config = object["config"]?.objectValue ?? JSONObject()
        func field(_ key: String) -> JSONValue? {
            if let value = object[key], !value.isNull { return value }
            if let value = config[key], !value.isNull { return value }
            return nil
        }
        func string(_ key: String) throws -> String? {
            guard let value = field(key) else { return nil }
            guard case .string(let text) = value else {
                throw Problem(message: "field '\(key)' must be a string, not \(value.typeName)")
            }
            return text
        }
        func number(_ key: String, _ range: ClosedRange<Double>) throws -> Double? {
            guard let value = field(key) else { return nil }
            guard let number = value.doubleValue ?? value.stringValue.flatMap(Double.init), range.contains(number) else {
                throw Problem(message: "field '\(key)' must be a number from \(plain(range.lowerBound)) to \(plain(range.upperBound)), not \(value.jsonText)")
            }
            return number
        }
        func integer(_ key: String, _ range: ClosedRange<Int>) throws -> Int? {
            guard let value = field(key) else { return nil }
            guard let number = value.intValue ?? value.stringValue.flatMap({ Int($0) }), range.contains(number) else {
                throw Problem(message: "field '\(key)' must be a whole number from \(range.lowerBound) to \(range.upperBound), not \(value.jsonText)")
            }
            return number
        }

        // The URL: `url`, or `target` as OnlineTracker's monitors name it.
        guard var url = try string("url") ?? string("target") else {
            throw Problem(message: "target has no 'url'")
        }
        url = url.trimmingSpaces
        if url.isEmpty { throw Problem(message: "target has an empty 'url'") }
        var scheme = URLText(url).scheme
        if scheme == nil {
            guard TargetParser.looksLikeAuthority(url) else {
                throw Problem(message: "'\(Redaction.url(url))' is not a URL (expected http://, https:// or ssl://, or host[:port][/path])")
            }
            url = "https://" + url
            scheme = "https"
        }
        let kindText = try string("kind")?.lowercased()
        var kind: TargetKind
        switch scheme {
        case "http"?: kind = .http
        case "https"?: kind = .https
        case "ssl"?, "tls"?:
            kind = .ssl
            url = "https://" + String(url.dropFirst(scheme!.count + 3))
        default:
            throw Problem(message: "unsupported scheme '\(scheme ?? "")' in '\(Redaction.url(url))' (probe-http speaks http and https)")
        }
        if let kindText {
            guard let asked = TargetKind(rawValue: kindText) else {
                throw Problem(message: "field 'kind' must be http, https or ssl (ping and tcp are probe-ping's), not '\(kindText)'")
            }
            if asked == .ssl {
                guard scheme != "http" else { throw Problem(message: "kind 'ssl' needs an https:// or ssl:// URL") }
                kind = .ssl
            } else if asked == .https, kind == .http {
                throw Problem(message: "kind 'https' needs an https:// URL")
            } else if asked == .http, kind == .https {
                kind = .https
            }
        }
        let parts = URLText(url)
        if parts.host.isEmpty { throw Problem(message: "'\(Redaction.url(url))' has no host") }

        let id: String
        if let rawID = field("id") {
            let text: String
            switch rawID {
            case .string(let value): text = value
            case .number(let value): text = value
            default: throw Problem(message: "field 'id' must be a string or a number, not \(rawID.typeName)")
            }
            id = TargetIDs.normalize(text) ?? TargetIDs.derive(from: parts)
        } else {
            id = TargetIDs.derive(from: parts)
        }
        let name = try string("name")?.trimmingSpaces.nonEmpty ?? (field("id") != nil ? id : TargetParser.defaultName(for: parts))
        var target = Target(id: id, name: name, url: url, kind: kind, parts: parts)

        if let method = try string("method")?.trimmingSpaces.uppercased() {
            guard !method.isEmpty, method.allSatisfy({ $0.isLetter || $0 == "-" || $0 == "_" }) else {
                throw Problem(message: "field 'method' must be an HTTP method such as GET or POST")
            }
            target.method = method
        }
        if let headers = field("headers") {
            switch headers {
            case .object(let list):
                for header in list {
                    guard case .string(let value) = header.value else {
                        throw Problem(message: "header '\(header.key)' must have a string value")
                    }
                    try checkHeader(header.key, value)
                    target.headers.append("\(header.key): \(value)")
                }
            case .array(let list):
                for item in list {
                    guard case .string(let line) = item, let colon = line.firstIndex(of: ":") else {
                        throw Problem(message: "field 'headers' entries must be \"Name: value\" strings")
                    }
                    try checkHeader(String(line[..<colon]).trimmingSpaces, String(line[line.index(after: colon)...]))
                    target.headers.append(line)
                }
            default:
                throw Problem(message: "field 'headers' must be an object of names and values")
            }
        }
        if let body = try string("body") { target.body = Array(body.utf8) }
        if let expected = field("expected_status") {
            switch expected {
            case .number:
                guard let code = expected.intValue, (100...599).contains(code) else {
                    throw Problem(message: "field 'expected_status' must be a status code from 100 to 599")
                }
                target.expectedStatus = StatusSet([code...code])
            case .string(let text):
                guard let set = StatusSet.parse(text) else {
                    throw Problem(message: "field 'expected_status' must look like 200, \"200-299\", \"2xx\" or \"200,204\", not '\(text)'")
                }
                target.expectedStatus = set
            case .array(let items):
                var ranges: [ClosedRange<Int>] = []
                for item in items {
                    if let code = item.intValue, (100...599).contains(code) {
                        ranges.append(code...code)
                    } else if let text = item.stringValue, let set = StatusSet.parse(text) {
                        ranges.append(contentsOf: set.ranges)
                    } else {
                        throw Problem(message: "field 'expected_status' has an entry that is not a status code or range: \(item.jsonText)")
                    }
                }
                guard !ranges.isEmpty else { throw Problem(message: "field 'expected_status' is an empty list") }
                target.expectedStatus = StatusSet(ranges)
            default:
                throw Problem(message: "field 'expected_status' must be a code, a list or a range, not \(expected.typeName)")
            }
        }
        if let content = try string("expected_content") {
            guard !content.isEmpty else { throw Problem(message: "field 'expected_content' is empty") }
            target.expectedContent = content
        }
        if var hash = try string("expected_body_hash")?.trimmingSpaces.lowercased() {
            if hash.hasPrefix("sha256:") { hash.removeFirst(7) }
            guard hash.count == 64, hash.allSatisfy({ $0.isHexDigit }) else {
                throw Problem(message: "field 'expected_body_hash' must be a SHA-256 in 64 hex digits")
            }
            target.expectedBodyHash = hash
        }
        target.timeoutMs = try number("timeout_seconds", 0.001...86_400).map { Int(($0 * 1000).rounded()) } ?? defaults.timeoutMs
        target.okThresholdMs = try number("http_ok_threshold_ms", 0...86_400_000) ?? defaults.okThresholdMs
        target.degradedThresholdMs = try number("http_degraded_threshold_ms", 0...86_400_000) ?? defaults.degradedThresholdMs
        if let ok = target.okThresholdMs, let degraded = target.degradedThresholdMs, degraded < ok {
            throw Problem(message: "http_degraded_threshold_ms (\(plain(degraded))) is below http_ok_threshold_ms (\(plain(ok)))")
        }
        let okDays = try integer("ssl_ok_threshold_days", 0...3650)
        let warningDays = try integer("ssl_warning_threshold_days", 0...3650)
        target.sslOkDays = okDays ?? defaults.sslOkDays
        target.sslWarningDays = warningDays ?? defaults.sslWarningDays
        if target.sslWarningDays > target.sslOkDays {
            if let okDays, let warningDays {
                throw Problem(message: "ssl_warning_threshold_days (\(warningDays)) is above ssl_ok_threshold_days (\(okDays))")
            }
            // Only one was given: the other follows it, so the band never inverts.
            if okDays != nil { target.sslWarningDays = target.sslOkDays } else { target.sslOkDays = target.sslWarningDays }
        }
        if let interval = field("check_interval") {
            let ms: Int64?
            if let seconds = interval.doubleValue, seconds > 0, seconds <= 31_536_000 {
                ms = Int64((seconds * 1000).rounded())
            } else if let text = interval.stringValue, let parsed = DurationText.parseMilliseconds(text), parsed > 0 {
                ms = parsed
            } else {
                ms = nil
            }
            guard let ms else { throw Problem(message: "field 'check_interval' must be seconds (60) or a duration (\"5m\"), not \(interval.jsonText)") }
            target.checkIntervalMs = ms
        }
        if let override = defaults.intervalOverrideMs { target.checkIntervalMs = override }
        target.maxRedirects = try integer("max_redirects", 0...50) ?? defaults.maxRedirects
        if let ip = field("ip") {
            let text = ip.stringValue ?? ip.intValue.map(String.init) ?? ""
            guard let choice = IPChoice(rawValue: text) else {
                throw Problem(message: "field 'ip' must be \"4\", \"6\", \"both\" or \"any\", not \(ip.jsonText)")
            }
            target.ip = choice
        } else {
            target.ip = defaults.ip
        }
        target.speedTestBytes = try integer("speed_test_bytes", 1...(1 << 30)) ?? defaults.speedTestBytes
        target.tls.caFile = try string("ca_file")
        target.tls.clientCertificate = try string("client_cert")
        target.tls.clientKey = try string("client_key")
        target.tls.pinnedPublicKey = try string("pinned_pubkey")
        if target.tls.clientKey != nil, target.tls.clientCertificate == nil {
            throw Problem(message: "field 'client_key' needs 'client_cert'")
        }
        if let minimum = field("tls_min") {
            let text = minimum.stringValue ?? (minimum.doubleValue.map { $0 == 1.3 ? "1.3" : $0 == 1.2 ? "1.2" : "" } ?? "")
            guard let version = TLSVersion(rawValue: text) else {
                throw Problem(message: "field 'tls_min' must be \"1.2\" or \"1.3\", not \(minimum.jsonText)")
            }
            target.tls.minimumVersion = version
        }
        if let insecure = field("insecure") {
            guard case .bool(let flag) = insecure else { throw Problem(message: "field 'insecure' must be true or false") }
            target.tls.verify = !flag
        }
        if defaults.insecure { target.tls.verify = false }
        if target.kind == .http, target.tls.clientCertificate != nil || target.tls.pinnedPublicKey != nil {
            throw Problem(message: "TLS fields (client_cert, pinned_pubkey) need an https:// URL")
        }

        for field in object where !TargetParser.knownFields.contains(field.key) && !SampleRecord.ownFields.contains(field.key) {
            target.extraFields.append(field)
        }
        return target
    }

    /// The name of a target without one: its URL without scheme, credentials, query or a trailing `/`.
    public static func defaultName(for parts: URLText) -> String {
        var text = parts.hostPort + parts.path
        while text.hasSuffix("/") { text.removeLast() }
        return text.isEmpty ? parts.host : text
    }

    /// Whether text without a scheme reads as `host[:port][/path]`: a host of letters,
    /// digits, dots and dashes (or a bracketed IPv6 literal), an optional numeric port, and
    /// a path that does not start with `//`. `http:1//x` and `http:/x` are not.
    static func looksLikeAuthority(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        var index = 0
        if bytes.first == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")) else { return false }
            index = close + 1
        } else {
            while index < bytes.count {
                let byte = bytes[index]
                let ok = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-") || byte >= 0x80
                if !ok { break }
                index += 1
            }
            if index == 0 { return false }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ":") {
            let portStart = index + 1
            index = portStart
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 { index += 1 }
            if index == portStart { return false }
        }
        if index == bytes.count { return true }
        guard bytes[index] == UInt8(ascii: "/") || bytes[index] == UInt8(ascii: "?") else { return false }
        return !(index + 1 < bytes.count && bytes[index] == UInt8(ascii: "/") && bytes[index + 1] == UInt8(ascii: "/"))
    }

    private static func checkHeader(_ name: String, _ value: String) throws {
        guard !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_!#$%&'*+.^`|~".contains($0)) }) else {
            throw Problem(message: "header name '\(name)' is not a valid HTTP header name")
        }
        guard !value.contains("\r"), !value.contains("\n") else {
            throw Problem(message: "header '\(name)' has a line break in its value")
        }
    }
}

private func plain(_ value: Double) -> String {
    value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
}

extension String {
    var nonEmpty: String? { isEmpty ? nil : self }
}
