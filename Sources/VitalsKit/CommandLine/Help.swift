/// Renders `--help` from a `CommandSpec`.
public enum Help {
    /// The full help text, wrapped to `width` columns.
    public static func render(_ spec: CommandSpec, width: Int = 80) -> String {
        var out = ""
        for (index, usage) in spec.usage.enumerated() {
            out += (index == 0 ? "Usage: " : "       ") + spec.name + (usage.isEmpty ? "" : " " + usage) + "\n"
        }
        out += "\n" + wrap(spec.summary, width: width, indent: 0) + "\n"
        if !spec.description.isEmpty {
            for paragraph in spec.description.split(separator: "\n\n", omittingEmptySubsequences: true) {
                out += "\n" + wrap(String(paragraph), width: width, indent: 0) + "\n"
            }
        }
        out += "\nOptions:\n"
        let column = min(32, (spec.allOptions.map { $0.signature.count }.max() ?? 0) + 4)
        for option in spec.allOptions {
            let signature = "  " + option.signature
            let helpText = wrap(option.help, width: width, indent: column)
            if signature.count + 2 <= column {
                out += signature + String(repeating: " ", count: column - signature.count)
                    + helpText.dropFirst(column) + "\n"
            } else {
                out += signature + "\n" + helpText + "\n"
            }
        }
        if !spec.examples.isEmpty {
            out += "\nExamples:\n"
            for example in spec.examples { out += "  " + example + "\n" }
        }
        out += "\nExit status:\n"
        for (status, meaning) in spec.exitStatuses {
            let label = "  " + String(status.rawValue)
            out += label + String(repeating: " ", count: max(1, 8 - label.count))
                + wrap(meaning, width: width, indent: 8).dropFirst(8) + "\n"
        }
        if !spec.seeAlso.isEmpty {
            out += "\nSee also: " + spec.seeAlso.joined(separator: ", ") + "\n"
        }
        return out
    }

    /// Wraps words to `width`, every line indented by `indent` spaces.
    public static func wrap(_ text: String, width: Int, indent: Int) -> String {
        let pad = String(repeating: " ", count: indent)
        var lines: [String] = []
        var line = pad
        for word in text.split(separator: " ", omittingEmptySubsequences: true) {
            if line.count > indent, line.count + 1 + word.count > width {
                lines.append(line)
                line = pad
            }
            line += (line.count > indent ? " " : "") + word
        }
        lines.append(line)
        return lines.joined(separator: "\n")
    }
}
