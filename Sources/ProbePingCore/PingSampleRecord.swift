import HTTPTransport
import ProbeKit
import VitalsKit

/// Writes probe-ping's `sample` records: field order and meaning as in vitals-records(7).
enum PingSampleRecord {
    /// Field names a sample writes itself; a target's own field with one of these names is not carried.
    static let ownFields: Set<String> = [
        "type", "monitor", "name", "kind", "target", "at", "status", "reason", "message", "latency_ms", "sent", "received",
        "loss_percent", "rtt_min_ms", "rtt_avg_ms", "rtt_max_ms", "rtt_mdev_ms", "dns_ms", "connect_ms", "tls_ms",
        "remote_ip", "interface", "link", "tls_expiry_days", "ip", "check_interval", "enabled", "config", "agent",
        "depends_on",
    ]

    /// A ping sample.
    static func encodePing(
        target: PingTarget, monitor: String, family: IPAddress.Family?, atMs: Int64, verdict: ProbeVerdict,
        statistics: PingStatistics, remote: IPAddress?, route: NetworkRoute?
    ) -> [UInt8] {
        var record = start(target: target, monitor: monitor, atMs: atMs, verdict: verdict)
        record.int("sent", statistics.sent)
        record.int("received", statistics.received)
        record.fixed("loss_percent", statistics.lossPercent)
        record.fixed("rtt_min_ms", statistics.minMs)
        record.fixed("rtt_avg_ms", statistics.averageMs)
        record.fixed("rtt_max_ms", statistics.maxMs)
        record.fixed("rtt_mdev_ms", statistics.mdevMs)
        record.string("remote_ip", remote?.description)
        return finish(&record, target: target, family: family, route: route)
    }

    /// A tcp sample.
    static func encodeTCP(
        target: PingTarget, monitor: String, family: IPAddress.Family?, atMs: Int64, verdict: ProbeVerdict,
        result: HTTPResult, route: NetworkRoute?
    ) -> [UInt8] {
        var record = start(target: target, monitor: monitor, atMs: atMs, verdict: verdict)
        let timings = result.timings
        record.fixed("dns_ms", timings.nameLookup > 0 ? timings.nameLookup : nil)
        record.fixed("connect_ms", timings.connect > 0 ? max(0, timings.connect - timings.nameLookup) : nil)
        if target.tls { record.fixed("tls_ms", timings.appConnect > 0 ? max(0, timings.appConnect - timings.connect) : nil) }
        record.string("remote_ip", result.remoteIP)
        if target.tls { record.int("tls_expiry_days", verdict.tlsExpiryDays) }
        return finish(&record, target: target, family: family, route: route)
    }

    private static func start(target: PingTarget, monitor: String, atMs: Int64, verdict: ProbeVerdict) -> JSONObjectBuilder {
        var record = SampleHead.begin(
            monitor: monitor, name: target.name, kind: target.kind.rawValue, target: target.display,
            atMs: atMs, method: nil, verdict: verdict, capacity: 512)
        record.fixed("latency_ms", verdict.latencyMs)
        return record
    }

    private static func finish(
        _ record: inout JSONObjectBuilder, target: PingTarget, family: IPAddress.Family?,
        route: NetworkRoute?
    ) -> [UInt8] {
        record.string("interface", route?.interface)
        record.string("link", route?.link.rawValue)
        if let family { record.string("ip", family == .v4 ? "4" : "6") }
        MonitorSettings.write(target.monitorSettings, to: &record)
        for field in target.extraFields { record.field(field.key, field.value) }
        return record.finish()
    }
}
