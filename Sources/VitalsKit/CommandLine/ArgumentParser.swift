/// A command-line mistake: exit 64 with the message and `Try 'tool --help'`.
public struct UsageError: Error, Equatable, CustomStringConvertible {
    /// What was wrong, in words that say what to do.
    public let message: String
    /// Creates a usage error.
    public init(_ message: String) { self.message = message }
    /// The message.
    public var description: String { message }
}

/// The raw result of parsing: option values by long name, and operands, not yet validated.
public struct ParsedOptions: Sendable {
    /// Values by long option name; a flag has one empty value per occurrence.
    public private(set) var values: [String: [String]] = [:]
    /// Arguments that are not options (files), in order; the subcommand's name is not among them.
    public internal(set) var operands: [String] = []
    /// The subcommand, for a tool that has them (resolved from the first operand, or the default).
    public internal(set) var subcommand: String?
    /// The subcommand's action (`approve` for `agents approve ID`), by its name even when an alias was
    /// typed; its word is not among the operands.
    public internal(set) var action: String?
    /// The option table parsed against, by long name: where defaults and ranges come from.
    var table: [String: OptionSpec] = [:]
    /// The words the subcommand (or its action) accepts for options whose choices depend on it, default first.
    var runChoices: [String: [String]] = [:]

    /// Creates an empty result (or one with given values, for tests).
    public init(values: [String: [String]] = [:], operands: [String] = [], options: [OptionSpec] = []) {
        self.values = values
        self.operands = operands
        for option in options { table[option.long] = option }
    }

    mutating func add(_ long: String, _ value: String) { values[long, default: []].append(value) }
    mutating func addOperand(_ operand: String) { operands.append(operand) }

    /// Whether the option was given.
    public func has(_ long: String) -> Bool { values[long] != nil }
    /// The last value given for the option.
    public func value(_ long: String) -> String? { values[long]?.last }
    /// The last value given, or the option table's default.
    public func valueOrDefault(_ long: String) -> String? { values[long]?.last ?? table[long]?.defaultValue }

    /// The table's default of an option the code reads with a typed accessor; a missing one is a bug in the table.
    private func tableDefault(_ long: String) -> String {
        guard let text = table[long]?.defaultValue else { preconditionFailure("--\(long) has no default in the option table") }
        return text
    }

    /// An integer option within `range`; absent, the option table's default.
    public func integer(_ long: String, in range: ClosedRange<Int>) throws(UsageError) -> Int {
        guard let fallback = Int(tableDefault(long)) else { preconditionFailure("--\(long)'s default is not a whole number") }
        return try integer(long, default: fallback, in: range)
    }

    /// A number option within `range`; absent, the option table's default.
    public func number(_ long: String, in range: ClosedRange<Double>) throws(UsageError) -> Double {
        guard let fallback = Double(tableDefault(long)) else { preconditionFailure("--\(long)'s default is not a number") }
        return try self.number(long, default: fallback, in: range)
    }

    /// One of the listed words; absent, the option table's default.
    public func choice(_ long: String, of choices: [String]) throws(UsageError) -> String {
        try choice(long, of: choices, default: tableDefault(long))
    }

    /// One of the words the table declares for the option where it runs: the subcommand's (or action's)
    /// own words with their default, else the option's; absent, that default.
    public func choice(_ long: String) throws(UsageError) -> String {
        if let words = runChoices[long], let first = words.first { return try choice(long, of: words, default: first) }
        guard let choices = table[long]?.choices, !choices.isEmpty else {
            preconditionFailure("--\(long) declares no choices in the option table")
        }
        return try choice(long, of: choices, default: tableDefault(long))
    }

    /// A duration option in milliseconds, within the table's range; absent, the table's default (nil when it has none).
    public func duration(_ long: String) throws(UsageError) -> Int64? {
        let given = value(long)
        guard let text = given ?? table[long]?.defaultValue else { return nil }
        let range = table[long]?.durationRange ?? 0...Int64.max
        guard let ms = DurationText.parseMilliseconds(text) else {
            throw UsageError("--\(long) wants a duration such as 500ms, 30s, 5m, 24h or 7d, not '\(text)'")
        }
        guard range.contains(ms) else {
            let upper = range.upperBound >= Int64.max / 4 ? "" : " to \(DurationText.describe(milliseconds: range.upperBound))"
            throw UsageError(
                "--\(long) wants a duration from \(DurationText.describe(milliseconds: range.lowerBound))\(upper), not '\(text)'")
        }
        return ms
    }

    /// A duration option whose table entry has a default, in milliseconds.
    public func duration(defaulted long: String) throws(UsageError) -> Int64 {
        guard let ms = try duration(long) else { preconditionFailure("--\(long) declares no default in the option table") }
        return ms
    }

    /// A choice option as the tool's own enumeration of its words (`choice(_:)`'s word): the table and
    /// the enumeration name the same words, so a word without a case is a bug in the tool.
    public func choice<Choice: RawRepresentable>(_ long: String, as _: Choice.Type) throws(UsageError) -> Choice
    where Choice.RawValue == String {
        let word = try choice(long)
        guard let value = Choice(rawValue: word) else { preconditionFailure("--\(long) \(word) has no case in \(Choice.self)") }
        return value
    }

    /// `--now`: an RFC 3339 time (or `now`, the clock) in milliseconds, or nil when absent.
    public func now() throws(UsageError) -> Int64? {
        guard let text = value("now") else { return nil }
        if text == "now" { return Clock.wallMilliseconds() }
        guard let time = Timestamp.parse(text) else {
            throw UsageError("--now wants an RFC 3339 time such as 2026-01-27T10:30:00Z, or 'now', not '\(text)'")
        }
        return time
    }

    /// A `WHEN` option: an RFC 3339 time, or a duration before `now` (`--since 2h`); nil when absent.
    public func time(_ long: String, now: Int64) throws(UsageError) -> Int64? {
        guard let text = value(long) else { return nil }
        if let time = Timestamp.parse(text) { return time }
        if let ago = DurationText.parseMilliseconds(text) { return now - ago }
        throw UsageError("--\(long) wants an RFC 3339 time such as 2026-01-27T10:30:00Z or a duration ago such as 24h, not '\(text)'")
    }
    /// The subcommand as the tool's own enumeration of them, for a `switch` without a `default:`.
    /// The table and the enumeration name the same words (each tool's tests hold them to it), so a
    /// word without a case is a bug in the tool.
    public func subcommand<Choice: RawRepresentable>(as _: Choice.Type) -> Choice where Choice.RawValue == String {
        guard let name = subcommand, let choice = Choice(rawValue: name) else {
            preconditionFailure("the subcommand \(subcommand ?? "(none)") has no case in \(Choice.self)")
        }
        return choice
    }

    /// The action as the tool's own enumeration of a subcommand's actions, or nil when none was given
    /// (a subcommand that also runs without one).
    public func action<Choice: RawRepresentable>(as _: Choice.Type) -> Choice? where Choice.RawValue == String {
        guard let name = action else { return nil }
        guard let choice = Choice(rawValue: name) else { preconditionFailure("the action \(name) has no case in \(Choice.self)") }
        return choice
    }

    /// The action of a subcommand that requires one (the parser made sure one was given).
    public func requiredAction<Choice: RawRepresentable>(as type: Choice.Type) -> Choice where Choice.RawValue == String {
        guard let choice = action(as: type) else { preconditionFailure("the subcommand \(subcommand ?? "(none)") ran without an action") }
        return choice
    }

    /// Every value given for a repeatable option, in order.
    public func all(_ long: String) -> [String] { values[long] ?? [] }

    /// An integer option within `range`, or `defaultValue` when absent.
    public func integer(_ long: String, default defaultValue: Int, in range: ClosedRange<Int>) throws(UsageError) -> Int {
        guard let text = value(long) else { return defaultValue }
        guard let number = Int(text), range.contains(number) else {
            throw UsageError("--\(long) wants a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
        }
        return number
    }

    /// A non-negative number option, or `defaultValue` when absent.
    public func number(_ long: String, default defaultValue: Double, in range: ClosedRange<Double>) throws(UsageError) -> Double {
        guard let text = value(long) else { return defaultValue }
        guard let number = Double(text), number.isFinite, range.contains(number) else {
            throw UsageError(
                "--\(long) wants a number from \(formatPlain(range.lowerBound)) to \(formatPlain(range.upperBound)), not '\(text)'")
        }
        return number
    }

    /// A duration option (`30s`, `5m`, `24h`, `7d`, `250ms`) in milliseconds, or `defaultValue`.
    public func duration(_ long: String, default defaultValue: Int64?) throws(UsageError) -> Int64? {
        guard let text = value(long) else { return defaultValue }
        guard let ms = DurationText.parseMilliseconds(text) else {
            throw UsageError("--\(long) wants a duration such as 500ms, 30s, 5m, 24h or 7d, not '\(text)'")
        }
        return ms
    }

    /// A size option (`1048576`, `512K`, `1M`, `2G`; K = 1024) in bytes, or `defaultValue`.
    public func size(_ long: String, default defaultValue: Int) throws(UsageError) -> Int {
        guard let text = value(long) else { return defaultValue }
        guard let bytes = SizeText.parseBytes(text) else {
            throw UsageError("--\(long) wants a size such as 65536, 512K or 1M, not '\(text)'")
        }
        return bytes
    }

    /// One of the listed words, or `defaultValue` when absent.
    public func choice(_ long: String, of choices: [String], default defaultValue: String) throws(UsageError) -> String {
        // What a subcommand accepts is among what the table declares (and completions offer).
        assert(
            table[long].map { $0.choices.isEmpty || Set(choices).isSubset(of: $0.choices) } ?? true,
            "--\(long) accepts \(choices), beyond its table's choices")
        guard let text = value(long) else { return defaultValue }
        guard choices.contains(text) else {
            throw UsageError("--\(long) wants one of \(choices.joined(separator: ", ")), not '\(text)'")
        }
        return text
    }
}

private func formatPlain(_ value: Double) -> String {
    value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
}

/// Parses arguments against a `CommandSpec`: GNU-style long options (`--name value`,
/// `--name=value`), short options (`-c 8`, `-c8`, `-qs`), `--` to end options, `-` as an operand.
public enum ArgumentParser {
    /// Parses `arguments` (without the program name).
    public static func parse(_ arguments: [String], spec: CommandSpec) throws(UsageError) -> ParsedOptions {
        let options = spec.allOptions
        var result = ParsedOptions(options: options)
        var index = 0
        var onlyOperands = false
        // Every spelling: the long names, then the aliases (with the value an alias may stand for).
        let spellings: [(name: String, option: OptionSpec, meaning: String?)] =
            options.map { ($0.long, $0, nil) }
            + options.flatMap { option in option.aliases.map { ($0.name, option, $0.meaning) } }
        func lookupLong(_ name: String) throws(UsageError) -> (option: OptionSpec, meaning: String?) {
            if let exact = spellings.first(where: { $0.name == name }) { return (exact.option, exact.meaning) }
            let prefixed = spellings.filter { $0.name.hasPrefix(name) }
            if prefixed.count == 1
                || (prefixed.count > 1 && prefixed.allSatisfy({ $0.option == prefixed[0].option && $0.meaning == prefixed[0].meaning }))
            {
                return (prefixed[0].option, prefixed[0].meaning)
            }
            if prefixed.count > 1 {
                throw UsageError("option '--\(name)' is ambiguous: " + prefixed.map { "--\($0.name)" }.joined(separator: ", "))
            }
            let suggestion = closest(name, among: spellings.map(\.name)).map { " (did you mean '--\($0)'?)" } ?? ""
            throw UsageError("unknown option '--\(name)'\(suggestion)")
        }
        func record(_ option: OptionSpec, _ value: String) throws(UsageError) {
            if !option.repeatable, result.has(option.long), option.value == nil {
                return  // a repeated flag is harmless
            }
            result.add(option.long, value)
        }
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if onlyOperands || argument == "-" || !argument.hasPrefix("-") {
                result.addOperand(argument)
                continue
            }
            if argument == "--" {
                onlyOperands = true
                continue
            }
            if argument.hasPrefix("--") {
                let body = argument.dropFirst(2)
                let name: String
                var inlineValue: String?
                if let equals = body.firstIndex(of: "=") {
                    name = String(body[..<equals])
                    inlineValue = String(body[body.index(after: equals)...])
                } else {
                    name = String(body)
                }
                let (option, meaning) = try lookupLong(name)
                if let meaning {
                    if inlineValue != nil { throw UsageError("option '--\(name)' takes no value") }
                    try record(option, meaning)
                } else if let placeholder = option.value {
                    if let inlineValue {
                        try record(option, inlineValue)
                    } else if index < arguments.count {
                        try record(option, arguments[index])
                        index += 1
                    } else {
                        throw UsageError("option '--\(option.long)' needs a value (\(placeholder))")
                    }
                } else {
                    if inlineValue != nil { throw UsageError("option '--\(option.long)' takes no value") }
                    try record(option, "")
                }
                continue
            }
            // One or more short options: -q, -qs, -c8, -c 8.
            var letters = Substring(argument.dropFirst())
            while let letter = letters.first {
                letters = letters.dropFirst()
                guard let option = options.first(where: { $0.short == letter }) else {
                    throw UsageError("unknown option '-\(letter)'")
                }
                if let placeholder = option.value {
                    if !letters.isEmpty {
                        try record(option, String(letters))
                    } else if index < arguments.count {
                        try record(option, arguments[index])
                        index += 1
                    } else {
                        throw UsageError("option '-\(letter)' needs a value (\(placeholder))")
                    }
                    break
                }
                try record(option, "")
            }
        }
        let lenient = result.has("help") || result.has("version")
        if !spec.subcommands.isEmpty {
            try resolveSubcommand(&result, spec: spec, lenient: lenient)
        }
        // A word the table does not list for where the option runs is refused before the tool starts.
        for option in spec.options where !lenient && result.has(option.long) {
            guard let words = result.runChoices[option.long] ?? (option.choices.isEmpty ? nil : option.choices) else { continue }
            _ = try result.choice(option.long, of: words, default: words[0])
        }
        return result
    }

    /// Takes the subcommand from the first operand (or the default) and checks its options and operand count.
    /// With `lenient` (for `--help`), only a first operand that names a subcommand is taken, and nothing is checked.
    static func resolveSubcommand(_ result: inout ParsedOptions, spec: CommandSpec, lenient: Bool) throws(UsageError) {
        let subcommand: SubcommandSpec
        if let first = result.operands.first, let named = spec.subcommand(first) {
            subcommand = named
            result.operands.removeFirst()
        } else if lenient {
            return
        } else if let name = spec.defaultSubcommand, let fallback = spec.subcommand(name) {
            subcommand = fallback
        } else if let first = result.operands.first {
            let near = closest(first, among: spec.subcommands.map(\.name)).map { " (did you mean '\($0)'?)" } ?? ""
            throw UsageError("unknown subcommand '\(first)'\(near)")
        } else {
            throw UsageError("name a subcommand: " + spec.subcommands.map(\.name).joined(separator: ", "))
        }
        result.subcommand = subcommand.name
        var action: SubcommandAction?
        if !subcommand.actions.isEmpty {
            if let first = result.operands.first, let named = subcommand.action(first) {
                action = named
                result.action = named.name
                result.operands.removeFirst()
            } else if lenient {
                return
            } else if let first = result.operands.first {
                let near =
                    closest(first, among: subcommand.actions.flatMap { [$0.name] + $0.aliases }).map { " (did you mean '\($0)'?)" } ?? ""
                throw UsageError("unknown \(subcommand.name) action '\(first)'\(near); \(subcommand.name) takes \(subcommand.operandNames)")
            } else if subcommand.requiresAction {
                throw UsageError("\(subcommand.name) wants an action: \(subcommand.operandNames)")
            }
        }
        if lenient { return }
        for option in spec.options {
            if let words = subcommand.choices(option.long, action: action) { result.runChoices[option.long] = words }
        }
        let applying = action?.options ?? subcommand.options
        for option in spec.options where result.has(option.long) && !spec.isGlobal(option.long) && !applying.contains(option.long) {
            throw UsageError(
                "--\(option.long) does not apply to \(subcommand.label(action)); it applies to \(spec.owners(of: option.long).joined(separator: ", "))"
            )
        }
        let count = result.operands.count
        let operands = action?.operands ?? subcommand.operands
        if !operands.contains(count) {
            let names = action?.operandNames ?? subcommand.operandNames
            let wanted = names.isEmpty ? "no operands" : names
            throw UsageError(
                "\(subcommand.label(action)) wants \(wanted)"
                    + (count > operands.upperBound
                        ? ", not '\(result.operands[operands.upperBound])'" : ", not \(count == 0 ? "none" : "only \(count)")"))
        }
    }

    /// The candidate nearest to `word` by edit distance, if it is plausibly a typo.
    public static func closest(_ word: String, among candidates: [String]) -> String? {
        var best: (String, Int)?
        for candidate in candidates {
            let distance = editDistance(Array(word.utf8), Array(candidate.utf8))
            if distance <= max(2, word.count / 3), best == nil || distance < best!.1 {
                best = (candidate, distance)
            }
        }
        return best?.0
    }

    /// Levenshtein distance between two byte strings.
    public static func editDistance(_ a: [UInt8], _ b: [UInt8]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
