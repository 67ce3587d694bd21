import VitalsKit

/// The numbers detect-anomaly judges: a JSON number literal that is finite.
enum NumberText {
    /// The value of a JSON number literal, or nil for anything else (`null`, strings, booleans)
    /// and for numbers too large to be finite.
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Double? {
        guard let value = JSONNumber.value(bytes), value.isFinite else { return nil }
        return value
    }
}
