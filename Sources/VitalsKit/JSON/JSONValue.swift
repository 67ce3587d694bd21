/// A JSON value that keeps what it was given: object fields in order (unknown ones too)
/// and numbers as their literal text, so a record read and written again is unchanged.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    /// A number, kept as the literal text of the input (`1.50` stays `1.50`).
    case number(String)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// A number value from an integer.
    public static func integer(_ value: Int) -> JSONValue { .number(String(value)) }

    /// The string, if this is a string.
    public var stringValue: String? { if case .string(let text) = self { return text } else { return nil } }
    /// The number as a Double, if this is a number.
    public var doubleValue: Double? { if case .number(let text) = self { return Double(text) } else { return nil } }
    /// The number as an Int, if this is a number with an integral value in range.
    public var intValue: Int? {
        guard case .number(let text) = self else { return nil }
        if let exact = Int(text) { return exact }
        guard let double = Double(text), double == double.rounded(), abs(double) < 9.0e15 else { return nil }
        return Int(double)
    }
    /// The Bool, if this is `true` or `false`.
    public var boolValue: Bool? { if case .bool(let flag) = self { return flag } else { return nil } }
    /// The elements, if this is an array.
    public var arrayValue: [JSONValue]? { if case .array(let items) = self { return items } else { return nil } }
    /// The object, if this is an object.
    public var objectValue: JSONObject? { if case .object(let object) = self { return object } else { return nil } }
    /// Whether this is `null`.
    public var isNull: Bool { self == .null }

    /// The JSON type name, for messages (`string`, `number`, ...).
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "boolean"
        case .number: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }

    /// Compact JSON text of this value.
    public var jsonText: String { String(decoding: encoded(), as: UTF8.self) }

    /// Compact JSON bytes of this value.
    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        JSONText.append(self, to: &out)
        return out
    }
}

/// One field of a JSON object.
public struct JSONField: Sendable, Equatable {
    /// The key.
    public var key: String
    /// The value.
    public var value: JSONValue
    /// Creates a field.
    public init(_ key: String, _ value: JSONValue) {
        self.key = key
        self.value = value
    }
}

/// A JSON object that keeps its fields in input order, duplicates and unknown keys included.
public struct JSONObject: Sendable, Equatable, Sequence {
    /// The fields in order.
    public var fields: [JSONField]

    /// Creates an object from fields.
    public init(_ fields: [JSONField] = []) { self.fields = fields }

    /// The value of the last field named `key` (a duplicate key's last value wins), or nil.
    /// Setting replaces that field in place, or appends a new one; setting nil removes every field named `key`.
    public subscript(key: String) -> JSONValue? {
        get { fields.last(where: { $0.key == key })?.value }
        set {
            if let newValue {
                if let index = fields.lastIndex(where: { $0.key == key }) {
                    fields[index].value = newValue
                } else {
                    fields.append(JSONField(key, newValue))
                }
            } else {
                fields.removeAll { $0.key == key }
            }
        }
    }

    /// Whether a field named `key` exists.
    public func contains(_ key: String) -> Bool { fields.contains { $0.key == key } }

    /// Iterates fields in order.
    public func makeIterator() -> IndexingIterator<[JSONField]> { fields.makeIterator() }
}
