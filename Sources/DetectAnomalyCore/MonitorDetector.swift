import VitalsKit

/// One monitor's state under one detector, and its judgement of each new observation.
///
/// Memory is constant per monitor (a window of `--window` points and a few numbers); a
/// judgement reads the state, then learns the observation. Detectors are values, kept in one
/// array and changed in place.
protocol MonitorDetector {
    associatedtype Report: AnomalyReport

    /// A monitor with no history.
    init(settings: DetectorSettings)
    /// Judges `observation` against what came before, then learns it.
    mutating func judge(_ observation: Observation, settings: DetectorSettings) -> Report
    /// The report for a sample that is not judged (no monitor, no value, not up or degraded).
    static var unjudged: Report { get }

    /// Appends the state's fields, after `"monitor":...`, as `,"key":value` pairs.
    func encodeState(to out: inout [UInt8])
    /// Restores a monitor from its state object; throws a message naming what is wrong.
    init(state: JSONObject, settings: DetectorSettings) throws(StateError)
}

/// What is wrong with a state file's content (the file name is added by the reader).
struct StateError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

// MARK: - Reading state fields

extension JSONObject {
    /// A finite number field.
    func stateNumber(_ key: String) throws(StateError) -> Double {
        guard let value = self[key]?.doubleValue, value.isFinite else { throw StateError("'\(key)' is not a number") }
        return value
    }

    /// A finite number field, or nil when null.
    func optionalStateNumber(_ key: String) throws(StateError) -> Double? {
        if self[key] == .null { return nil }
        return try stateNumber(key)
    }

    /// An integer field, or nil when null.
    func optionalStateInteger(_ key: String) throws(StateError) -> Int64? {
        guard let value = self[key] else { throw StateError("'\(key)' is missing") }
        if value == .null { return nil }
        guard case .number(let text) = value, let integer = Int64(text) else { throw StateError("'\(key)' is not a whole number") }
        return integer
    }

    /// A boolean field.
    func stateBool(_ key: String) throws(StateError) -> Bool {
        guard let value = self[key]?.boolValue else { throw StateError("'\(key)' is not true or false") }
        return value
    }

    /// An array of finite numbers, at most `limit` long.
    func stateNumbers(_ key: String, limit: Int) throws(StateError) -> [Double] {
        guard let items = self[key]?.arrayValue else { throw StateError("'\(key)' is not an array") }
        guard items.count <= limit else { throw StateError("'\(key)' has \(items.count) values, more than \(limit)") }
        var numbers: [Double] = []
        numbers.reserveCapacity(items.count)
        for item in items {
            guard let number = item.doubleValue, number.isFinite else { throw StateError("'\(key)' holds something other than a number") }
            numbers.append(number)
        }
        return numbers
    }
}

// MARK: - Writing state fields

enum StateText {
    /// Appends `,"key":` then the shortest text that reads back as exactly `value`.
    static func number(_ key: StaticString, _ value: Double, to out: inout [UInt8]) {
        self.key(key, to: &out)
        exact(value, to: &out)
    }

    /// Appends `,"key":` then the value or null.
    static func optionalNumber(_ key: StaticString, _ value: Double?, to out: inout [UInt8]) {
        self.key(key, to: &out)
        if let value { exact(value, to: &out) } else { JSONText.appendLiteral("null", to: &out) }
    }

    /// Appends `,"key":` then the integer or null.
    static func optionalInteger(_ key: StaticString, _ value: Int64?, to out: inout [UInt8]) {
        self.key(key, to: &out)
        if let value { JSONText.appendInt(value, to: &out) } else { JSONText.appendLiteral("null", to: &out) }
    }

    /// Appends `,"key":true|false`.
    static func bool(_ key: StaticString, _ value: Bool, to out: inout [UInt8]) {
        self.key(key, to: &out)
        JSONText.appendLiteral(value ? "true" : "false", to: &out)
    }

    /// Appends `,"key":[...]` of exact numbers.
    static func numbers(_ key: StaticString, _ values: [Double], to out: inout [UInt8]) {
        self.key(key, to: &out)
        out.append(UInt8(ascii: "["))
        for (index, value) in values.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            exact(value, to: &out)
        }
        out.append(UInt8(ascii: "]"))
    }

    /// Appends the shortest decimal text that reads back as exactly `value` (Swift's `description`).
    static func exact(_ value: Double, to out: inout [UInt8]) {
        if value == value.rounded(), abs(value) < 1e15 {
            JSONText.appendInt(Int64(value), to: &out)
            if value == 0, value.sign == .minus { out.insert(UInt8(ascii: "-"), at: out.count - 1) }
            return
        }
        out.append(contentsOf: value.description.utf8)
    }

    private static func key(_ key: StaticString, to out: inout [UInt8]) {
        out.append(UInt8(ascii: ","))
        out.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { out.append(contentsOf: $0) }
        out.append(UInt8(ascii: "\""))
        out.append(UInt8(ascii: ":"))
    }
}
