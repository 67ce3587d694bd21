import VitalsKit

/// The `monitor` record a probe writes for a target that is switched off (`enabled: false`):
/// the target is not probed, so it makes no sample, but the views still learn that the
/// monitor exists and is disabled (OnlineTracker's `enabled`). Fields, in order: `type`,
/// `monitor`, `name`, `kind`, `target`, `at`, `check_interval`, `enabled`, `config`, then the
/// target's carried fields; see vitals-records(7) MONITOR.
public enum MonitorRecord {
    /// One record, for the monitor id `monitor` (with `/ipv4` or `/ipv6` for `ip: both`),
    /// stated at `atMs` (wall clock).
    public static func encode(
        monitor: String, name: String, kind: String, target: String, atMs: Int64,
        settings: MonitorSettings, carried: [JSONField]
    ) -> [UInt8] {
        var record = SampleHead.identity(
            type: "monitor", monitor: monitor, name: name, kind: kind, target: target,
            atMs: atMs, capacity: 256)
        MonitorSettings.write(settings, to: &record)
        for field in carried { record.field(field.key, field.value) }
        return record.finish()
    }
}

/// A target as a `monitor` record states it (both probes' targets).
public protocol StatedTarget {
    /// The target's id.
    var id: String { get }
    /// Its human name.
    var name: String { get }
    /// Its kind, as samples write it.
    var kindName: String { get }
    /// The target as samples write it (credentials redacted).
    var statedTarget: String { get }
    /// The address families it is probed over (`ip: both` makes two monitors).
    var ip: IPChoice { get }
    /// Its `check_interval`, `enabled` and `config`.
    var monitorSettings: MonitorSettings { get }
    /// The fields it carries into its records.
    var extraFields: [JSONField] { get }
}

extension MonitorRecord {
    /// The records for `targets` (switched off), one per monitor each would make, stated at `atMs`.
    public static func records(_ targets: [some StatedTarget], atMs: Int64) -> [[UInt8]] {
        targets.flatMap { target in
            target.ip.probes(monitor: target.id).map { probe in
                encode(
                    monitor: probe.monitor, name: target.name, kind: target.kindName, target: target.statedTarget,
                    atMs: atMs, settings: target.monitorSettings, carried: target.extraFields)
            }
        }
    }
}
