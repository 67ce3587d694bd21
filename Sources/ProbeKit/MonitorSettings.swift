import VitalsKit

/// What a sample says about the monitor that made it, as OnlineTracker's monitor list shows it:
/// `check_interval` (seconds), `enabled`, and `config`, the monitor's thresholds under the keys
/// of the seed's `MonitorConfig`, only those that apply to the target's kind.
/// Both probes write these three fields (and `depends_on`, when the target names parents) after
/// their own, before the target's carried fields.
public struct MonitorSettings: Sendable {
    /// The target's interval between probes.
    public var checkIntervalMs: Int64
    /// Whether the target is switched on (a switched-off target is not probed: only its `monitor`
    /// record says false).
    public var enabled = true
    /// The config object, keys in the seed's order.
    public private(set) var config = JSONObject()
    /// The monitors the target depends on (`depends_on`; written only when not empty).
    public var dependsOn: [String] = []

    /// Settings for a target probed every `checkIntervalMs`.
    public init(checkIntervalMs: Int64) {
        self.checkIntervalMs = checkIntervalMs
    }

    /// Sets an integer field (written only when given).
    public mutating func set(_ key: String, _ value: Int?) {
        if let value { config[key] = .integer(value) }
    }

    /// Sets a number field: a whole number as an integer (written only when given).
    public mutating func set(_ key: String, _ value: Double?) {
        if let value { config[key] = .number(plainNumber(value)) }
    }

    /// Sets a string field (written only when given).
    public mutating func set(_ key: String, _ value: String?) {
        if let value { config[key] = .string(value) }
    }

    /// Writes `check_interval`, `enabled` and `config` into a sample.
    public static func write(_ settings: MonitorSettings, to record: inout JSONObjectBuilder) {
        let ms = settings.checkIntervalMs
        if ms % 1000 == 0 {
            record.int("check_interval", Int(ms / 1000))
        } else {
            record.fixed("check_interval", Double(ms) / 1000)
        }
        record.bool("enabled", settings.enabled)
        record.value("config", .object(settings.config))
        if !settings.dependsOn.isEmpty { record.value("depends_on", .array(settings.dependsOn.map { .string($0) })) }
    }
}
