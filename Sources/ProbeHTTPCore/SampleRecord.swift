import HTTPTransport
import ProbeKit
import VitalsKit

/// Writes `sample` records: field order and meaning as in vitals-records(7).
enum SampleRecord {
    /// Field names a sample writes itself; a target's own field with one of these names is not carried.
    static let ownFields: Set<String> = [
        "type", "monitor", "name", "kind", "target", "at", "method", "status", "reason", "message", "code",
        "latency_ms", "dns_ms", "connect_ms", "tls_ms", "ttfb_ms", "total_ms", "bytes", "remote_ip", "interface", "link", "http_version",
        "online",
        "tls_expiry_days", "ip", "speed_mbps", "speed_confidence", "speed_bytes", "simulated", "truncated",
        "head_failed", "head_reason", "check_interval", "enabled", "config", "agent", "depends_on", "attempts", "tries",
    ]

    /// Encodes one sample.
    /// - Parameters:
    ///   - monitor: the monitor id (the target's, with `/ipv4` or `/ipv6` for `ip: both`).
    ///   - family: the family asked for, written as `ip` when not `any`.
    ///   - atMs: when the probe started, wall clock.
    ///   - method: the method that answered (`CONNECT` for a handshake-only `ssl` check).
    ///   - route: the interface the request left by, and its link type.
    ///   - online: the connectivity check's answer (`--connectivity` only).
    ///   - headReason: why the HEAD failed, when a GET answered after it.
    static func encode(
        target: Target, monitor: String, family: IPFamily, atMs: Int64, method: String,
        verdict: ProbeVerdict, result: HTTPResult?, route: NetworkRoute?, online: Bool? = nil,
        headReason: String? = nil, tries: [ProbeTry] = [], simulatedMs: Double
    ) -> [UInt8] {
        var record = SampleHead.begin(
            monitor: monitor, name: target.name, kind: target.kind.rawValue, target: target.displayURL,
            atMs: atMs, method: method, verdict: verdict, capacity: 640)
        let code = result.map(\.httpCode) ?? 0
        record.int("code", code > 0 ? code : nil)
        record.fixed("latency_ms", verdict.latencyMs)
        let timings = result?.timings ?? HTTPTimings()
        let reachedDNS = timings.nameLookup > 0
        let reachedConnect = timings.connect > 0
        let reachedTLS = timings.appConnect > 0
        let reachedFirstByte = timings.startTransfer > 0
        record.fixed("dns_ms", reachedDNS ? timings.nameLookup : nil)
        record.fixed("connect_ms", reachedConnect ? max(0, timings.connect - timings.nameLookup) : nil)
        record.fixed("tls_ms", reachedTLS ? max(0, timings.appConnect - timings.connect) : nil)
        record.fixed("ttfb_ms", reachedFirstByte ? max(0, timings.startTransfer - timings.preTransfer) : nil)
        record.fixed("total_ms", result != nil ? timings.total : nil)
        record.int("bytes", result?.bodyBytes ?? 0)
        record.string("remote_ip", result?.remoteIP)
        record.string("interface", route?.interface)
        record.string("link", route?.link.rawValue)
        record.string("http_version", result?.httpVersion)
        if target.kind != .http { record.int("tls_expiry_days", verdict.tlsExpiryDays) }
        if family != .any { record.string("ip", family.rawValue) }
        if let online { record.bool("online", online) }
        if target.speedTestBytes != nil {
            record.fixed("speed_mbps", verdict.speedMbps, decimals: 2)
            record.string("speed_confidence", verdict.speedConfidence)
            record.int("speed_bytes", verdict.speedBytes ?? result?.bodyBytes ?? 0)
        }
        if let result, result.stoppedAtLimit, target.speedTestBytes == nil { record.bool("truncated", true) }
        if simulatedMs > 0 { record.bool("simulated", true) }
        if let headReason {
            record.bool("head_failed", true)
            record.string("head_reason", headReason)
        }
        ProbeTry.write(tries, to: &record)
        MonitorSettings.write(target.monitorSettings, to: &record)
        for field in target.extraFields { record.field(field.key, field.value) }
        return record.finish()
    }
}
