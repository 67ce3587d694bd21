import FixtureServer
import Foundation
import Testing
import VitalsKit

@testable import DetectAnomalyCore
@testable import DigestCore
@testable import HealthSyncCore
@testable import NotifyCore
@testable import ProbeHTTPCore
@testable import ProbePingCore
@testable import SnapshotDeltaCore
@testable import StoreSamplesCore

/// The tools whose man pages are held to their `--help`.
let documentedTools = ["probe-http", "probe-ping", "detect-anomaly", "store-samples", "digest", "notify", "snapshot-delta", "healthsync"]
/// Their command tables.
let documentedSpecs = [
    ProbeHTTPCommand.spec, ProbePingCommand.spec, DetectAnomalyCommand.spec, StoreSamplesCommand.spec, DigestCommand.spec,
    NotifyCommand.spec, SnapshotDeltaCommand.spec, HealthSyncCommand.spec,
]

/// An option as written in help or a man page: long name, short letter, value placeholder.
struct DocumentedOption: Hashable, CustomStringConvertible {
    var long: String
    var short: String?
    var value: String?
    var description: String { (short.map { "-\($0), " } ?? "") + "--\(long)" + (value.map { " \($0)" } ?? "") }
}

/// The text of one section (`.SH NAME` up to the next `.SH`) of a man page.
func manSection(_ page: String, _ name: String) -> [String] {
    var lines: [String] = []
    var inside = false
    for line in page.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
        if line.hasPrefix(".SH ") {
            inside = line.dropFirst(4).trimmingCharacters(in: CharacterSet(charactersIn: "\" ")) == name
            continue
        }
        if inside { lines.append(line) }
    }
    return lines
}

func readPage(_ relative: String) throws -> String {
    try String(contentsOf: Binaries.repositoryRoot.appendingPathComponent(relative), encoding: .utf8)
}

/// Removes roff font escapes and unescapes hyphens: `\fB\-\-max\-body\fR` → `--max-body`.
func plainRoff(_ text: String) -> String {
    var out = text.replacingOccurrences(of: "\\-", with: "-")
    for font in ["\\fB", "\\fI", "\\fR", "\\fP"] { out = out.replacingOccurrences(of: font, with: "") }
    return out
}

/// The words set in bold in a section (`.B`, `.BR`, `.RB`, `.BI`, `.IB` macro lines):
/// how the pages name fields, reasons and values.
func boldWords(_ lines: [String]) -> Set<String> {
    var words: Set<String> = []
    for line in lines where [".B ", ".BR ", ".RB ", ".BI ", ".IB "].contains(where: { line.hasPrefix($0) }) {
        let body = plainRoff(String(line.drop(while: { $0 != " " })))
        for token in body.split(whereSeparator: { $0 == " " || $0 == "\"" }) {
            let word = token.trimmingCharacters(in: CharacterSet(charactersIn: "(),.;:"))
            if !word.isEmpty { words.insert(word) }
        }
    }
    return words
}

/// Options listed in a man page's OPTIONS section (`.TP` then `\fB\-x\fR, \fB\-\-name\fR \fIVALUE\fR`).
func manOptions(_ page: String) -> Set<DocumentedOption> {
    let lines = manSection(page, "OPTIONS")
    var options: Set<DocumentedOption> = []
    for (index, line) in lines.enumerated() where line == ".TP" && index + 1 < lines.count {
        options.insert(parseOptionSignature(plainRoff(lines[index + 1])))
    }
    return options
}

/// Options listed in `--help` (`  -c, --concurrency N   text`).
func helpOptions(_ help: String) -> Set<DocumentedOption> {
    var options: Set<DocumentedOption> = []
    var inside = false
    for line in help.split(separator: "\n").map(String.init) {
        if line == "Options:" {
            inside = true
            continue
        }
        if inside && !line.hasPrefix(" ") { break }
        guard inside else { continue }
        // A signature starts at column 2; a wrapped help line (which may name an alias) is indented further.
        guard line.hasPrefix("  -") || line.hasPrefix("      --") else { continue }
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        let signature = trimmed.components(separatedBy: "  ").first ?? trimmed
        options.insert(parseOptionSignature(signature))
    }
    return options
}

func parseOptionSignature(_ text: String) -> DocumentedOption {
    var short: String?
    var long = ""
    var value: String?
    for token in text.replacingOccurrences(of: ",", with: " ").split(separator: " ").map(String.init) {
        if token.hasPrefix("--") {
            long = String(token.dropFirst(2))
        } else if token.hasPrefix("-") {
            short = String(token.dropFirst())
        } else if !long.isEmpty {
            value = token
        }
    }
    return DocumentedOption(long: long, short: short, value: value)
}

@Suite("man pages and help agree", .hangGuard(minutes: 2))
struct DocumentationTests {
    @Test("every option in --help is in the man page, with the same short form and value, and no other", arguments: documentedTools)
    func optionsMatch(tool: String) throws {
        let help = try run(tool, ["--help"])
        #expect(help.status == 0)
        let fromHelp = helpOptions(help.stdout)
        let fromMan = manOptions(try readPage("man/man1/\(tool).1"))
        #expect(fromHelp.count > 2)
        #expect(fromHelp.subtracting(fromMan).isEmpty, "in --help, not in \(tool)(1): \(fromHelp.subtracting(fromMan))")
        #expect(fromMan.subtracting(fromHelp).isEmpty, "in \(tool)(1), not in --help: \(fromMan.subtracting(fromHelp))")
    }

    @Test("the exit statuses in --help are the man page's, and every one is in vitals(7)", arguments: documentedTools)
    func exitStatuses(tool: String) throws {
        let help = try run(tool, ["--help"]).stdout
        let helpCodes = Set(
            help.components(separatedBy: "Exit status:\n").last!.split(separator: "\n")
                .compactMap { Int($0.trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") })
        func pageCodes(_ page: String) -> Set<Int> {
            let lines = manSection(page, "EXIT STATUS")
            return Set(
                lines.enumerated().compactMap { index, line in
                    line == ".TP" && index + 1 < lines.count ? Int(lines[index + 1].replacingOccurrences(of: ".B ", with: "")) : nil
                })
        }
        let manCodes = pageCodes(try readPage("man/man1/\(tool).1"))
        #expect(helpCodes == manCodes)
        let suiteCodes = pageCodes(try readPage("man/man7/vitals.7"))
        #expect(Set(VitalsKit.ExitStatus.allCases.map { Int($0.rawValue) }) == suiteCodes)
        #expect(manCodes.isSubset(of: suiteCodes))
    }

    @Test("every reason and status is documented in vitals-records(7), and probe-http's reasons in probe-http(1)")
    func reasons() throws {
        let records = boldWords(manSection(try readPage("man/man7/vitals-records.7"), "SAMPLE"))
        let status = boldWords(manSection(try readPage("man/man1/probe-http.1"), "STATUS"))
        for reason in SampleReason.allCases {
            #expect(records.contains(reason.rawValue), "\(reason.rawValue) missing from vitals-records(7)")
            if ![.permission, .loss].contains(reason) {
                #expect(status.contains(reason.rawValue), "\(reason.rawValue) missing from probe-http(1) STATUS")
            }
        }
        for value in SampleStatus.allCases {
            #expect(records.contains(value.rawValue), "\(value.rawValue) missing from vitals-records(7)")
        }
        // The reasons probe-ping writes: its own, and those of the TCP and TLS checks it shares with probe-http.
        let pingStatus = boldWords(manSection(try readPage("man/man1/probe-ping.1"), "STATUS"))
        let pingReasons: [SampleReason] = [.permission, .dns, .connect, .timeout, .loss, .latency, .reset, .tls, .protocol, .certExpiry]
        for reason in pingReasons {
            #expect(pingStatus.contains(reason.rawValue), "\(reason.rawValue) missing from probe-ping(1) STATUS")
        }
    }

    @Test("every field probe-ping writes is documented in vitals-records(7) and probe-ping(1)")
    func pingSampleFields() throws {
        guard try requireGate(runningAsRoot, "raw ICMP sockets need root") else { return }
        let server = try FixtureServer()
        let certificates = try TestCertificates()
        let (cert, key) = try certificates.selfSigned(named: "fields", daysLeft: 40)
        let tls = try TLSServer(cert: cert, key: key)
        let tlsHostPort = tls.url.replacingOccurrences(of: "https://", with: "")
        let input = """
            {"target":"127.0.0.1","team":"ops"}
            {"target":"localhost","ip":"4"}
            tcp://127.0.0.1:\(server.port)
            {"target":"tcp://\(tlsHostPort)","tls":true}
            """
        let result = try run("probe-ping", ["--count", "1"], stdin: input)
        var keys = Set<String>()
        for record in try result.records() { keys.formUnion(record.fields.map(\.key)) }
        keys.remove("team")
        #expect(
            keys.isSuperset(of: ["ip", "tls_ms", "tls_expiry_days", "rtt_mdev_ms", "dns_ms", "interface", "link"]),
            "the run covers every optional field")
        #expect(keys.isSubset(of: PingSampleRecord.ownFields))
        let records = boldWords(manSection(try readPage("man/man7/vitals-records.7"), "SAMPLE"))
        let output = boldWords(manSection(try readPage("man/man1/probe-ping.1"), "OUTPUT"))
        for key in keys.sorted() {
            #expect(records.contains(key), "\(key) is not documented in vitals-records(7)")
            #expect(output.contains(key), "\(key) is not listed in probe-ping(1) OUTPUT")
        }
    }

    @Test("every field probe-http writes is documented in vitals-records(7) and probe-http(1)")
    func sampleFields() throws {
        let server = try FixtureServer()
        let base = server.baseURL
        let input = """
            {"url":"\(base)/ok","team":"ops"}
            {"url":"\(base)/bytes/2000","speed_test_bytes":1000}
            {"url":"\(base)/body?size=3000000&needle=x","expected_content":"x"}
            {"url":"\(base)/ok","ip":"4"}
            https://127.0.0.1:\(server.port)/ok
            """
        let result = try run("probe-http", ["--simulate-latency", "1"], stdin: input)
        let connectivity = try run("probe-http", ["--connectivity", "\(base)/content?text=Success", "--speed-url", "\(base)/bytes/1000"])
        var keys = Set<String>()
        for record in try result.records() + connectivity.records() { keys.formUnion(record.fields.map(\.key)) }
        keys.remove("team")
        #expect(
            keys.isSuperset(of: ["tls_expiry_days", "speed_mbps", "truncated", "simulated", "ip", "interface", "link", "online"]),
            "the run covers every optional field")
        let records = boldWords(manSection(try readPage("man/man7/vitals-records.7"), "SAMPLE"))
        let output = boldWords(manSection(try readPage("man/man1/probe-http.1"), "OUTPUT"))
        for key in keys.sorted() {
            #expect(records.contains(key), "\(key) is not documented in vitals-records(7)")
            #expect(output.contains(key), "\(key) is not listed in probe-http(1) OUTPUT")
        }
    }

    @Test("every target field each probe reads is documented in its INPUT section and vitals-records(7)")
    func targetFields() throws {
        let input = boldWords(manSection(try readPage("man/man1/probe-http.1"), "INPUT"))
        for field in TargetParser.knownFields.subtracting(["type"]).sorted() {
            #expect(input.contains(field), "\(field) is not in probe-http(1) INPUT")
        }
        let records = boldWords(manSection(try readPage("man/man7/vitals-records.7"), "TARGET"))
        for field in TargetParser.knownFields.sorted() {
            #expect(records.contains(field), "\(field) is not in vitals-records(7) TARGET")
        }
        let pingInput = boldWords(manSection(try readPage("man/man1/probe-ping.1"), "INPUT"))
        for field in PingTargetParser.knownFields.sorted() {
            #expect(pingInput.contains(field), "\(field) is not in probe-ping(1) INPUT")
            #expect(records.contains(field), "\(field) is not in vitals-records(7) TARGET")
        }
    }

    @Test(
        "the option table, --help and the man page list the same options",
        arguments: documentedSpecs)
    func optionTable(spec: CommandSpec) throws {
        let fromTable = Set(spec.allOptions.map { DocumentedOption(long: $0.long, short: $0.short.map(String.init), value: $0.value) })
        #expect(fromTable == manOptions(try readPage("man/man1/\(spec.name).1")))
        #expect(fromTable == helpOptions(Help.render(spec)))
    }
}

/// The words of a text: runs of letters, digits and hyphens (`json`, `apple-health`, `4`).
func words(_ text: String) -> Set<String> {
    Set(text.split(whereSeparator: { !($0.isLetter || $0.isNumber || $0 == "-") }).map(String.init))
}

@Suite("subcommands' actions and options' choices are in help and man pages", .hangGuard(minutes: 2))
struct ActionAndChoiceDocumentationTests {
    @Test(
        "every action of a subcommand is in its --help line and in the man page's SYNOPSIS, with its operands",
        arguments: documentedSpecs)
    func actions(spec: CommandSpec) throws {
        // The SYNOPSIS's words, without the macro names (.B, .RI, ...) that start its lines.
        let synopsis = words(
            manSection(try readPage("man/man1/\(spec.name).1"), "SYNOPSIS")
                .map { plainRoff($0.hasPrefix(".") ? String($0.drop { $0 != " " }) : $0) }.joined(separator: " "))
        let help = Help.render(spec)
        for subcommand in spec.subcommands where !subcommand.actions.isEmpty {
            let line = try #require(
                help.split(separator: "\n").first { $0.hasPrefix("  \(subcommand.name) ") }, "\(subcommand.name) in --help")
            for action in subcommand.actions {
                #expect(
                    words(String(line)).contains(action.name), "\(spec.name) \(subcommand.name) \(action.name) is not in --help: \(line)")
                #expect(synopsis.contains(action.name), "\(spec.name) \(subcommand.name) \(action.name) is not in \(spec.name)(1) SYNOPSIS")
                for operand in words(action.operandNames) {
                    #expect(words(String(line)).contains(operand) && synopsis.contains(operand), "\(action.name) \(operand)")
                }
            }
        }
    }

    @Test(
        "where a subcommand narrows an option's choices, its words are the option's, and the help line and man page entry name it",
        arguments: documentedSpecs)
    func narrowedChoices(spec: CommandSpec) throws {
        let entries = manOptionEntries(try readPage("man/man1/\(spec.name).1"))
        let runs = spec.subcommands.flatMap { subcommand in
            [(subcommand.name, subcommand.choices)] + subcommand.actions.map { (subcommand.label($0), $0.choices) }
        }
        for (name, choices) in runs {
            for (long, accepted) in choices {
                let option = try #require(
                    spec.options.first { $0.long == long }, "\(spec.name) \(name) narrows --\(long), which it does not have")
                #expect(
                    !accepted.isEmpty && Set(accepted).isSubset(of: option.choices),
                    "\(spec.name) \(name): \(accepted) beyond --\(long)'s \(option.choices)")
                // The subcommand (cert for cert server) is named where the option says what it takes there.
                let subcommand = String(name.split(separator: " ")[0])
                #expect(words(option.help.lowercased()).contains(subcommand), "--\(long)'s help does not say what \(subcommand) takes")
                #expect(
                    words((entries[long] ?? "").lowercased()).contains(subcommand),
                    "\(spec.name)(1) --\(long) does not say what \(subcommand) takes")
            }
        }
    }

    @Test("every other word of an action is in the man page and in the subcommand's --help", arguments: documentedSpecs)
    func actionAliases(spec: CommandSpec) throws {
        // Set in bold, as the pages set every word a user types.
        let page = boldWords(try readPage("man/man1/\(spec.name).1").split(separator: "\n").map(String.init))
        for subcommand in spec.subcommands {
            let help = words(Help.render(spec, subcommand: subcommand.name))
            for action in subcommand.actions {
                for alias in action.aliases {
                    #expect(page.contains(alias), "\(spec.name) \(subcommand.name) \(alias) (for \(action.name)) is not in \(spec.name)(1)")
                    #expect(help.contains(alias), "\(spec.name) \(subcommand.name) \(alias) is not in \(subcommand.name) --help")
                }
            }
        }
    }

    @Test("an option that only some actions take says which, in its help line and its man page entry", arguments: documentedSpecs)
    func actionOptions(spec: CommandSpec) throws {
        let entries = manOptionEntries(try readPage("man/man1/\(spec.name).1"))
        for subcommand in spec.subcommands {
            for action in subcommand.actions {
                for long in action.options where !spec.isGlobal(long) && !subcommand.options.contains(long) {
                    // Taken by every action of the subcommand, the subcommand's name says it; else the action's too.
                    let every = subcommand.actions.allSatisfy { $0.options.contains(long) }
                    let scope = every ? subcommand.name : subcommand.label(action)
                    let option = try #require(spec.options.first { $0.long == long })
                    #expect(option.help.lowercased().contains(scope), "--\(long)'s help does not say it is for \(scope): \(option.help)")
                    #expect((entries[long] ?? "").lowercased().contains(scope), "\(spec.name)(1) --\(long) does not say it is for \(scope)")
                }
            }
        }
    }

    @Test("each tool's dispatch enumerates exactly its table's subcommands and actions")
    func dispatchMatchesTable() {
        func names(_ spec: CommandSpec) -> Set<String> { Set(spec.subcommands.map(\.name)) }
        func actions(_ spec: CommandSpec, _ subcommand: String) -> Set<String> {
            Set(spec.subcommand(subcommand)?.actions.map(\.name) ?? [])
        }
        #expect(names(StoreSamplesCommand.spec) == Set(StoreSamplesCommand.Subcommand.allCases.map(\.rawValue)))
        #expect(actions(StoreSamplesCommand.spec, "agents") == Set(StoreSamplesCommand.AgentAction.allCases.map(\.rawValue)))
        #expect(names(NotifyCommand.spec) == Set(NotifyCommand.Subcommand.allCases.map(\.rawValue)))
        #expect(actions(NotifyCommand.spec, "devices") == Set(NotifyCommand.DeviceAction.allCases.map(\.rawValue)))
        #expect(actions(NotifyCommand.spec, "mute") == Set(NotifyCommand.MuteAction.allCases.map(\.rawValue)))
        #expect(names(SnapshotDeltaCommand.spec) == Set(SnapshotDeltaCommand.Subcommand.allCases.map(\.rawValue)))
        #expect(actions(SnapshotDeltaCommand.spec, "anomalies") == Set(SnapshotDeltaCommand.AnomalyAction.allCases.map(\.rawValue)))
        #expect(actions(SnapshotDeltaCommand.spec, "cert") == Set(SnapshotDeltaCommand.CertKind.allCases.map(\.rawValue)))
        #expect(names(HealthSyncCommand.spec) == Set(HealthSyncCommand.Subcommand.allCases.map(\.rawValue)))
        #expect(names(DetectAnomalyCommand.spec) == Set(DetectAnomalyCommand.Subcommand.allCases.map(\.rawValue)))
        #expect(actions(DetectAnomalyCommand.spec, "feedback") == Set(DetectAnomalyCommand.FeedbackAction.allCases.map(\.rawValue)))
        // Every subcommand with actions has its enumeration above.
        let covered = [
            "store-samples agents", "notify devices", "notify mute", "snapshot-delta anomalies", "snapshot-delta cert",
            "detect-anomaly feedback",
        ]
        let withActions = documentedSpecs.flatMap { spec in
            spec.subcommands.filter { !$0.actions.isEmpty }.map { "\(spec.name) \($0.name)" }
        }
        #expect(Set(withActions) == Set(covered))
    }

    @Test(
        "every fixed choice of an option is named in its help line and its man page entry",
        arguments: documentedSpecs)
    func choices(spec: CommandSpec) throws {
        let entries = manOptionEntries(try readPage("man/man1/\(spec.name).1"))
        let help = Help.render(spec, width: 10_000)
        for option in spec.allOptions where !option.choices.isEmpty {
            let helpLine = try #require(
                help.split(separator: "\n").first { $0.contains("--\(option.long) ") }, "--\(option.long) in --help")
            for choice in option.choices {
                #expect(words(String(helpLine)).contains(choice), "--\(option.long)'s help does not name \(choice): \(helpLine)")
                #expect(words(entries[option.long] ?? "").contains(choice), "\(spec.name)(1) --\(option.long) does not name \(choice)")
            }
        }
    }
}

/// Each option's entry in a man page's OPTIONS section: its long name and its text (roff removed, lines joined).
func manOptionEntries(_ page: String) -> [String: String] {
    let lines = manSection(page, "OPTIONS")
    var entries: [String: String] = [:]
    var current: String?
    var index = 0
    while index < lines.count {
        if lines[index] == ".TP", index + 1 < lines.count {
            current = parseOptionSignature(plainRoff(lines[index + 1])).long
            entries[current!] = ""
            index += 2
            continue
        }
        if let name = current {
            let words = plainRoff(lines[index]).split(separator: " ").filter { !$0.hasPrefix(".") }.joined(separator: " ")
            entries[name, default: ""] += " " + words.replacingOccurrences(of: "\"", with: "")
        }
        index += 1
    }
    return entries
}

// A hang guard, not a speed goal (see HangGuard).
@Suite("man pages carry the option table's defaults and aliases", .hangGuard(minutes: 5))
struct OptionDefaultsDocumentationTests {
    @Test(
        "every default and alias in an option table is written in the man page's entry for that option",
        arguments: documentedSpecs)
    func defaultsAndAliases(spec: CommandSpec) throws {
        let entries = manOptionEntries(try readPage("man/man1/\(spec.name).1"))
        for option in spec.options {
            let text = entries[option.long] ?? ""
            if let value = option.defaultValue {
                #expect(text.contains("default \(value)"), "\(spec.name)(1) --\(option.long) does not say 'default \(value)': \(text)")
            }
            for alias in option.aliases {
                #expect(text.contains("--\(alias.name)"), "\(spec.name)(1) --\(option.long) does not list its alias --\(alias.name)")
            }
        }
    }

    @Test("help shows each default and alias from the table")
    func help() {
        let help = Help.render(DigestCommand.spec, width: 1000)
        #expect(help.contains("how far back the digest looks from its end (default 24h)"))
        #expect(help.contains("(default local); also --timezone"))
    }

    @Test("vitals(7) lists every short option of the suite, each letter with one meaning")
    func shortOptions() throws {
        let specs = documentedSpecs
        var meaning: [Character: String] = [:]
        for spec in specs {
            for option in spec.allOptions {
                guard let letter = option.short else { continue }
                #expect(
                    meaning[letter, default: option.long] == option.long,
                    "-\(letter) is --\(meaning[letter]!) and --\(option.long) (\(spec.name))")
                meaning[letter] = option.long
            }
        }
        let page = manOptionEntries(try readPage("man/man7/vitals.7"))
        let listed = Set(manOptions(try readPage("man/man7/vitals.7")).map { "\($0.short ?? "")=\($0.long)" })
        let table = Set(meaning.map { "\($0.key)=\($0.value)" })
        #expect(listed == table, "vitals(7) OPTIONS: \(listed.symmetricDifference(table)); \(page.count) entries")
    }
}

/// Runs the examples of the man pages and the README: each `$ ` line, with example.com
/// pointed at local servers and each --watch interrupted once it has written what the example
/// shows, in bash with `set -o pipefail` (so a tool failing upstream of `jq` or `tee` fails the
/// example), and checks what each prints against `Fixtures/examples/<page>.expected` (format and
/// masking rule: the README there).
@Suite("documented examples run", .serialized, .hangGuard(minutes: 3))
struct ExampleTests {
    static func examples(in text: String, roff: Bool) -> [String] {
        var commands: [String] = []
        for line in text.split(separator: "\n").map(String.init) where line.hasPrefix("$ ") {
            var command = String(line.dropFirst(2))
            if roff {
                command = plainRoff(command).replacingOccurrences(of: "\\(aq", with: "'")
            }
            commands.append(command)
        }
        return commands
    }

    static let sources = [
        "man/man1/probe-http.1", "man/man1/probe-ping.1", "man/man1/detect-anomaly.1", "man/man1/store-samples.1",
        "man/man1/digest.1", "man/man1/notify.1", "man/man1/snapshot-delta.1", "man/man7/vitals.7", "README.md",
    ]

    /// Whether this process may send ICMP echo requests: root (raw sockets), or a group inside
    /// net.ipv4.ping_group_range (datagram ICMP sockets).
    static var icmpAllowed: Bool {
        if geteuid() == 0 { return true }
        guard let text = try? String(contentsOfFile: "/proc/sys/net/ipv4/ping_group_range", encoding: .utf8) else { return false }
        let bounds = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).compactMap { Int64($0) }
        guard bounds.count == 2 else { return false }
        var groups = [gid_t](repeating: 0, count: 256)
        let count = getgroups(Int32(groups.count), &groups)
        let mine = [getgid(), getegid()] + groups.prefix(max(0, Int(count)))
        return mine.contains { Int64($0) >= bounds[0] && Int64($0) <= bounds[1] }
    }

    /// What the gates an expected-output file names stand for: whether each holds here, and why it is needed.
    static func gate(_ name: String) -> (holds: Bool, why: String)? {
        switch name {
        case "icmp": return (icmpAllowed, "probe-ping's ICMP echo requests need root or a group in net.ipv4.ping_group_range")
        default: return nil
        }
    }

    /// `vitals_watch N COMMAND...`: runs COMMAND (a --watch), copies what it writes, and sends it
    /// SIGINT once it has written N lines; its status is COMMAND's (130). Stopping on what the tool
    /// wrote, not after a fixed time, keeps the example's outcome the same on a slow machine.
    /// timeout(1) passes the SIGINT on; its 120 s only ends a tool that never writes its lines
    /// (a failure either way).
    static let watchFunction = """
        vitals_watch() {
            local want=$1 seen=0 line pid status fifo
            shift
            fifo=$(mktemp -u) && mkfifo "$fifo" || return 2
            timeout --preserve-status -s INT 120 "$@" > "$fifo" &
            pid=$!
            while IFS= read -r line; do
                printf '%s\\n' "$line"
                seen=$((seen + 1))
                if [ "$seen" = "$want" ]; then kill -INT "$pid"; fi
            done < "$fifo"
            wait "$pid"
            status=$?
            rm -f "$fifo"
            return "$status"
        }

        """

    @Test("examples", arguments: sources)
    func run(source: String) throws {
        let text = try readPage(source)
        let commands = ExampleTests.examples(in: text, roff: !source.hasSuffix(".md"))
        #expect(!commands.isEmpty, "\(source) has examples")
        let expectedName = "examples/" + URL(fileURLWithPath: source).lastPathComponent + ".expected"
        let expectations = try ExpectedOutput.parse(
            String(contentsOf: Binaries.fixtures.appendingPathComponent(expectedName), encoding: .utf8))
        // The file follows the page: the same commands, in the same order.
        try #require(
            expectations.map(\.command) == commands,
            "\(expectedName) does not list \(source)'s examples in order: \(expectations.map(\.command)) vs \(commands)")
        // /bytes/N sends its body over 400 ms, so a speed test's download lasts well past the 50 ms
        // under which its confidence is low, however fast the machine: the confidence the pages
        // show (medium) is the one every machine gets.
        let server = try FixtureServer(bytesPaceMs: 400)
        let scratch = try ScratchDirectory()
        try scratch.write(
            "targets.ndjson",
            """
            {"id":"api","name":"api","url":"\(server.baseURL)/ok","agent":"office"}
            {"id":"web","name":"web","url":"\(server.baseURL)/content?text=hello","expected_content":"hello"}
            {"id":"broken","name":"broken","url":"\(server.baseURL)/status/500"}
            """)
        // Samples for detect-anomaly's examples: a steady hour with a spike, and a slowdown.
        try scratch.write(
            "samples.ndjson",
            (0..<60).map { minute in
                sampleLine(
                    minute < 40 ? "api" : "search", minute: minute,
                    latency: minute == 20 ? 900 : (minute < 40 ? 50 : (minute < 50 ? 120 : 480)) + Double(minute % 5))
            }.joined(separator: "\n") + "\n")
        // probe-ping's hosts: this machine, and the fixture server's port.
        try scratch.write(
            "hosts.ndjson",
            """
            {"id":"loopback","name":"loopback","target":"127.0.0.1"}
            {"id":"web","name":"web","target":"tcp://127.0.0.1:\(server.port)"}
            """)
        // A TLS server stands in for ssl://example.com:443.
        let certificates = try TestCertificates()
        let (cert, key) = try certificates.selfSigned(named: "example", daysLeft: 60)
        let tls = try TLSServer(cert: cert, key: key)
        let tlsHostPort = tls.url.replacingOccurrences(of: "https://", with: "")
        // Health exports for snapshot-delta's examples, and a home of their own for its device id.
        try HealthExport.writeExamples(into: scratch)
        for expectation in expectations {
            let command = expectation.command
            if let name = expectation.gate {
                let gate = try #require(ExampleTests.gate(name), "\(expectedName): unknown gate \(name)")
                guard try requireGate(gate.holds, "\(source): `\(command)`: \(gate.why)") else { continue }
            }
            // A --watch runs until it has written the lines the example shows (at least one), then gets SIGINT.
            let watchLines = max(1, expectation.stdout.count)
            let local =
                command
                .replacingOccurrences(of: "ssl://example.com:443", with: "ssl://\(tlsHostPort)")
                .replacingOccurrences(of: "tcp://example.com:443", with: "tcp://\(tlsHostPort)")
                .replacingOccurrences(of: "https://example.com", with: server.baseURL)
                .replacingOccurrences(of: "probe-http --watch", with: "vitals_watch \(watchLines) probe-http --watch")
                .replacingOccurrences(of: "probe-ping --watch", with: "vitals_watch \(watchLines) probe-ping --watch")
            // /bin/sh is dash here, which has no pipefail: bash runs the examples.
            let result = try runProcess(
                "/bin/bash", ["-c", "set -o pipefail\n" + ExampleTests.watchFunction + local], stdin: "",
                environment: toolEnvironment(HealthExport.exampleEnvironment(scratch)), directory: scratch.url)
            #expect(
                result.status == expectation.status,
                "\(source): `\(command)` exited \(result.status), not \(expectation.status): \(result.stderr)")
            let stdoutMismatch = expectation.mismatch(stdout: result.stdout, stderr: result.stderr)
            #expect(stdoutMismatch == nil, "\(source): `\(command)`: \(stdoutMismatch ?? "")")
        }
    }
}

/// The examples `--help` prints are the man page's, which `ExampleTests` runs and checks.
@Suite("--help's examples are run", .hangGuard(minutes: 2))
struct HelpExampleTests {
    @Test("every example in --help is one of the man page's examples, word for word", arguments: documentedSpecs)
    func helpExamples(spec: CommandSpec) throws {
        let page = ExampleTests.examples(in: try readPage("man/man1/\(spec.name).1"), roff: true)
        #expect(!spec.examples.isEmpty, "\(spec.name) --help shows examples")
        for example in spec.examples {
            #expect(
                page.contains(example),
                "\(spec.name) --help's example is not in \(spec.name)(1) EXAMPLES, where it would be run: \(example)")
        }
        // What --help prints is the table's.
        let help = try run(spec.name, ["--help"]).stdout
        #expect(help.components(separatedBy: "Examples:\n").last?.hasPrefix(spec.examples.map { "  " + $0 + "\n" }.joined()) == true)
    }
}

/// One example's expected output, from `Fixtures/examples/<page>.expected`:
///
///     $ command, as the page prints it (roff escapes removed)
///     @gate icmp                   optional: run only where the gate holds (see ExampleTests.gate)
///     @unordered                   optional: the lines may come in any order (concurrent probes)
///     @exit 130                    optional: the exit status, when not 0 (a --watch the test stops with SIGINT)
///     stdout line                  what it writes on stdout, line by line
///     2> stderr line               what it writes on stderr, line by line
///
/// Lines before the first `$ ` are comments. In an expected line `<*>` stands for one volatile
/// value: it matches any run of characters other than space, tab, `"` and `,`; `<...>` stands
/// for a volatile phrase and matches anything up to the end of the line.
struct ExpectedOutput {
    var command: String
    var gate: String?
    var unordered = false
    var status: Int32 = 0
    var stdout: [String] = []
    var stderr: [String] = []

    static func parse(_ text: String) throws -> [ExpectedOutput] {
        var result: [ExpectedOutput] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix("$ ") {
                result.append(ExpectedOutput(command: String(line.dropFirst(2))))
                continue
            }
            guard !result.isEmpty else { continue }
            if line.hasPrefix("@gate ") {
                result[result.count - 1].gate = String(line.dropFirst(6))
            } else if line == "@unordered" {
                result[result.count - 1].unordered = true
            } else if line.hasPrefix("@exit "), let status = Int32(line.dropFirst(6)) {
                result[result.count - 1].status = status
            } else if line.hasPrefix("2> ") {
                result[result.count - 1].stderr.append(String(line.dropFirst(3)))
            } else {
                result[result.count - 1].stdout.append(line)
            }
        }
        // A trailing empty line of the file is not an expected empty line of the last example.
        for index in result.indices {
            while result[index].stdout.last == "" { result[index].stdout.removeLast() }
        }
        return result
    }

    /// Whether an actual line is an expected one, `<*>` matching one volatile value.
    static func matches(_ actual: String, _ expected: String) -> Bool {
        guard expected.contains("<*>") || expected.contains("<...>") else { return actual == expected }
        let pattern =
            "^"
            + expected.components(separatedBy: "<...>").map { phrase in
                phrase.components(separatedBy: "<*>").map(NSRegularExpression.escapedPattern(for:)).joined(separator: "[^ \t\",]*")
            }.joined(separator: ".*") + "$"
        return actual.range(of: pattern, options: .regularExpression) != nil
    }

    static func linesMatch(_ actual: [String], _ expected: [String], unordered: Bool) -> Bool {
        guard actual.count == expected.count else { return false }
        if !unordered { return zip(actual, expected).allSatisfy { matches($0, $1) } }
        var left = expected
        for line in actual {
            guard let index = left.firstIndex(where: { matches(line, $0) }) else { return false }
            left.remove(at: index)
        }
        return true
    }

    /// Nil when the output is the expected one; otherwise both, for the failure message.
    func mismatch(stdout: String, stderr: String) -> String? {
        func lines(_ text: String) -> [String] {
            var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            while lines.last == "" { lines.removeLast() }
            return lines
        }
        let out = lines(stdout)
        let err = lines(stderr)
        if ExpectedOutput.linesMatch(out, self.stdout, unordered: unordered)
            && ExpectedOutput.linesMatch(err, self.stderr, unordered: unordered)
        {
            return nil
        }
        return "expected\n" + (self.stdout + self.stderr.map { "2> " + $0 }).joined(separator: "\n")
            + "\n--- got\n" + (out + err.map { "2> " + $0 }).joined(separator: "\n")
    }
}

@Suite("notify's record is documented", .hangGuard(minutes: 5))
struct NotifyDocumentationTests {
    @Test("every field notify writes is in vitals-records(7) NOTIFICATION and notify(1) OUTPUT")
    func notificationFields() throws {
        let lines = [
            sampleLine("a", 0, "up"), sampleLine("b", 0, "up"), sampleLine("a", 60, "down"), sampleLine("b", 60.1, "down"),
            sampleLine("a", 120, "up"),
        ]
        let result = try run("notify", ["--dry-run", "--to", "json://127.0.0.1:9/x"], stdin: lines.joined(separator: "\n") + "\n")
        var keys = Set<String>()
        var deliveryKeys = Set<String>()
        for record in try result.records() {
            keys.formUnion(record.fields.map(\.key))
            for delivery in record["deliveries"]?.arrayValue ?? [] { deliveryKeys.formUnion(delivery.objectValue?.fields.map(\.key) ?? []) }
        }
        #expect(keys.isSuperset(of: ["grouped", "duration_ms", "monitor"]), "the run covers grouped and single records")
        // Written only by runs with pending deliveries or push channels (tested in NotifyWebhookTests and NotifyPushTests).
        keys.formUnion(["redelivery"])
        deliveryKeys.formUnion(["next_attempt_at", "devices_sent", "devices_removed"])
        let records = boldWords(manSection(try readPage("man/man7/vitals-records.7"), "NOTIFICATION"))
        let output = boldWords(manSection(try readPage("man/man1/notify.1"), "OUTPUT"))
        for key in keys.sorted() {
            #expect(records.contains(key), "\(key) is not documented in vitals-records(7)")
            #expect(output.contains(key), "\(key) is not listed in notify(1) OUTPUT")
        }
        for key in deliveryKeys.sorted() { #expect(records.contains(key), "deliveries: \(key) is not documented in vitals-records(7)") }
        for event in ["down", "degraded", "recovered", "still_down", "still_degraded"] { #expect(records.contains(event), "\(event)") }
    }
}
