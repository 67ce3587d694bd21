import HTTPTransport
import ProbeKit
import VitalsKit

/// Defaults for target fields, set by command-line options.
struct TargetDefaults: Sendable {
    /// `timeout_seconds` when a target has none (5 s, isitup's).
    var timeoutMs = 5000
    /// `http_ok_threshold_ms` when a target has none (none: latency alone never degrades).
    var okThresholdMs: Double?
    /// `http_degraded_threshold_ms` when a target has none.
    var degradedThresholdMs: Double?
    /// `ssl_ok_threshold_days` (30, OnlineTracker's).
    var sslOkDays = 30
    /// `ssl_warning_threshold_days` (14, OnlineTracker's).
    var sslWarningDays = 14
    /// `ip` when a target has none.
    var ip: IPChoice = .any
    /// `max_redirects` when a target has none.
    var maxRedirects = 5
    /// A speed test for every target without `speed_test_bytes` (`--speed-test`).
    var speedTestBytes: Int?
    /// Skip certificate verification for every target (`--insecure`).
    var insecure = false
    /// `--interval`: overrides every target's `check_interval`.
    var intervalOverrideMs: Int64?
    /// `--agent`: written as each sample's `agent` unless the target names its own.
    var agent: String?

    /// The defaults of the seeds.
    init() {}
}

/// Reads targets: one per line as a bare URL or a JSON object, or a file holding one JSON
/// array of targets (isitup's `services.json`). Blank lines and lines starting with `#` are
/// skipped. Every problem is a diagnostic naming the line; the other targets are kept.
struct TargetParser: TargetSink {
    /// A bare line is a URL.
    static let bareField = "url"
    /// A bare line is a URL.
    static let bareNoun = "URL"
    /// The targets read so far, in input order.
    private(set) var targets: [Target] = []
    /// The targets switched off (`enabled: false`), in input order: not probed; each run
    /// writes a `monitor` record for them instead.
    private(set) var switchedOff: [Target] = []
    private let defaults: TargetDefaults
    /// Where problems are reported.
    let diagnostics: Diagnostics
    private var ids = TargetIDs()

    /// Field names probe-http reads from a target.
    static let knownFields: Set<String> = [
        "id", "name", "url", "target", "kind", "method", "headers", "body", "expected_status", "expected_content",
        "expected_body_hash", "timeout_seconds", "http_ok_threshold_ms", "http_degraded_threshold_ms",
        "ssl_ok_threshold_days", "ssl_warning_threshold_days", "check_interval", "max_redirects", "ip",
        "speed_test_bytes", "client_cert", "client_key", "pinned_pubkey", "ca_file", "tls_min", "insecure",
        "type", "enabled", "config", "depends_on",
    ]

    /// Creates a parser.
    init(defaults: TargetDefaults, diagnostics: Diagnostics) {
        self.defaults = defaults
        self.diagnostics = diagnostics
    }

    /// Reads every target from `reader`.
    mutating func read(_ reader: LineReader) {
        TargetListReader.read(reader, into: &self)
    }

    /// Validates one target object and adds it (with a unique id), or reports why not.
    mutating func add(_ object: JSONObject, source: String, line: Int) {
        let object = TargetFields.readingMonitorType(object)
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
            target.id = ids.unique(target.id, source: source, line: line, diagnostics: diagnostics)
            if target.enabled { targets.append(target) } else { switchedOff.append(target) }
        }
    }

    /// `ping` or `tcp` for a target of probe-ping's: its kind, or a `tcp://` URL.
    private static func otherProbeKind(_ object: JSONObject) -> String? {
        if case .string(let kind)? = object["kind"], kind == "ping" || kind == "tcp" { return kind }
        for key in ["url", "target"] {
            if case .string(let url)? = object[key], url.trimmingSpaces.lowercased().hasPrefix("tcp://") { return "tcp" }
        }
        return nil
    }

    /// A problem with one target, in words.
    typealias Problem = TargetProblem

    /// Builds a target from an object (a switched-off one, `enabled: false`, too: it is checked
    /// like any other and comes back with `enabled` false).
    static func build(_ object: JSONObject, defaults: TargetDefaults) -> Result<Target?, Problem> {
        do {
            return .success(try buildThrowing(object, defaults: defaults))
        } catch let problem as Problem {
            return .failure(problem)
        } catch {
            return .failure(Problem("\(error)"))
        }
    }

    private static func buildThrowing(_ object: JSONObject, defaults: TargetDefaults) throws -> Target? {
        let object = TargetFields.readingMonitorType(object)
        if case .string(let type)? = object["type"], type != "target" {
            throw Problem("a '\(type)' record is not a target")
        }
        let fields = TargetFields(object)

        // The URL: `url`, or `target` as OnlineTracker's monitors name it.
        guard var url = try fields.string("url") ?? fields.string("target") else {
            throw Problem("target has no 'url'")
        }
        url = url.trimmingSpaces
        if url.isEmpty { throw Problem("target has an empty 'url'") }
        var scheme = URLText(url).scheme
        if scheme == nil {
            guard TargetParser.looksLikeAuthority(url) else {
                throw Problem("'\(Redaction.url(url))' is not a URL (expected http://, https:// or ssl://, or host[:port][/path])")
            }
            url = "https://" + url
            scheme = "https"
        }
        let kindText = try fields.string("kind")?.lowercased()
        var kind: TargetKind
        switch scheme {
        case "http"?: kind = .http
        case "https"?: kind = .https
        case "ssl"?, "tls"?:
            kind = .ssl
            url = "https://" + String(url.dropFirst(scheme!.count + 3))
        default:
            throw Problem("unsupported scheme '\(scheme ?? "")' in '\(Redaction.url(url))' (probe-http speaks http and https)")
        }
        if let kindText {
            guard let asked = TargetKind(rawValue: kindText) else {
                throw Problem("field 'kind' must be http, https or ssl (ping and tcp are probe-ping's), not '\(kindText)'")
            }
            if asked == .ssl {
                guard scheme != "http" else { throw Problem("kind 'ssl' needs an https:// or ssl:// URL") }
                kind = .ssl
            } else if asked == .https, kind == .http {
                throw Problem("kind 'https' needs an https:// URL")
            } else if asked == .http, kind == .https {
                kind = .https
            }
        }
        let parts = URLText(url)
        if parts.host.isEmpty { throw Problem("'\(Redaction.url(url))' has no host") }

        let id = try fields.id { TargetIDs.derive(from: parts) }
        let name =
            try fields.string("name")?.trimmingSpaces.nonEmpty ?? (fields.value("id") != nil ? id : TargetParser.defaultName(for: parts))
        var target = Target(id: id, name: name, url: url, kind: kind, parts: parts)

        if let method = try fields.string("method")?.trimmingSpaces.uppercased() {
            guard !method.isEmpty, method.allSatisfy({ $0.isLetter || $0 == "-" || $0 == "_" }) else {
                throw Problem("field 'method' must be an HTTP method such as GET or POST")
            }
            target.method = method
        }
        if let headers = fields.value("headers") {
            switch headers {
            case .object(let list):
                for header in list {
                    guard case .string(let value) = header.value else {
                        throw Problem("header '\(header.key)' must have a string value")
                    }
                    try checkHeader(header.key, value)
                    target.headers.append("\(header.key): \(value)")
                }
            case .array(let list):
                for item in list {
                    guard case .string(let line) = item, let colon = line.firstIndex(of: ":") else {
                        throw Problem("field 'headers' entries must be \"Name: value\" strings")
                    }
                    try checkHeader(String(line[..<colon]).trimmingSpaces, String(line[line.index(after: colon)...]))
                    target.headers.append(line)
                }
            default:
                throw Problem("field 'headers' must be an object of names and values")
            }
        }
        if let body = try fields.string("body") { target.body = Array(body.utf8) }
        if let expected = fields.value("expected_status") {
            switch expected {
            case .number:
                guard let code = expected.intValue, (100...599).contains(code) else {
                    throw Problem("field 'expected_status' must be a status code from 100 to 599")
                }
                target.expectedStatus = StatusSet([code...code])
            case .string(let text):
                guard let set = StatusSet.parse(text) else {
                    throw Problem("field 'expected_status' must look like 200, \"200-299\", \"2xx\" or \"200,204\", not '\(text)'")
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
                        throw Problem("field 'expected_status' has an entry that is not a status code or range: \(item.jsonText)")
                    }
                }
                guard !ranges.isEmpty else { throw Problem("field 'expected_status' is an empty list") }
                target.expectedStatus = StatusSet(ranges)
            default:
                throw Problem("field 'expected_status' must be a code, a list or a range, not \(expected.typeName)")
            }
        }
        if let content = try fields.string("expected_content") {
            guard !content.isEmpty else { throw Problem("field 'expected_content' is empty") }
            target.expectedContent = content
        }
        if var hash = try fields.string("expected_body_hash")?.trimmingSpaces.lowercased() {
            if hash.hasPrefix("sha256:") { hash.removeFirst(7) } else if hash.hasPrefix("md5:") { hash.removeFirst(4) }
            // 64 hex digits are a SHA-256; 32 are an MD5, as OnlineTracker's servers store it.
            guard hash.count == 64 || hash.count == 32, hash.allSatisfy({ $0.isHexDigit }) else {
                throw Problem("field 'expected_body_hash' must be a SHA-256 in 64 hex digits or an MD5 in 32")
            }
            target.expectedBodyHash = hash
        }
        target.timeoutMs = try fields.number("timeout_seconds", 0.001...86_400).map { Int(($0 * 1000).rounded()) } ?? defaults.timeoutMs
        target.okThresholdMs = try fields.number("http_ok_threshold_ms", 0...86_400_000) ?? defaults.okThresholdMs
        target.degradedThresholdMs = try fields.number("http_degraded_threshold_ms", 0...86_400_000) ?? defaults.degradedThresholdMs
        if let ok = target.okThresholdMs, let degraded = target.degradedThresholdMs, degraded < ok {
            throw Problem("http_degraded_threshold_ms (\(plainNumber(degraded))) is below http_ok_threshold_ms (\(plainNumber(ok)))")
        }
        (target.sslOkDays, target.sslWarningDays) = try fields.sslDays(
            okDefault: defaults.sslOkDays, warningDefault: defaults.sslWarningDays)
        if let interval = try fields.checkIntervalMs() { target.checkIntervalMs = interval }
        if let override = defaults.intervalOverrideMs { target.checkIntervalMs = override }
        target.maxRedirects = try fields.integer("max_redirects", 0...50) ?? defaults.maxRedirects
        target.ip = try fields.ipChoice() ?? defaults.ip
        target.speedTestBytes = try fields.integer("speed_test_bytes", 1...(1 << 30)) ?? defaults.speedTestBytes
        target.tls.caFile = try fields.string("ca_file")
        target.tls.clientCertificate = try fields.string("client_cert")
        target.tls.clientKey = try fields.string("client_key")
        target.tls.pinnedPublicKey = try fields.string("pinned_pubkey")
        if target.tls.clientKey != nil, target.tls.clientCertificate == nil {
            throw Problem("field 'client_key' needs 'client_cert'")
        }
        if let minimum = fields.value("tls_min") {
            let text = minimum.stringValue ?? (minimum.doubleValue.map { $0 == 1.3 ? "1.3" : $0 == 1.2 ? "1.2" : "" } ?? "")
            guard let version = TLSVersion(rawValue: text) else {
                throw Problem("field 'tls_min' must be \"1.2\" or \"1.3\", not \(minimum.jsonText)")
            }
            target.tls.minimumVersion = version
        }
        if let insecure = try fields.bool("insecure") { target.tls.verify = !insecure }
        if defaults.insecure { target.tls.verify = false }
        if target.kind == .http, target.tls.clientCertificate != nil || target.tls.pinnedPublicKey != nil {
            throw Problem("TLS fields (client_cert, pinned_pubkey) need an https:// URL")
        }

        target.dependsOn = try fields.dependsOn(selfID: target.id) ?? []
        target.extraFields = fields.extraFields(known: TargetParser.knownFields, own: SampleRecord.ownFields, agent: defaults.agent)
        target.enabled = !fields.isDisabled
        return target
    }

    /// Refuses the cycles in the targets' `depends_on` (each target on one is reported with its
    /// line, and probed without its parents, so that a cycle never holds a failure back).
    mutating func refuseCycles() {
        DependencyCycles.refuse(&targets, &switchedOff, diagnostics: diagnostics)
    }

    /// The name of a target without one: its URL without scheme, credentials, query or a trailing `/`.
    static func defaultName(for parts: URLText) -> String {
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
                let ok =
                    (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
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
            throw Problem("header name '\(name)' is not a valid HTTP header name")
        }
        guard !value.contains("\r"), !value.contains("\n") else {
            throw Problem("header '\(name)' has a line break in its value")
        }
    }
}

extension String {
    var nonEmpty: String? { isEmpty ? nil : self }
}
