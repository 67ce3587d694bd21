import VitalsKit

/// What a shell should offer for an option's value.
enum ValueCompletion: Equatable {
    /// A flag: no value.
    case flag
    /// One of the option table's words.
    case choices([String])
    /// A file name (`FILE`, `PATH`, `PATH|URL`).
    case file
    /// A directory (`DIR`).
    case directory
    /// A command name (`CMD`).
    case command
    /// Free text (`N`, `DURATION`, `URL`, ...): nothing to offer.
    case text

    /// The completion for `option`'s value: its declared choices, else what its placeholder names.
    init(_ option: OptionSpec) {
        guard let placeholder = option.value else {
            self = .flag
            return
        }
        if !option.choices.isEmpty {
            self = .choices(option.choices)
            return
        }
        switch placeholder {
        case "FILE", "PATH", "PATH|URL": self = .file
        case "DIR": self = .directory
        case "CMD": self = .command
        default: self = .text
        }
    }
}

/// One spelling a shell completes: an option's long name or one of its aliases.
struct Spelling {
    /// The long spelling without dashes.
    let long: String
    /// The one-letter form (only on the option's own name, not on its aliases).
    let short: Character?
    /// The option spelled.
    let option: OptionSpec
    /// For an alias standing for one value (`--ndjson`): that value; it then takes none.
    let meaning: String?

    /// The words its value takes where a subcommand narrows them, if it does.
    var narrowedChoices: [String]?

    /// What its value completes to (a flag for an alias that stands for a value).
    var value: ValueCompletion {
        guard meaning == nil else { return .flag }
        return narrowedChoices.map(ValueCompletion.choices) ?? ValueCompletion(option)
    }

    /// The same spelling, its value one of `words`.
    func narrowed(to words: [String]) -> Spelling {
        var copy = self
        copy.narrowedChoices = words
        return copy
    }

    /// One line for a completion menu: the help's first clause, short enough for one row.
    var description: String {
        if let meaning { return "--\(option.long) \(meaning)" }
        return CompletionModel.shortHelp(option.help)
    }
}

/// A tool's command-line table as the completion scripts read it.
struct CompletionModel {
    let spec: CommandSpec

    /// Every option's spellings (names, then aliases), in table order.
    func spellings(_ options: [OptionSpec]) -> [Spelling] {
        options.flatMap { option in
            [Spelling(long: option.long, short: option.short, option: option, meaning: nil, narrowedChoices: nil)]
                + option.aliases.map { Spelling(long: $0.name, short: nil, option: option, meaning: $0.meaning, narrowedChoices: nil) }
        }
    }

    /// Every spelling of every option (what may come before a subcommand is named).
    var allSpellings: [Spelling] { spellings(spec.allOptions) }

    /// The spellings of the options that apply to `subcommand`.
    func spellings(for subcommand: SubcommandSpec) -> [Spelling] { spellings(spec.options(for: subcommand)) }

    /// Whether the operands of `subcommand` (or of a tool without subcommands) are files.
    func operandsAreFiles(_ subcommand: SubcommandSpec?) -> Bool {
        if let subcommand { return subcommand.operandNames.contains("FILE") }
        return spec.usage.contains { $0.contains("FILE") }
    }

    /// The default subcommand, if the tool has one.
    var defaultSubcommand: SubcommandSpec? { spec.defaultSubcommand.flatMap(spec.subcommand) }

    /// The words `option` takes after `subcommand`, when they depend on it (export's `--format`): the
    /// subcommand's own, else those all of its actions that declare any share.
    func choices(_ option: OptionSpec, after subcommand: SubcommandSpec) -> [String]? {
        if let own = subcommand.choices[option.long] { return own }
        let declared = Set(subcommand.actions.compactMap { $0.choices[option.long] })
        return declared.count == 1 ? declared.first : nil
    }

    /// The subcommands that narrow `option`'s words, with those words.
    func narrowing(_ option: OptionSpec) -> [(SubcommandSpec, [String])] {
        spec.subcommands.compactMap { subcommand in choices(option, after: subcommand).map { (subcommand, $0) } }
    }

    /// The subcommands an option applies to, or nil when it applies to every one.
    func owners(of option: OptionSpec) -> [SubcommandSpec]? {
        spec.isGlobal(option.long) ? nil : spec.subcommands.filter { $0.options.contains(option.long) }
    }

    /// A help line's first clause, at most 70 characters: a completion menu row.
    static func shortHelp(_ help: String) -> String {
        var text = help
        if let semicolon = text.range(of: "; ") { text = String(text[..<semicolon.lowerBound]) }
        if text.count > 70 {
            let cut = text.prefix(69)
            text = (cut.lastIndex(of: " ").map { String(cut[..<$0]) } ?? String(cut)) + "…"
        }
        return text
    }

    /// A shell function name for the tool: `probe-http` → `probe_http`.
    var identifier: String { String(spec.name.map { $0.isLetter || $0.isNumber ? $0 : "_" }) }
}
