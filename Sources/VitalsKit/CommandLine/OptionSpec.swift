/// One command-line option: the single source for parsing, `--help` and the man-page test.
public struct OptionSpec: Sendable, Equatable {
    /// The long name without dashes (`concurrency` for `--concurrency`).
    public let long: String
    /// The one-letter form, if any (`c` for `-c`).
    public let short: Character?
    /// The placeholder of the option's value (`N`, `FILE`), or nil for a flag.
    public let value: String?
    /// One line of help.
    public let help: String
    /// Whether the option may be given more than once (values accumulate).
    public let repeatable: Bool

    /// Creates an option.
    public init(_ long: String, short: Character? = nil, value: String? = nil, repeatable: Bool = false, help: String) {
        self.long = long
        self.short = short
        self.value = value
        self.help = help
        self.repeatable = repeatable
    }

    /// `-c, --concurrency N` as shown in help.
    public var signature: String {
        var text = short.map { "-\($0), " } ?? "    "
        text += "--\(long)"
        if let value { text += " \(value)" }
        return text
    }

    /// `--help`, present in every tool.
    public static let help = OptionSpec("help", short: "h", help: "print this help and exit")
    /// `--version`, present in every tool.
    public static let version = OptionSpec("version", short: "V", help: "print the version and exit")
}

/// The command-line interface of one tool (or one subcommand): drives parsing and help.
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
    /// Example command lines for `--help` (the man page carries the same ones, run by a test).
    public let examples: [String]
    /// The exit statuses that apply, with their meaning for this tool.
    public let exitStatuses: [(ExitStatus, String)]
    /// Related man pages.
    public let seeAlso: [String]

    /// Creates a command description.
    public init(name: String, summary: String, usage: [String], description: String, options: [OptionSpec],
                examples: [String] = [], exitStatuses: [(ExitStatus, String)], seeAlso: [String] = []) {
        self.name = name
        self.summary = summary
        self.usage = usage
        self.description = description
        self.options = options
        self.examples = examples
        self.exitStatuses = exitStatuses
        self.seeAlso = seeAlso
    }

    /// The tool's options plus `--help` and `--version`.
    public var allOptions: [OptionSpec] { options + [.help, .version] }
}
