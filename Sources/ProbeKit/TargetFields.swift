import VitalsKit

/// A problem with one target, in words.
public struct TargetProblem: Error {
    /// What is wrong and how to fix it.
    public let message: String

    /// Creates a problem.
    public init(_ message: String) { self.message = message }
}

/// Typed access to a target object's fields, each looked up in the object and then in its
/// `config` object (OnlineTracker's monitors keep thresholds there); `null` counts as absent.
/// Every getter throws a `TargetProblem` naming the field and what it should be.
public struct TargetFields {
    /// The target object.
    public let object: JSONObject
    /// Its `config` object (empty when none).
    public let config: JSONObject

    /// Wraps an object.
    public init(_ object: JSONObject) {
        self.object = object
        self.config = object["config"]?.objectValue ?? JSONObject()
    }

    /// The value of `key`, or nil when absent or null.
    public func value(_ key: String) -> JSONValue? {
        if let value = object[key], !value.isNull { return value }
        if let value = config[key], !value.isNull { return value }
        return nil
    }

    /// A string field.
    public func string(_ key: String) throws(TargetProblem) -> String? {
        guard let value = value(key) else { return nil }
        guard case .string(let text) = value else {
            throw TargetProblem("field '\(key)' must be a string, not \(value.typeName)")
        }
        return text
    }

    /// A number field within `range` (a numeric string is accepted).
    public func number(_ key: String, _ range: ClosedRange<Double>) throws(TargetProblem) -> Double? {
        guard let value = value(key) else { return nil }
        guard let number = value.doubleValue ?? value.stringValue.flatMap(Double.init), range.contains(number) else {
            throw TargetProblem(
                "field '\(key)' must be a number from \(plainNumber(range.lowerBound)) to \(plainNumber(range.upperBound)), not \(value.jsonText)"
            )
        }
        return number
    }

    /// A whole-number field within `range` (a numeric string is accepted).
    public func integer(_ key: String, _ range: ClosedRange<Int>) throws(TargetProblem) -> Int? {
        guard let value = value(key) else { return nil }
        guard let number = value.intValue ?? value.stringValue.flatMap({ Int($0) }), range.contains(number) else {
            throw TargetProblem(
                "field '\(key)' must be a whole number from \(range.lowerBound) to \(range.upperBound), not \(value.jsonText)")
        }
        return number
    }

    /// A boolean field.
    public func bool(_ key: String) throws(TargetProblem) -> Bool? {
        guard let value = value(key) else { return nil }
        guard case .bool(let flag) = value else { throw TargetProblem("field '\(key)' must be true or false") }
        return flag
    }

    /// Whether the target is switched off (`enabled: false`, OnlineTracker's monitors).
    public var isDisabled: Bool {
        if case .bool(false)? = object["enabled"] { return true }
        return false
    }

    /// The `id` as written (a string or a number), trimmed; `derived` when absent or blank.
    public func id(derived: () -> String) throws(TargetProblem) -> String {
        guard let rawID = value("id") else { return derived() }
        let text: String
        switch rawID {
        case .string(let value): text = value
        case .number(let value): text = value
        default: throw TargetProblem("field 'id' must be a string or a number, not \(rawID.typeName)")
        }
        return TargetIDs.normalize(text) ?? derived()
    }

    /// `check_interval` in milliseconds: seconds (`60`) or a duration (`"5m"`).
    public func checkIntervalMs() throws(TargetProblem) -> Int64? {
        guard let interval = value("check_interval") else { return nil }
        if let seconds = interval.doubleValue, seconds > 0, seconds <= 31_536_000 {
            return Int64((seconds * 1000).rounded())
        }
        if let text = interval.stringValue, let parsed = DurationText.parseMilliseconds(text), parsed > 0 {
            return parsed
        }
        throw TargetProblem("field 'check_interval' must be seconds (60) or a duration (\"5m\"), not \(interval.jsonText)")
    }

    /// `ip`: `"4"`, `"6"`, `"both"` or `"any"`.
    public func ipChoice() throws(TargetProblem) -> IPChoice? {
        guard let ip = value("ip") else { return nil }
        let text = ip.stringValue ?? ip.intValue.map(String.init) ?? ""
        guard let choice = IPChoice(rawValue: text) else {
            throw TargetProblem("field 'ip' must be \"4\", \"6\", \"both\" or \"any\", not \(ip.jsonText)")
        }
        return choice
    }

    /// `ssl_ok_threshold_days` and `ssl_warning_threshold_days` (days of certificate validity at
    /// or above which TLS is fine, and below which the target is down). When only one is given
    /// and it crosses the other's default, the other follows it, so the band never inverts.
    public func sslDays(okDefault: Int, warningDefault: Int) throws(TargetProblem) -> (ok: Int, warning: Int) {
        let okDays = try integer("ssl_ok_threshold_days", 0...3650)
        let warningDays = try integer("ssl_warning_threshold_days", 0...3650)
        var ok = okDays ?? okDefault
        var warning = warningDays ?? warningDefault
        if warning > ok {
            if let okDays, let warningDays {
                throw TargetProblem("ssl_warning_threshold_days (\(warningDays)) is above ssl_ok_threshold_days (\(okDays))")
            }
            if okDays != nil { warning = ok } else { ok = warning }
        }
        return (ok, warning)
    }

    /// The fields a probe does not own, to carry into its samples in order; then `agent`: the
    /// target's own, else the run's (`--agent`).
    public func extraFields(known: Set<String>, own: Set<String>, agent: String? = nil) -> [JSONField] {
        var fields = object.fields.filter { !known.contains($0.key) && !own.contains($0.key) && $0.key != "agent" }
        if let value = object["agent"] {
            fields.append(JSONField("agent", value))
        } else if let agent {
            fields.append(JSONField("agent", .string(agent)))
        }
        return fields
    }
}

extension TargetFields {
    /// OnlineTracker's monitor types, which its monitors carry as `type`.
    static let monitorTypes: Set<String> = ["http", "https", "ssl", "ping", "tcp"]

    /// An OnlineTracker monitor (`store-samples monitors`, `GET /api/monitors`) names its kind
    /// in `type`: read it as `kind` (unless `kind` is given), so such a list feeds both probes.
    public static func readingMonitorType(_ object: JSONObject) -> JSONObject {
        guard case .string(let type)? = object["type"], monitorTypes.contains(type) else { return object }
        var copy = object
        copy["type"] = nil
        if copy["kind"] == nil { copy["kind"] = .string(type) }
        return copy
    }
}

/// `5` for 5.0, `0.5` for 0.5: numbers in messages.
public func plainNumber(_ value: Double) -> String {
    value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
}
