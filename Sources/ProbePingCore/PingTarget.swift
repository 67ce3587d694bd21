import ProbeKit
import VitalsCrypto
import VitalsKit

/// What a probe-ping target checks: OnlineTracker's ping monitor, or a TCP connection.
enum PingKind: String, Sendable, CaseIterable {
    /// ICMP echo requests (OnlineTracker's `ping` monitor type).
    case ping
    /// A TCP connection to host:port, with an optional TLS handshake.
    case tcp
}

/// Defaults for target fields, set by command-line options; the numbers are OnlineTracker's.
struct PingDefaults: Sendable {
    /// `ping_count` (5; OnlineTracker clamps it to 1...10).
    var count = 5
    /// `ping_ok_threshold_ms`: average round trip at or below this is up (80).
    var okThresholdMs: Double = 80
    /// `ping_degraded_threshold_ms`: at or below this degraded, above it down (200).
    var degradedThresholdMs: Double = 200
    /// `max_loss_percent`: more loss than this is down (20).
    var maxLossPercent: Double = 20
    /// `timeout_seconds`: how long to wait for each reply, or for a TCP connection (2 s).
    var timeoutMs = 2000
    /// Time between the echo requests of one sample (1 s, as ping(8)).
    var periodMs = 1000
    /// `ip` when a target has none.
    var ip: IPChoice = .any
    /// `ssl_ok_threshold_days` for TLS targets.
    var sslOkDays = 30
    /// `ssl_warning_threshold_days` for TLS targets.
    var sslWarningDays = 14
    /// `--interval`: overrides every target's `check_interval`.
    var intervalOverrideMs: Int64?
    /// `--agent`: written as each sample's `agent` unless the target names its own.
    var agent: String?

    /// The seeds' defaults.
    init() {}

    /// OnlineTracker's bounds on `ping_count`.
    static let countRange = 1...10
}

/// One probe-ping target, validated, with every default applied.
struct PingTarget: Sendable {
    /// The monitor id every later tool groups by.
    var id: String
    /// The human name.
    var name: String
    /// What is checked.
    var kind: PingKind
    /// The host name or address literal, lowercased, without brackets.
    var host: String
    /// The port of a `tcp` target.
    var port: Int?
    /// The address when `host` is a literal (nothing to resolve).
    var literal: IPAddress?
    /// Make a TLS handshake after connecting (`tcp` only).
    var tls = false
    /// Echo requests per sample.
    var count: Int
    /// Average round trip (or TCP connect time) at or below which the sample is up.
    var okThresholdMs: Double
    /// At or below which it is degraded; above, down.
    var degradedThresholdMs: Double
    /// Loss above which the sample is down.
    var maxLossPercent: Double
    /// How long to wait for each reply (ping) or for the connection and handshake (tcp).
    var timeoutMs: Int
    /// Time between echo requests.
    var periodMs: Int
    /// Seconds between samples in `--watch`.
    var checkIntervalMs: Int64
    /// Address families.
    var ip: IPChoice
    /// Certificate days left at or above which TLS is fine.
    var sslOkDays: Int
    /// Certificate days left below which the target is down.
    var sslWarningDays: Int
    /// Whether the target is switched on; a switched-off one (`enabled: false`) is not probed.
    var enabled = true
    /// Fields the target had that probe-ping does not own; carried into each sample in order.
    var extraFields: [JSONField] = []
    /// The monitors it depends on (`depends_on`).
    var dependsOn: [String] = []
    /// Where the target came from, for diagnostics.
    var source = "<stdin>"
    /// The line it was on.
    var line = 0

    /// Creates a target with `defaults` (OnlineTracker's unless given).
    init(id: String, name: String, kind: PingKind, host: String, port: Int? = nil, defaults: PingDefaults = PingDefaults()) {
        self.id = id
        self.name = name
        self.kind = kind
        self.host = host
        self.port = port
        self.literal = IPAddress(host)
        count = defaults.count
        okThresholdMs = defaults.okThresholdMs
        degradedThresholdMs = defaults.degradedThresholdMs
        maxLossPercent = defaults.maxLossPercent
        timeoutMs = defaults.timeoutMs
        periodMs = defaults.periodMs
        checkIntervalMs = defaults.intervalOverrideMs ?? 60_000
        ip = defaults.ip
        sslOkDays = defaults.sslOkDays
        sslWarningDays = defaults.sslWarningDays
    }

    /// The target as written in samples: the host (`192.0.2.1`, `::1`, `db.example`) or `tcp://host:port`.
    var display: String {
        guard kind == .tcp, let port else { return host }
        return "tcp://" + PingTarget.hostPort(host, port)
    }

    /// `host:port`, with brackets around an IPv6 literal.
    static func hostPort(_ host: String, _ port: Int) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// The derived id: `ping-HOST` or `tcp-HOST-PORT` (the kind keeps it apart from probe-http's
    /// id for the same host); over 80 characters, cut and ended with 8 hex digits of its SHA-256.
    static func derivedID(kind: PingKind, host: String, port: Int?) -> String {
        var id = kind.rawValue + "-" + host
        if kind == .tcp, let port { id += "-\(port)" }
        if id.utf8.count > 80 {
            return String(decoding: Array(id.utf8)[0..<71], as: UTF8.self) + "-" + String(SHA256.hexDigest(Array(id.utf8)).prefix(8))
        }
        return id
    }
}

extension PingTarget {
    /// `check_interval`, `enabled` and `config` as the target's samples write them (OnlineTracker's monitor fields).
    var monitorSettings: MonitorSettings {
        var settings = MonitorSettings(checkIntervalMs: checkIntervalMs)
        settings.enabled = enabled
        settings.dependsOn = dependsOn
        settings.set("timeout_seconds", Double(timeoutMs) / 1000)
        if kind == .ping { settings.set("ping_count", count) }
        settings.set("ping_ok_threshold_ms", okThresholdMs)
        settings.set("ping_degraded_threshold_ms", degradedThresholdMs)
        if tls {
            settings.set("ssl_ok_threshold_days", sslOkDays)
            settings.set("ssl_warning_threshold_days", sslWarningDays)
        }
        return settings
    }
}

extension PingTarget: DependentTarget {}

extension PingTarget: StatedTarget {
    var kindName: String { kind.rawValue }
    var statedTarget: String { display }
}
