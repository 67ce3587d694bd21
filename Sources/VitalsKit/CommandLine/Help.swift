/// Renders `--help` from a `CommandSpec`.
public enum Help {
    /// The full help text, wrapped to `width` columns; with a subcommand, that subcommand's help (and
    /// with an action of it, that action's).
    public static func render(_ spec: CommandSpec, subcommand: String? = nil, action: String? = nil, width: Int = 80) -> String {
        if let name = subcommand, let sub = spec.subcommand(name) {
            return render(spec, sub, action: action.flatMap(sub.action), width: width)
        }
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
        if !spec.subcommands.isEmpty {
            out += "\nSubcommands (" + spec.name + " SUBCOMMAND --help for each):\n"
            out += table(
                spec.subcommands.map { ($0.name + ($0.operandNames.isEmpty ? "" : " " + $0.operandNames), $0.summary) }, width: width)
        }
        out += options(spec.allOptions, width: width)
        if !spec.examples.isEmpty {
            out += "\nExamples:\n"
            for example in spec.examples { out += "  " + example + "\n" }
        }
        out += "\nExit status:\n"
        for (status, meaning) in spec.exitStatuses {
            let label = "  " + String(status.rawValue)
            out +=
                label + String(repeating: " ", count: max(1, 8 - label.count))
                + wrap(meaning, width: width, indent: 8).dropFirst(8) + "\n"
        }
        if !spec.seeAlso.isEmpty {
            out += "\nSee also: " + spec.seeAlso.joined(separator: ", ") + "\n"
        }
        return out
    }

    /// One subcommand's help, or one action's of it: its usage, summary, its actions, and the options that apply.
    static func render(_ spec: CommandSpec, _ sub: SubcommandSpec, action: SubcommandAction?, width: Int) -> String {
        if let action {
            var out = "Usage: \(spec.name) [OPTIONS] \(sub.name) \(action.usage)\n"
            out += "\n" + wrap(action.summary, width: width, indent: 0) + "\n"
            if !action.aliases.isEmpty {
                out += "\n" + wrap("Also spelt " + action.aliases.joined(separator: ", ") + ".", width: width, indent: 0) + "\n"
            }
            out += options(spec.options(for: sub, action: action), width: width, here: { sub.choices($0, action: action) })
            out += "\nSee '\(spec.name) --help' for the exit statuses and examples.\n"
            return out
        }
        var out = "Usage: \(spec.name) [OPTIONS] \(sub.name)" + (sub.operandNames.isEmpty ? "" : " " + sub.operandNames) + "\n"
        out += "\n" + wrap(sub.summary, width: width, indent: 0) + "\n"
        if !sub.actions.isEmpty {
            out += "\nActions (\(spec.name) \(sub.name) ACTION --help for each):\n"
            out += table(
                sub.actions.map {
                    ($0.usage, $0.summary + ($0.aliases.isEmpty ? "" : " (also " + $0.aliases.joined(separator: ", ") + ")"))
                },
                width: width)
        }
        // Every option that may follow the subcommand (an action's too, its help line names the action).
        out += options(spec.options(for: sub), width: width, here: { sub.choices($0, action: nil) })
        out += "\nSee '\(spec.name) --help' for the exit statuses and examples.\n"
        return out
    }

    /// The "Options:" section; `here` gives the words an option takes where the help is for, if they
    /// depend on it (a subcommand's `--format`), and its line ends with them.
    static func options(_ options: [OptionSpec], width: Int, here: (String) -> [String]? = { _ in nil }) -> String {
        "\nOptions:\n"
            + table(
                options.map { option in
                    guard let words = here(option.long), let first = words.first else { return (option.signature, option.fullHelp) }
                    let rest = words.dropFirst()
                    let list =
                        rest.isEmpty
                        ? first
                        : first + " (default)" + (rest.count == 1 ? " or " : ", ")
                            + (rest.count == 1 ? rest[rest.startIndex] : rest.dropLast().joined(separator: ", ") + " or " + rest.last!)
                    return (option.signature, option.fullHelp + "; here " + list)
                }, width: width)
    }

    /// Two columns, the second wrapped: `  -c, --concurrency N   text`.
    static func table(_ rows: [(String, String)], width: Int) -> String {
        var out = ""
        let column = min(32, (rows.map { $0.0.count }.max() ?? 0) + 4)
        for (left, text) in rows {
            let signature = "  " + left
            let helpText = wrap(text, width: width, indent: column)
            if signature.count + 2 <= column {
                out +=
                    signature + String(repeating: " ", count: column - signature.count)
                    + helpText.dropFirst(column) + "\n"
            } else {
                out += signature + "\n" + helpText + "\n"
            }
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
