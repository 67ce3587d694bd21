import VitalsKit

/// A bash completion function for one tool, written from its option table.
///
/// It needs nothing but bash 4 (no bash-completion helpers): it walks the words before the cursor
/// the way the tool's parser does (options and their values, `--`, the subcommand, the action), then
/// offers the current word's candidates: an option's fixed values or files for its value, the options
/// that apply to the subcommand for a word starting with `-`, else subcommands, actions or files.
enum BashCompletion {
    static func script(_ spec: CommandSpec) -> String {
        let model = CompletionModel(spec: spec)
        let function = "_vitals_\(model.identifier)"
        let all = model.allSpellings
        let valueLongs = all.filter { $0.value != .flag }.map { "--" + $0.long }
        let valueShorts = String(all.filter { $0.value != .flag }.compactMap(\.short))
        var out = """
            # bash completion for \(spec.name): its subcommands, options and their fixed values.
            # Made by vitals-completions from \(spec.name)'s option table (vitals \(Vitals.version)); do not edit.
            \(function)() {
                local cur=${COMP_WORDS[COMP_CWORD]} option= word sub= action= operands=0 only_operands= i=1 k
                # bash splits --option=value at '=': the value's word follows a '=' word.
                [[ $cur == = ]] && cur=
                while (( i < COMP_CWORD )); do
                    word=${COMP_WORDS[i]}
                    i=$((i + 1))
                    if [[ -z $only_operands ]]; then
                        case $word in
                            --) only_operands=1; continue ;;

            """
        if !valueLongs.isEmpty {
            out += """
                                \(valueLongs.joined(separator: "|")))
                                    [[ ${COMP_WORDS[i]} == = ]] && i=$((i + 1))
                                    (( i >= COMP_CWORD )) && option=$word
                                    i=$((i + 1)); continue ;;

                """
        }
        out += """
                            -) ;;
                            --*) continue ;;
                            -*)
                                for ((k = 1; k < ${#word}; k++)); do
                                    if [[ "\(valueShorts)" == *"${word:k:1}"* ]]; then
                                        if (( k == ${#word} - 1 )); then (( i >= COMP_CWORD )) && option=-${word:k:1}; i=$((i + 1)); fi
                                        break
                                    fi
                                done
                                continue ;;
                        esac
                    fi

            """
        if !spec.subcommands.isEmpty {
            out += """
                        if [[ -z $sub ]]; then
                            case $word in
                                \(spec.subcommands.map(\.name).joined(separator: "|"))) sub=$word; continue ;;
                            esac
                            sub=\(model.defaultSubcommand?.name ?? "-")
                        fi

                """
        }
        let withActions = spec.subcommands.filter { !$0.actions.isEmpty }
        if !withActions.isEmpty {
            // The first operand after a subcommand with actions may name one (by its name or another word).
            out += "        if (( operands == 0 )); then\n            case \"$sub $word\" in\n"
            for subcommand in withActions {
                for action in subcommand.actions {
                    let patterns = ([action.name] + action.aliases).map { "\"\(subcommand.name) \($0)\"" }.joined(separator: "|")
                    out += "                \(patterns)) action=\(action.name) ;;\n"
                }
            }
            out += "            esac\n        fi\n"
        }
        out += """
                    operands=$((operands + 1))
                done
                if [[ -n $option ]]; then
                    case $option in

            """
        // The value of an option: its fixed words, files, directories or commands.
        for option in spec.allOptions {
            let value = ValueCompletion(option)
            guard value != .flag, let words = candidates(value) else { continue }
            let names =
                (["--" + option.long] + (option.short.map { ["-" + String($0)] } ?? []))
                + option.aliases.filter { $0.meaning == nil }.map { "--" + $0.name }
            let narrowed = model.narrowing(option)
            if narrowed.isEmpty {
                out += "            \(names.joined(separator: "|"))) \(words) ;;\n"
                continue
            }
            // Where the subcommand narrows the words (export's --format), its own.
            out += "            \(names.joined(separator: "|")))\n                case $sub in\n"
            for (subcommand, own) in narrowed {
                out += "                    \(subcommand.name)) \(candidates(.choices(own))!) ;;\n"
            }
            out += "                    *) \(words) ;;\n                esac ;;\n"
        }
        out += """
                    esac
                    return 0
                fi
                if [[ $cur == -* && -z $only_operands ]]; then

            """
        func optionWords(_ spellings: [Spelling]) -> String {
            spellings.flatMap { spelling in ["--" + spelling.long] + (spelling.short.map { ["-" + String($0)] } ?? []) }.joined(
                separator: " ")
        }
        if spec.subcommands.isEmpty {
            out += "        COMPREPLY=($(compgen -W \"\(optionWords(model.allSpellings))\" -- \"$cur\"))\n"
        } else {
            // After an action, its options; after a subcommand, every option that may follow it.
            out += "        case \"$sub $action\" in\n"
            for subcommand in spec.subcommands {
                for action in subcommand.actions {
                    let words = optionWords(model.spellings(spec.options(for: subcommand, action: action)))
                    out += "            \"\(subcommand.name) \(action.name)\") COMPREPLY=($(compgen -W \"\(words)\" -- \"$cur\")) ;;\n"
                }
            }
            for subcommand in spec.subcommands {
                out +=
                    "            \"\(subcommand.name) \"*) COMPREPLY=($(compgen -W \"\(optionWords(model.spellings(for: subcommand)))\" -- \"$cur\")) ;;\n"
            }
            out += "            *) COMPREPLY=($(compgen -W \"\(optionWords(model.allSpellings))\" -- \"$cur\")) ;;\n"
            out += "        esac\n"
        }
        out += """
                    return 0
                fi

            """
        let files = "compopt -o filenames 2>/dev/null; mapfile -t -O ${#COMPREPLY[@]} COMPREPLY < <(compgen -f -- \"$cur\")"
        if spec.subcommands.isEmpty {
            if model.operandsAreFiles(nil) { out += "    \(files)\n" }
        } else {
            out += "    if [[ -z $sub ]]; then\n"
            out += "        COMPREPLY=($(compgen -W \"\(spec.subcommands.map(\.name).joined(separator: " "))\" -- \"$cur\"))\n"
            if model.operandsAreFiles(model.defaultSubcommand) { out += "        \(files)\n" }
            out += "        return 0\n    fi\n"
            out += "    case $sub in\n"
            for subcommand in spec.subcommands {
                if !subcommand.actions.isEmpty {
                    out +=
                        "        \(subcommand.name)) (( operands == 0 )) && COMPREPLY=($(compgen -W \"\(subcommand.actions.map(\.name).joined(separator: " "))\" -- \"$cur\")) ;;\n"
                } else if model.operandsAreFiles(subcommand) {
                    out += "        \(subcommand.name)) \(files) ;;\n"
                }
            }
            out += "    esac\n"
        }
        out += """
                return 0
            }
            complete -F \(function) \(spec.name)

            """
        return out
    }

    /// The command that fills COMPREPLY for a value, or nil when there is nothing to offer.
    static func candidates(_ value: ValueCompletion) -> String? {
        switch value {
        case .choices(let words): return "COMPREPLY=($(compgen -W \"\(words.joined(separator: " "))\" -- \"$cur\"))"
        case .file: return "compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -f -- \"$cur\")"
        case .directory: return "compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -d -- \"$cur\")"
        case .command: return "mapfile -t COMPREPLY < <(compgen -c -- \"$cur\")"
        case .flag, .text: return nil
        }
    }
}
