import ProbeKit
import VitalsKit

/// Reads probe-ping targets: one per line as a bare host (`192.0.2.1`, `::1`, `db.example`),
/// `host:port` or `tcp://host:port`, or a JSON object; or one JSON array of them. The
/// conventions are probe-http's (comments, blank lines, `config`, `enabled`, duplicate ids,
/// carried fields); targets for probe-http (http, https, ssl) are skipped with a warning.
struct PingTargetParser: TargetSink {
    /// A bare line is a host.
    static let bareField = "target"
    /// A bare line is a host.
    static let bareNoun = "host"
    /// The targets read so far, in input order.
    private(set) var targets: [PingTarget] = []
    /// The targets switched off (`enabled: false`), in input order: not probed; each run
    /// writes a `monitor` record for them instead.
    private(set) var switchedOff: [PingTarget] = []
    /// Where problems are reported.
    let diagnostics: Diagnostics
    private let defaults: PingDefaults
    private var ids = TargetIDs()

    /// Field names probe-ping reads from a target.
    static let knownFields: Set<String> = [
        "id", "name", "target", "url", "kind", "ping_count", "ping_ok_threshold_ms", "ping_degraded_threshold_ms",
        "max_loss_percent", "timeout_seconds", "check_interval", "ip", "tls", "ssl_ok_threshold_days",
        "ssl_warning_threshold_days", "type", "enabled", "config", "depends_on",
    ]

    /// Creates a parser.
    init(defaults: PingDefaults, diagnostics: Diagnostics) {
        self.defaults = defaults
        self.diagnostics = diagnostics
    }

    /// Reads every target from `reader`.
    mutating func read(_ reader: LineReader) {
        TargetListReader.read(reader, into: &self)
    }

    /// Refuses the cycles in the targets' `depends_on` (see `DependencyCycles.refuse`).
    mutating func refuseCycles() {
        DependencyCycles.refuse(&targets, &switchedOff, diagnostics: diagnostics)
    }

    /// Validates one target object and adds it (with a unique id), or reports why not.
    mutating func add(_ object: JSONObject, source: String, line: Int) {
        do {
            guard
                var target = try PingTargetParser.build(
                    object, defaults: defaults,
                    warn: { message in
                        diagnostics.warning(message, source: source, line: line)
                    })
            else { return }
            target.source = source
            target.line = line
            target.id = ids.unique(target.id, source: source, line: line, diagnostics: diagnostics)
            if target.enabled { targets.append(target) } else { switchedOff.append(target) }
        } catch let problem as TargetProblem {
            diagnostics.error(problem.message, source: source, line: line)
        } catch {
            diagnostics.error("\(error)", source: source, line: line)
        }
    }

    /// Builds a target (a switched-off one too, with `enabled` false); nil for one that belongs
    /// to probe-http (after `warn`).
    static func build(_ object: JSONObject, defaults: PingDefaults, warn: (String) -> Void = { _ in }) throws -> PingTarget? {
        let object = TargetFields.readingMonitorType(object)
        if case .string(let type)? = object["type"], type != "target" {
            throw TargetProblem("a '\(type)' record is not a target")
        }
        let fields = TargetFields(object)
        guard let written = try fields.string("target") ?? fields.string("url") else {
            throw TargetProblem("target has no 'target' (a host, host:port or tcp://host:port)")
        }
        let text = written.trimmingSpaces
        if text.isEmpty { throw TargetProblem("target has an empty 'target'") }
        let kindText = try fields.string("kind")?.lowercased()
        if let kindText, ["http", "https", "ssl"].contains(kindText) {
            warn("kind '\(kindText)' is probed by probe-http; skipped")
            return nil
        }
        if let kindText, PingKind(rawValue: kindText) == nil {
            throw TargetProblem("field 'kind' must be ping or tcp (http, https and ssl are probe-http's), not '\(kindText)'")
        }
        guard let address = try PingTargetParser.split(text, warn: warn) else { return nil }
        var kind: PingKind = address.port == nil ? .ping : .tcp
        if let kindText, let asked = PingKind(rawValue: kindText) {
            if asked == .tcp, address.port == nil {
                throw TargetProblem("kind 'tcp' needs a port: tcp://\(PingTarget.hostPort(address.host, 443)) or \(address.host):PORT")
            }
            if asked == .ping, address.port != nil {
                throw TargetProblem("a ping target has no port; '\(text)' reads as tcp (drop the port, or set kind tcp)")
            }
            kind = asked
        }

        let id = try fields.id { PingTarget.derivedID(kind: kind, host: address.host, port: address.port) }
        let defaultName = address.port.map { PingTarget.hostPort(address.host, $0) } ?? address.host
        let name = try fields.string("name")?.trimmingSpaces.nonEmptyText ?? (fields.value("id") != nil ? id : defaultName)
        var target = PingTarget(id: id, name: name, kind: kind, host: address.host, port: address.port, defaults: defaults)

        if let count = try fields.integer("ping_count", Int.min...Int.max) {
            let clamped = min(max(count, PingDefaults.countRange.lowerBound), PingDefaults.countRange.upperBound)
            if clamped != count { warn("ping_count \(count) is outside 1 to 10; using \(clamped) (OnlineTracker's bounds)") }
            target.count = clamped
        }
        target.okThresholdMs = try fields.number("ping_ok_threshold_ms", 0...86_400_000) ?? target.okThresholdMs
        target.degradedThresholdMs = try fields.number("ping_degraded_threshold_ms", 0...86_400_000) ?? target.degradedThresholdMs
        if target.degradedThresholdMs < target.okThresholdMs {
            throw TargetProblem(
                "ping_degraded_threshold_ms (\(plainNumber(target.degradedThresholdMs))) is below ping_ok_threshold_ms (\(plainNumber(target.okThresholdMs)))"
            )
        }
        target.maxLossPercent = try fields.number("max_loss_percent", 0...100) ?? target.maxLossPercent
        target.timeoutMs = try fields.number("timeout_seconds", 0.001...86_400).map { Int(($0 * 1000).rounded()) } ?? target.timeoutMs
        let interval = try fields.checkIntervalMs()
        if defaults.intervalOverrideMs == nil, let interval { target.checkIntervalMs = interval }
        // --ip is for names; an address literal keeps its own family unless the target asks otherwise.
        target.ip = try fields.ipChoice() ?? (target.literal == nil ? target.ip : .any)
        if let literal = target.literal, target.ip != .any, target.ip != .both,
            (literal.family == .v4) != (target.ip == .v4)
        {
            throw TargetProblem(
                "'\(address.host)' is an IPv\(literal.family == .v4 ? 4 : 6) address; it cannot be probed over IPv\(target.ip.rawValue)")
        }
        if target.literal != nil, target.ip == .both {
            throw TargetProblem("'\(address.host)' is an address, not a name: ip both needs a name with an address of each family")
        }
        target.tls = try fields.bool("tls") ?? false
        if target.tls, kind != .tcp { throw TargetProblem("field 'tls' needs a tcp target (tcp://host:port)") }
        (target.sslOkDays, target.sslWarningDays) = try fields.sslDays(
            okDefault: defaults.sslOkDays, warningDefault: defaults.sslWarningDays)
        target.dependsOn = try fields.dependsOn(selfID: target.id) ?? []
        target.extraFields = fields.extraFields(known: knownFields, own: PingSampleRecord.ownFields, agent: defaults.agent)
        target.enabled = !fields.isDisabled
        return target
    }

    /// Splits `host`, `host:port`, `[v6]`, `[v6]:port`, a bare IPv6 literal, or `tcp://host:port`;
    /// nil (after `warn`) for a URL of probe-http's.
    static func split(_ text: String, warn: (String) -> Void) throws -> (host: String, port: Int?)? {
        var rest = Substring(text)
        if let schemeEnd = text.range(of: "://") {
            let scheme = text[..<schemeEnd.lowerBound].lowercased()
            switch scheme {
            case "http", "https", "ssl", "tls":
                warn("'\(Redaction.url(text))' is probed by probe-http; skipped")
                return nil
            case "tcp":
                rest = text[schemeEnd.upperBound...]
                if rest.hasSuffix("/") { rest = rest.dropLast() }
                guard !rest.isEmpty else { throw TargetProblem("'\(text)' has no host") }
            default:
                throw TargetProblem(
                    "unsupported scheme '\(scheme)' in '\(Redaction.url(text))' (probe-ping takes a host, host:port or tcp://host:port)")
            }
        }
        var host: Substring
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw TargetProblem("'\(text)' has an unclosed '['") }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw TargetProblem("'\(text)' is not host, host:port or [address]:port") }
                portText = after.dropFirst()
            }
        } else if rest.filter({ $0 == ":" }).count > 1 {
            host = rest  // a bare IPv6 literal
        } else if let colon = rest.firstIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        } else {
            host = rest
        }
        let name = String(host).lowercased()
        var port: Int?
        if let portText {
            guard let number = Int(portText), (1...65_535).contains(number) else {
                throw TargetProblem("'\(text)' has a bad port '\(portText)' (1 to 65535)")
            }
            port = number
        }
        if text.lowercased().hasPrefix("tcp://"), port == nil {
            throw TargetProblem("'\(text)' needs a port (tcp://host:port)")
        }
        guard validHost(name) else {
            throw TargetProblem("'\(text)' is not a host name or an address")
        }
        return (name, port)
    }

    /// A host name (letters, digits, `-`, `_`, dots) or an address literal.
    static func validHost(_ host: String) -> Bool {
        if IPAddress(host) != nil { return true }
        guard !host.isEmpty, host.utf8.count <= 253, !host.hasPrefix("-"), !host.hasPrefix("."), !host.contains("..") else { return false }
        return host.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x7A) || byte == UInt8(ascii: "-")
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
        }
    }
}

extension String {
    var nonEmptyText: String? { isEmpty ? nil : self }
}
