/// A health data type's identifier as Health Sync takes it (`HKQuantityTypeIdentifierHeartRate`):
/// letters, digits, `_`, `.` and `-`, 1 to 128 characters. Nothing else is ever put in a query or
/// a log entry as a type.
public enum HealthTypeIdentifier {
    /// Whether `text` is such an identifier.
    public static func isValid(_ text: String) -> Bool {
        (1...128).contains(text.utf8.count)
            && text.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
            }
    }
}
