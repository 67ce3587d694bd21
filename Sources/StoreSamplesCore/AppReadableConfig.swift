import VitalsKit

/// A monitor's `config` as OnlineTracker's app can read it. The app's `MonitorConfig` reads
/// every number as `Int?`, so one fraction (`-t 1500ms` writes `"timeout_seconds": 1.5`) fails
/// the whole monitor list. Each of those fields holding a fraction is written as the nearest
/// whole number (at least 1 where the value is above 0), and the exact value kept in a field of
/// its own the app ignores: `timeout_ms` for `timeout_seconds` (milliseconds, the suite's unit
/// of durations), `KEY_exact` for the others. Every other field passes as the sample gave it.
enum AppReadableConfig {
    /// The seed's `MonitorConfig` fields the app reads as `Int?`.
    static let integerKeys: Set<String> = [
        "expected_status", "timeout_seconds", "ping_count", "ping_ok_threshold_ms", "ping_degraded_threshold_ms",
        "http_ok_threshold_ms", "http_degraded_threshold_ms", "ssl_ok_threshold_days", "ssl_warning_threshold_days",
    ]

    /// The config stored with a monitor (JSON text, or nil), made readable: null when there is none.
    static func value(_ text: String?) -> JSONValue {
        guard let text, let parsed = try? JSONParser.parse(Array(text.utf8)) else { return .null }
        guard let object = parsed.objectValue else { return parsed }
        var readable = JSONObject()
        var exact: [JSONField] = []
        for field in object.fields {
            guard integerKeys.contains(field.key), case .number(let literal) = field.value, let number = Double(literal),
                number.isFinite, number.rounded() != number
            else {
                readable[field.key] = field.value
                continue
            }
            let whole = number > 0 ? max(1, number.rounded()) : number.rounded()
            readable[field.key] = .integer(Int(whole))
            exact.append(
                field.key == "timeout_seconds"
                    ? JSONField("timeout_ms", milliseconds(number)) : JSONField(field.key + "_exact", field.value))
        }
        for field in exact where readable[field.key] == nil { readable[field.key] = field.value }
        return .object(readable)
    }

    /// Seconds as milliseconds, to the microsecond: a whole number when it is one (1.5 s is 1500).
    static func milliseconds(_ seconds: Double) -> JSONValue {
        let ms = (seconds * 1_000_000).rounded() / 1000
        return ms.rounded() == ms && abs(ms) < 1e15 ? .integer(Int(ms)) : .number(String(ms))
    }
}
