import VitalsKit

/// fish `complete` lines written from a tool's option table: subcommands and actions with their
/// summaries, every option with its help, and its value's fixed words, files or directories. An
/// option that belongs to some subcommands is offered unless another subcommand was named.
enum FishCompletion {
    static func script(_ spec: CommandSpec) -> String {
        let model = CompletionModel(spec: spec)
        let tool = spec.name
        var lines = [
            "# fish completion for \(tool): its subcommands, options and their fixed values.",
            "# Made by vitals-completions from \(tool)'s option table (vitals \(Vitals.version)); do not edit.",
        ]
        let names = spec.subcommands.map(\.name)
        if !names.isEmpty {
            // Files only where a subcommand takes them (below).
            lines.append("complete -c \(tool) -f")
            let none = "not __fish_seen_subcommand_from \(names.joined(separator: " "))"
            for subcommand in spec.subcommands {
                lines.append(
                    "complete -c \(tool) -n \(quote(none)) -a \(subcommand.name) -d \(quote(CompletionModel.shortHelp(subcommand.summary)))"
                )
            }
            for subcommand in spec.subcommands {
                if !subcommand.actions.isEmpty {
                    let actions = subcommand.actions.map(\.name).joined(separator: " ")
                    let condition = "__fish_seen_subcommand_from \(subcommand.name); and not __fish_seen_subcommand_from \(actions)"
                    for action in subcommand.actions {
                        let words = ([subcommand.name, action.name] + (action.operandNames.isEmpty ? [] : [action.operandNames])).joined(
                            separator: " ")
                        lines.append("complete -c \(tool) -n \(quote(condition)) -a \(action.name) -d \(quote(words))")
                    }
                } else if model.operandsAreFiles(subcommand) {
                    var condition = "__fish_seen_subcommand_from \(subcommand.name)"
                    if subcommand.name == spec.defaultSubcommand { condition += "; or \(none)" }
                    lines.append("complete -c \(tool) -n \(quote(condition)) -F")
                }
            }
        }
        for general in model.allSpellings {
            // Where a subcommand narrows the option's words (export's --format), a line of its own offers them.
            let narrowed = general.meaning == nil ? model.narrowing(general.option) : []
            for (spelling, condition) in [(general, nil as String?)]
                + narrowed.map({ (general.narrowed(to: $0.1), "__fish_seen_subcommand_from " + $0.0.name) })
            {
                var line = "complete -c \(tool)"
                if let condition {
                    line += " -n \(quote(condition))"
                } else {
                    var conditions: [String] = []
                    if let owners = model.owners(of: spelling.option) {
                        let others = spec.subcommands.filter { subcommand in !owners.contains { $0.name == subcommand.name } }.map(\.name)
                        if !others.isEmpty { conditions.append("not __fish_seen_subcommand_from " + others.joined(separator: " ")) }
                    }
                    if !narrowed.isEmpty {
                        conditions.append("not __fish_seen_subcommand_from " + narrowed.map(\.0.name).joined(separator: " "))
                    }
                    if !conditions.isEmpty { line += " -n \(quote(conditions.joined(separator: "; and ")))" }
                }
                if let short = spelling.short { line += " -s \(short)" }
                line += " -l \(spelling.long)"
                switch spelling.value {
                case .flag: break
                case .choices(let words): line += " -x -a \(quote(words.joined(separator: " ")))"
                case .file: line += " -r -F"
                case .directory: line += " -x -a '(__fish_complete_directories)'"
                case .command: line += " -x -a '(__fish_complete_command)'"
                case .text: line += " -x"
                }
                line += " -d \(quote(spelling.description))"
                lines.append(line)
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// `text` in fish's single quotes (backslash and quote escaped).
    static func quote(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
    }
}
