import HTTPTransport
import ProbeKit
import VitalsKit

/// What a target checks, OnlineTracker's monitor types for HTTP.
enum TargetKind: String, Sendable, CaseIterable {
    /// An HTTP check over plain TCP.
    case http
    /// An HTTP check over TLS, with the certificate's expiry.
    case https
    /// A TLS handshake only: the certificate's expiry decides the status.
    case ssl
}

/// A set of expected HTTP status codes: codes and inclusive ranges.
struct StatusSet: Sendable, Equatable, CustomStringConvertible {
    /// The ranges, in the order given.
    var ranges: [ClosedRange<Int>]

    /// Creates a set.
    init(_ ranges: [ClosedRange<Int>]) { self.ranges = ranges }

    /// isitup's rule: 200 to 399.
    static let `default` = StatusSet([200...399])

    /// Whether `code` is expected.
    func contains(_ code: Int) -> Bool { ranges.contains { $0.contains(code) } }

    /// `200-399`, `200,204`.
    var description: String {
        ranges.map { $0.lowerBound == $0.upperBound ? "\($0.lowerBound)" : "\($0.lowerBound)-\($0.upperBound)" }
            .joined(separator: ",")
    }

    /// Parses `200`, `200-299`, `2xx`, `200,204,300-399`; nil if malformed.
    static func parse(_ text: String) -> StatusSet? {
        var ranges: [ClosedRange<Int>] = []
        for part in text.split(separator: ",") {
            let item = String(part).trimmingSpaces.lowercased()
            if item.count == 3, item.hasSuffix("xx"), let digit = Int(item.prefix(1)), (1...5).contains(digit) {
                ranges.append(digit * 100...digit * 100 + 99)
            } else if let dash = item.firstIndex(of: "-") {
                guard let low = Int(String(item[..<dash]).trimmingSpaces),
                    let high = Int(String(item[item.index(after: dash)...]).trimmingSpaces),
                    (100...599).contains(low), (100...599).contains(high), low <= high
                else { return nil }
                ranges.append(low...high)
            } else {
                guard let code = Int(item), (100...599).contains(code) else { return nil }
                ranges.append(code...code)
            }
        }
        return ranges.isEmpty ? nil : StatusSet(ranges)
    }
}

/// One target, validated, with every default applied.
struct Target: Sendable {
    /// The monitor id every later tool groups by.
    var id: String
    /// The human name.
    var name: String
    /// The URL as given, used for probing (may hold credentials).
    var url: String
    /// The URL with secrets redacted, as written in samples.
    var displayURL: String
    /// The check kind.
    var kind: TargetKind
    /// The method asked for; nil means HEAD with a GET fallback.
    var method: String?
    /// Request headers, `Name: value`.
    var headers: [String] = []
    /// A request body.
    var body: [UInt8]?
    /// Expected status codes.
    var expectedStatus: StatusSet = .default
    /// A substring the body must contain.
    var expectedContent: String?
    /// The SHA-256 (64 lowercase hex digits) or MD5 (32) the body must have.
    var expectedBodyHash: String?
    /// The probe's time budget.
    var timeoutMs: Int = 5000
    /// Latency above this is `degraded`.
    var okThresholdMs: Double?
    /// Latency above this is `down`.
    var degradedThresholdMs: Double?
    /// Days of certificate validity at or above which the certificate is fine.
    var sslOkDays: Int = 30
    /// Days of validity below which the target is `down`.
    var sslWarningDays: Int = 14
    /// Seconds between probes in `--watch`.
    var checkIntervalMs: Int64 = 60_000
    /// Redirects followed.
    var maxRedirects: Int = 5
    /// Address families.
    var ip: IPChoice = .any
    /// Bytes to download for a speed test, if one is asked for.
    var speedTestBytes: Int?
    /// TLS settings (mutual TLS, pinning, minimum version, trust).
    var tls = TLSOptions()
    /// Whether the target is switched on; a switched-off one (`enabled: false`) is not probed.
    var enabled = true
    /// Fields the target had that probe-http does not own; carried into each sample in order.
    var extraFields: [JSONField] = []
    /// The monitors it depends on (`depends_on`).
    var dependsOn: [String] = []
    /// Where the target came from, for diagnostics.
    var source: String = "<stdin>"
    /// The line it was on.
    var line: Int = 0

    /// The URL's host, lowercased.
    let host: String
    /// The URL's port, or the scheme's default.
    let port: Int

    /// Creates a target for `url` with defaults.
    init(id: String, name: String, url: String, kind: TargetKind, parts: URLText? = nil) {
        let parts = parts ?? URLText(url)
        self.id = id
        self.name = name
        self.url = url
        self.displayURL = Redaction.url(url)
        self.kind = kind
        self.host = parts.host
        self.port = parts.port ?? (parts.scheme == "http" ? 80 : 443)
    }

    /// `check_interval`, `enabled` and `config` as the target's samples write them (OnlineTracker's monitor fields).
    var monitorSettings: MonitorSettings {
        var settings = MonitorSettings(checkIntervalMs: checkIntervalMs)
        settings.enabled = enabled
        settings.dependsOn = dependsOn
        if expectedStatus.ranges.count == 1, expectedStatus.ranges[0].count == 1 {
            settings.set("expected_status", expectedStatus.ranges[0].lowerBound)
        }
        settings.set("expected_body_hash", expectedBodyHash)
        settings.set("expected_content", expectedContent)
        settings.set("timeout_seconds", Double(timeoutMs) / 1000)
        if kind != .ssl {
            settings.set("http_ok_threshold_ms", okThresholdMs)
            settings.set("http_degraded_threshold_ms", degradedThresholdMs)
        }
        if kind != .http {
            settings.set("ssl_ok_threshold_days", sslOkDays)
            settings.set("ssl_warning_threshold_days", sslWarningDays)
        }
        return settings
    }

    /// Whether a GET is needed to read the body (content or hash checks, speed test).
    var needsBody: Bool { expectedContent != nil || expectedBodyHash != nil || speedTestBytes != nil }
}

extension Target: DependentTarget {}

extension Target: StatedTarget {
    var kindName: String { kind.rawValue }
    var statedTarget: String { displayURL }
}
