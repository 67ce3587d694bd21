import VitalsKit

/// A zsh completion function (`_TOOL`, for a folder on `fpath`) written from a tool's option table,
/// with zsh's `_arguments`: every option with its help, its value's fixed words or files; then the
/// subcommands, and for the one named, its own options, actions and files.
enum ZshCompletion {
    static func script(_ spec: CommandSpec) -> String {
        let model = CompletionModel(spec: spec)
        var out = """
            #compdef \(spec.name)
            # zsh completion for \(spec.name): its subcommands, options and their fixed values.
            # Made by vitals-completions from \(spec.name)'s option table (vitals \(Vitals.version)); do not edit.

            _\(spec.name)() {
              local curcontext=$curcontext state state_descr line ret=1
              typeset -A opt_args
              local -a every=(
            \(specs(model.allSpellings))
              )

            """
        if spec.subcommands.isEmpty {
            out += "  _arguments -s -S $every\(model.operandsAreFiles(nil) ? " '*:file:_files'" : "") && ret=0\n"
            out += "  return ret\n}\n\n_\(spec.name) \"$@\"\n"
            return out
        }
        out += """
              _arguments -s -S -C -A '-*' $every '1: :->subcommand' '*:: :->operands' && ret=0
              case $state in
                subcommand)
                  local -a subcommands=(
            \(spec.subcommands.map { "        " + quote(escapeColon($0.name) + ":" + CompletionModel.shortHelp($0.summary)) }.joined(separator: "\n"))
                  )
                  _describe -t subcommands subcommand subcommands && ret=0

            """
        if model.operandsAreFiles(model.defaultSubcommand) { out += "      _files && ret=0\n" }
        out += """
                  ;;
                operands)
                  curcontext=${curcontext%:*:*}:\(spec.name)-$words[1]:
                  case $words[1] in

            """
        for subcommand in spec.subcommands {
            let own = model.spellings(for: subcommand).map { spelling in
                model.choices(spelling.option, after: subcommand).map { spelling.narrowed(to: $0) } ?? spelling
            }
            out += "        \(subcommand.name))\n          local -a own=(\n\(specs(own, indent: 12))\n          )\n"
            var operands = ""
            if !subcommand.actions.isEmpty {
                operands = " '1:action:(\(subcommand.actions.map(\.name).joined(separator: " ")))'"
            } else if model.operandsAreFiles(subcommand) {
                operands = " '*:file:_files'"
            }
            out += "          _arguments -s -S $own\(operands) && ret=0 ;;\n"
        }
        if let fallback = model.defaultSubcommand {
            // The first operand named no subcommand: it is the default's first operand.
            out += "        *) _arguments -s -S $every\(model.operandsAreFiles(fallback) ? " '*:file:_files'" : "") && ret=0 ;;\n"
        }
        out += """
                  esac
                  ;;
              esac
              return ret
            }

            _\(spec.name) "$@"

            """
        return out
    }

    /// `_arguments` specs, one a line: `'(-c --concurrency)'{-c+,--concurrency=}'[help]:N: '`.
    static func specs(_ spellings: [Spelling], indent: Int = 4) -> String {
        let pad = String(repeating: " ", count: indent)
        return spellings.map { spelling -> String in
            let takesValue = spelling.value != .flag
            let long = "--" + spelling.long + (takesValue ? "=" : "")
            let names = spelling.short.map { ["-\($0)" + (takesValue ? "+" : ""), long] } ?? [long]
            let plainNames = spelling.short.map { "-\($0) --\(spelling.long)" } ?? "--\(spelling.long)"
            let repeatable = spelling.option.repeatable
            let exclusion = repeatable ? "*" : (spelling.short == nil ? "" : "(\(plainNames))")
            let described = "[" + bracketEscaped(spelling.description) + "]" + valueSpec(spelling)
            if names.count == 1 { return pad + quote(exclusion + names[0] + described) }
            return pad + quote(exclusion) + "{" + names.joined(separator: ",") + "}" + quote(described)
        }.joined(separator: "\n")
    }

    /// `:PLACEHOLDER:action` for an option's value, or nothing for a flag.
    static func valueSpec(_ spelling: Spelling) -> String {
        let message = escapeColon(spelling.option.value ?? "")
        switch spelling.value {
        case .flag: return ""
        case .choices(let words): return ":\(message):(\(words.joined(separator: " ")))"
        case .file: return ":\(message):_files"
        case .directory: return ":\(message):_files -/"
        case .command: return ":\(message):_command_names -e"
        case .text: return ":\(message): "
        }
    }

    /// `text` in single quotes for zsh.
    static func quote(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }

    /// A description for `[...]`: brackets and backslashes escaped.
    static func bracketEscaped(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "[", with: "\\[").replacingOccurrences(
            of: "]", with: "\\]")
    }

    /// Colons escaped, for a message or a `name:description` pair.
    static func escapeColon(_ text: String) -> String { text.replacingOccurrences(of: ":", with: "\\:") }
}
