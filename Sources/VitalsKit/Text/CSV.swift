/// CSV as RFC 4180 writes it: a field holding a comma, a quote or a line break goes in quotes,
/// its quotes doubled; rows end where the caller ends them.
public enum CSV {
    /// One field, quoted when it must be.
    public static func field(_ text: String) -> String {
        // By scalar: "\r\n" is one Character, equal to neither "\r" nor "\n".
        guard text.unicodeScalars.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        var quoted = "\""
        for character in text {
            if character == "\"" { quoted.append("\"") }
            quoted.append(character)
        }
        return quoted + "\""
    }

    /// One row of fields (nil is an empty field).
    public static func row(_ fields: [String?]) -> String {
        fields.map { $0.map(field) ?? "" }.joined(separator: ",")
    }
}
