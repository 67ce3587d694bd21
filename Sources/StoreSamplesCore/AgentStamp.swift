import VitalsKit

/// Whose a received sample is: the one rule for the samples an agent posts with its token
/// (`POST /api/samples`). It is decided on the line as `SampleLine`, the reader the store
/// stores with, has just read it, so no other parser can see another agent in the same bytes
/// (vitals-serve(7), AGENTS). A sample that names no agent (or null) gets the token's, written
/// into the line itself, so the stored and exported line says so; one that names the token's
/// agent is kept as written; one that names another, or names `agent` twice, or writes the key
/// with escapes, is refused.
enum AgentStamp {
    /// What to do with a line.
    enum Verdict: Equatable {
        /// The line names the token's agent already.
        case asWritten
        /// The line named no agent: `stamped` holds it with the token's agent.
        case stamped
        /// The line is refused, for the reason given.
        case refused(String)
    }

    /// The verdict for the record `line` that `reader` read last (a sample or a monitor record),
    /// writing the stamped line into `stamped` when it is one.
    static func apply(agent: String, line: LineBytes, reader: SampleLine, into stamped: inout [UInt8]) -> Verdict {
        var keys = 0
        var plain: FieldRange?
        for field in reader.fields {
            let key = line[field.keyStart..<field.keyEnd]
            if key.elementsEqual("agent".utf8) {
                keys += 1
                plain = field
            } else if key.contains(UInt8(ascii: "\\")),
                (try? JSONParser.parse(Array(line[(field.keyStart - 1)...field.keyEnd])))?.stringValue == "agent"
            {
                keys += 1
            }
        }
        guard keys <= 1 else { return .refused("the record names 'agent' more than once") }
        if keys == 1, plain == nil { return .refused("the record's 'agent' key is written with escapes; write it as \"agent\"") }
        let encoded = JSONValue.string(agent).encoded()
        stamped.removeAll(keepingCapacity: true)
        if let field = plain {
            let value = line[field.valueStart..<field.valueEnd]
            if value.elementsEqual("null".utf8) {
                stamped.append(contentsOf: line[..<field.valueStart])
                stamped.append(contentsOf: encoded)
                stamped.append(contentsOf: line[field.valueEnd...])
                return .stamped
            }
            guard let named = reader.text(field) else { return .refused("the record's 'agent' is not a string") }
            if named == agent { return .asWritten }
            return .refused(
                "the record names agent \(JSONValue.string(named).jsonText); this token is agent \(JSONValue.string(agent).jsonText)")
        }
        // No agent: added as the last field, before the closing brace.
        var end = line.count
        while end > 0, line[end - 1] != UInt8(ascii: "}") { end -= 1 }
        guard end > 0 else { return .refused("the record does not end with '}'") }
        stamped.append(contentsOf: line[..<(end - 1)])
        if !reader.fields.isEmpty { stamped.append(UInt8(ascii: ",")) }
        stamped.append(contentsOf: #""agent":"#.utf8)
        stamped.append(contentsOf: encoded)
        stamped.append(contentsOf: line[(end - 1)...])
        return .stamped
    }
}
