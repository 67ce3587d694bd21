/// Another spelling of an option: `--timezone` for `--tz`, or `--ndjson` for `--format ndjson`.
public struct OptionAlias: Sendable, Equatable, ExpressibleByStringLiteral {
    /// The alias without dashes.
    public let name: String
    /// For an alias that stands for one value of the option (`--ndjson` = `--format ndjson`): that value.
    /// Such an alias takes no value of its own.
    public let meaning: String?

    /// An alias for `name`, or a flag standing for `--option meaning`.
    public init(_ name: String, meaning: String? = nil) {
        self.name = name
        self.meaning = meaning
    }

    /// A plain alias: `"timezone"`.
    public init(stringLiteral name: String) { self.init(name) }

    /// `--timezone`, or `--ndjson` as shown in help and man pages.
    public var signature: String { "--\(name)" }
}

/// One command-line option: the single source for parsing, `--help` and the man-page test.
public struct OptionSpec: Sendable, Equatable {
    /// The long name without dashes (`concurrency` for `--concurrency`).
    public let long: String
    /// The one-letter form, if any (`c` for `-c`).
    public let short: Character?
    /// The placeholder of the option's value (`N`, `FILE`), or nil for a flag.
    public let value: String?
    /// One line of help, without the default (help adds it from `defaultValue`).
    public let help: String
    /// Whether the option may be given more than once (values accumulate).
    public let repeatable: Bool
    /// The value taken when the option is absent, as a user would type it; the typed accessors
    /// of `ParsedOptions` read it, and help and the man-page test show it.
    public let defaultValue: String?
    /// Other accepted spellings (kept when the suite settled on one word).
    public let aliases: [OptionAlias]
    /// For a duration option: the accepted range in milliseconds.
    public let durationRange: ClosedRange<Int64>?
    /// For an option whose value is one of a few words (`--format json|ndjson`): every word any
    /// subcommand accepts. `ParsedOptions.choice` checks against them; completions offer them, and
    /// the help text names each one.
    public let choices: [String]

    /// Creates an option.
    public init(
        _ long: String, short: Character? = nil, value: String? = nil, repeatable: Bool = false, default defaultValue: String? = nil,
        aliases: [OptionAlias] = [], durationRange: ClosedRange<Int64>? = nil, choices: [String] = [], help: String
    ) {
        self.long = long
        self.short = short
        self.value = value
        self.help = help
        self.repeatable = repeatable
        self.defaultValue = defaultValue
        self.aliases = aliases
        self.durationRange = durationRange
        self.choices = choices
    }

    /// A duration option (`DURATION`) with a default and a range: a value outside it is a usage error naming the range.
    public static func duration(
        _ long: String, short: Character? = nil, default defaultValue: String? = nil,
        range: ClosedRange<Int64> = 1...Int64.max / 4, aliases: [OptionAlias] = [], help: String
    ) -> OptionSpec {
        OptionSpec(long, short: short, value: "DURATION", default: defaultValue, aliases: aliases, durationRange: range, help: help)
    }

    /// `--now TIME`: the time taken as now, read by `ParsedOptions.now()`.
    public static func now(_ help: String = "the time taken as now, RFC 3339 or 'now' (default: the clock)") -> OptionSpec {
        OptionSpec("now", value: "TIME", help: help)
    }

    /// A `WHEN` option: an RFC 3339 time or a duration ago (`--since 2h`), read by `ParsedOptions.time(_:now:)`.
    public static func when(_ long: String, aliases: [OptionAlias] = [], help: String) -> OptionSpec {
        OptionSpec(long, value: "WHEN", aliases: aliases, help: help)
    }

    /// `-c, --concurrency N` as shown in help.
    public var signature: String {
        var text = short.map { "-\($0), " } ?? "    "
        text += "--\(long)"
        if let value { text += " \(value)" }
        return text
    }

    /// The help line as printed: the help, the default and the aliases.
    public var fullHelp: String {
        var text = help
        if let defaultValue { text += " (default \(defaultValue))" }
        if !aliases.isEmpty {
            text +=
                "; also "
                + aliases.map { alias in
                    alias.meaning.map { "\(alias.signature) for --\(long) \($0)" } ?? alias.signature
                }.joined(separator: ", ")
        }
        return text
    }

    /// `--help`, present in every tool.
    public static let help = OptionSpec("help", short: "h", help: "print this help and exit")
    /// `--version`, present in every tool.
    public static let version = OptionSpec("version", short: "V", help: "print the version and exit")

    /// `--progress` and `--no-progress`, for a tool with work that can take a while (its help lines start
    /// with `scope:` when only a subcommand has such work): progress shows on standard error when it is a
    /// terminal unless forced either way (read by `ProgressLine.wanted`).
    public static func progress(_ scope: String? = nil, _ what: String = "progress") -> [OptionSpec] {
        let prefix = scope.map { $0 + ": " } ?? ""
        return [
            OptionSpec("progress", help: prefix + "show \(what) on standard error even when it is not a terminal"),
            OptionSpec("no-progress", help: prefix + "show none (by default \(what) shows when standard error is a terminal)"),
        ]
    }
}

/// A word that a subcommand takes as its first operand to choose what it does (`agents approve ID`),
/// with its own operands, options and help: the parser takes it, checks its operands and options,
/// and `--help` after it shows its help.
public struct SubcommandAction: Sendable, Equatable {
    /// The word (`approve`).
    public let name: String
    /// Other words for it, kept where another vocabulary meets this one (`register` for `devices add`,
    /// as OnlineTracker's endpoint names it).
    public let aliases: [String]
    /// How many operands it takes after the word.
    public let operands: ClosedRange<Int>
    /// The operands after it as shown in usage (`ID`), or empty.
    public let operandNames: String
    /// The long names of the tool's options that apply to it (the global ones apply too).
    public let options: Set<String>
    /// One line saying what it does.
    public let summary: String
    /// The words it accepts for options whose choices depend on what runs (`--format`), by long name,
    /// its default first; each is among the option's own choices.
    public let choices: [String: [String]]

    /// Creates an action.
    public init(
        _ name: String, operands: ClosedRange<Int> = 0...0, _ operandNames: String = "", aliases: [String] = [],
        options: Set<String> = [], choices: [String: [String]] = [:], summary: String
    ) {
        self.name = name
        self.choices = choices
        self.aliases = aliases
        self.operands = operands
        self.operandNames = operandNames
        self.options = options
        self.summary = summary
    }

    /// `approve ID` as shown in usage.
    public var usage: String { operandNames.isEmpty ? name : name + " " + operandNames }
}

/// One subcommand: its operands and the options that apply to it.
public struct SubcommandSpec: Sendable, Equatable {
    /// The word that names it (`history`).
    public let name: String
    /// How many operands it takes (without an action, for a subcommand with actions).
    public let operands: ClosedRange<Int>
    /// The operands as shown in usage and messages (`ID`, `A B`, `[FILE...]`); for a subcommand with
    /// actions, the actions with theirs (`add TOKEN | remove TOKEN | count | list`).
    public let operandNames: String
    /// One line saying what it does.
    public let summary: String
    /// The long names of the tool's options that apply to it (without an action, for a subcommand with
    /// actions); options named by no subcommand and no action apply to all.
    public let options: Set<String>
    /// The words its first operand may be, when that operand chooses what it does (`approve`, `reject`,
    /// `token` for `agents`): the parser takes the action, checks its operands and options, and a word
    /// that names none is a usage error.
    public let actions: [SubcommandAction]
    /// Whether it needs an action (`devices`), or also runs without one (`agents` lists the agents).
    public let requiresAction: Bool
    /// The words it accepts for options whose choices depend on the subcommand (`--format`: `ndjson` or
    /// `csv` for export), by long name, its default first; each is among the option's own choices.
    /// `ParsedOptions.choice` checks against them, help names them and completions offer them.
    public let choices: [String: [String]]

    /// Creates a subcommand.
    public init(
        _ name: String, operands: ClosedRange<Int> = 0...0, _ operandNames: String = "", options: Set<String> = [],
        choices: [String: [String]] = [:], summary: String
    ) {
        self.name = name
        self.choices = choices
        self.operands = operands
        self.operandNames = operandNames
        self.summary = summary
        self.options = options
        self.actions = []
        self.requiresAction = false
    }

    /// Creates a subcommand whose first operand is an action. Without `requiresAction`, it also runs
    /// alone, without operands, with `options`.
    public init(
        _ name: String, actions: [SubcommandAction], requiresAction: Bool, options: Set<String> = [],
        choices: [String: [String]] = [:], summary: String
    ) {
        self.name = name
        self.choices = choices
        self.operands = 0...0
        let choices = actions.map(\.usage).joined(separator: " | ")
        self.operandNames = requiresAction ? choices : "[" + choices + "]"
        self.summary = summary
        self.options = requiresAction ? [] : options
        self.actions = actions
        self.requiresAction = requiresAction
    }

    /// The action `word` names (its name or an alias), if any.
    public func action(_ word: String) -> SubcommandAction? {
        actions.first { $0.name == word || $0.aliases.contains(word) }
    }

    /// Every option named by it or by one of its actions.
    public var allOptionNames: Set<String> { actions.reduce(options) { $0.union($1.options) } }

    /// The words `long` accepts when it runs with `action` (or alone), its default first, if they depend on it.
    public func choices(_ long: String, action: SubcommandAction?) -> [String]? { action?.choices[long] ?? choices[long] }

    /// `agents` or `agents approve`, as messages name a subcommand or an action of it.
    public func label(_ action: SubcommandAction?) -> String { action.map { "\(name) \($0.name)" } ?? name }
}

/// The command-line interface of one tool: drives parsing and help.
public struct CommandSpec: Sendable {
    /// The tool name, as typed (`probe-http`).
    public let name: String
    /// One line saying what the tool does.
    public let summary: String
    /// Usage lines after the name (`[OPTIONS] [FILE...]`).
    public let usage: [String]
    /// A paragraph or two of description for `--help`.
    public let description: String
    /// The tool's own options; `--help` and `--version` are added by `allOptions`.
    public let options: [OptionSpec]
    /// The subcommands, if the tool has them: the first operand names one.
    public let subcommands: [SubcommandSpec]
    /// The subcommand run when the first operand names none (store-samples' ingest), if any.
    public let defaultSubcommand: String?
    /// Example command lines for `--help`: each is one of the man page's EXAMPLES, word for word, which the
    /// documentation tests run and check (`HelpExampleTests`).
    public let examples: [String]
    /// The exit statuses that apply, with their meaning for this tool.
    public let exitStatuses: [(ExitStatus, String)]
    /// Related man pages.
    public let seeAlso: [String]

    /// Creates a command description.
    public init(
        name: String, summary: String, usage: [String], description: String, options: [OptionSpec],
        subcommands: [SubcommandSpec] = [], defaultSubcommand: String? = nil,
        examples: [String] = [], exitStatuses: [(ExitStatus, String)], seeAlso: [String] = []
    ) {
        self.name = name
        self.summary = summary
        self.usage = usage
        self.description = description
        self.options = options
        self.subcommands = subcommands
        self.defaultSubcommand = defaultSubcommand
        self.examples = examples
        self.exitStatuses = exitStatuses
        self.seeAlso = seeAlso
    }

    /// The tool's options plus `--help` and `--version`.
    public var allOptions: [OptionSpec] { options + [.help, .version] }

    /// The subcommand named `name`, if any.
    public func subcommand(_ name: String) -> SubcommandSpec? { subcommands.first { $0.name == name } }

    /// Whether an option applies to every subcommand (no subcommand and no action lists it).
    public func isGlobal(_ long: String) -> Bool { !subcommands.contains { $0.allOptionNames.contains(long) } }

    /// The options that may follow a subcommand: its own, its actions' and the global ones, in table order.
    public func options(for subcommand: SubcommandSpec) -> [OptionSpec] {
        allOptions.filter { isGlobal($0.long) || subcommand.allOptionNames.contains($0.long) }
    }

    /// The options that apply to a subcommand run with `action`, or without one: its or the action's, and
    /// the global ones, in table order.
    public func options(for subcommand: SubcommandSpec, action: SubcommandAction?) -> [OptionSpec] {
        let own = action?.options ?? subcommand.options
        return allOptions.filter { isGlobal($0.long) || own.contains($0.long) }
    }

    /// Where an option applies (`devices add`, `serve`), for a message saying it does not apply elsewhere.
    public func owners(of long: String) -> [String] {
        subcommands.flatMap { subcommand in
            (subcommand.options.contains(long) ? [subcommand.name] : [])
                + subcommand.actions.filter { $0.options.contains(long) }.map { subcommand.label($0) }
        }
    }
}

/// Defaults written as a user would type them, for option tables whose defaults live in a settings type.
public enum DefaultText {
    /// `10`, `2.5`: a number without a trailing `.0`.
    public static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    /// `1d`, `5s`, `250ms`: a duration in the largest unit that divides it exactly.
    public static func duration(milliseconds: Int64) -> String {
        for (unit, size) in [("d", Int64(86_400_000)), ("h", 3_600_000), ("m", 60_000), ("s", 1000)]
        where milliseconds >= size && milliseconds % size == 0 {
            return "\(milliseconds / size)\(unit)"
        }
        return "\(milliseconds)ms"
    }
}
