import Foundation
import Testing
import VitalsKit

/// The completion scripts vitals-completions writes, as each shell runs them.
enum Completions {
    /// The tools vitals-completions knows (`--list`).
    static func tools() throws -> [String] {
        let list = try runProcess(Binaries.path("vitals-completions"), ["--list"], stdin: "", environment: toolEnvironment())
        guard list.status == 0 else { throw TestFailure("vitals-completions --list: \(list.stderr)") }
        return list.lines
    }

    /// Writes every tool's script for `shell` into `folder` under the name the shell looks for.
    static func install(_ shell: String, into folder: String) throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for tool in try tools() {
            let result = try runProcess(Binaries.path("vitals-completions"), [shell, tool], stdin: "", environment: toolEnvironment())
            guard result.status == 0, !result.stdout.isEmpty else { throw TestFailure("vitals-completions \(shell) \(tool): \(result.stderr)") }
            let name = ["bash": tool, "zsh": "_" + tool, "fish": tool + ".fish"][shell]!
            try result.stdout.write(toFile: folder + "/" + name, atomically: true, encoding: .utf8)
        }
    }

    /// What bash offers for the last of `words` (the word being completed, maybe empty), run in `directory`:
    /// the tool's script sourced, COMP_WORDS and COMP_CWORD set as readline sets them, the function called.
    static func bash(_ words: [String], folder: String, directory: URL) throws -> [String] {
        let quoted = words.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let script = """
        source "$0/\(words[0])" || exit 2
        COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1); COMPREPLY=()
        "$(complete -p \(words[0]) | sed 's/.*-F \\([^ ]*\\) .*/\\1/')" || exit 2
        for reply in "${COMPREPLY[@]}"; do printf '%s\\n' "$reply"; done
        """
        let result = try runProcess("/bin/bash", ["--norc", "-c", script, folder], stdin: "", environment: toolEnvironment(), directory: directory)
        guard result.status == 0 else { throw TestFailure("bash completion of \(words): \(result.stderr)") }
        return result.lines
    }

    /// What zsh's completion system offers for `line` typed at an interactive prompt (Fixtures/completion/zsh-complete.zsh).
    static func zsh(_ line: String, folder: String, directory: URL) throws -> [String] {
        let harness = Binaries.fixtures.appendingPathComponent("completion/zsh-complete.zsh").path
        let result = try runProcess("/usr/bin/timeout", ["60", "zsh", "-f", harness, folder, line], stdin: "", environment: toolEnvironment(),
                                    directory: directory)
        guard result.status == 0 else { throw TestFailure("zsh completion of '\(line)': exit \(result.status) \(result.stderr)") }
        return result.lines
    }

    /// What fish offers for `line` (`complete -C`), the scripts sourced.
    static func fish(_ line: String, folder: String, directory: URL) throws -> [String] {
        let result = try runProcess("/usr/bin/env", ["fish", "--no-config", "-c", "for f in $argv[1]/*.fish; source $f; end; complete -C $argv[2]", folder, line],
                                    stdin: "", environment: toolEnvironment(), directory: directory)
        guard result.status == 0 else { throw TestFailure("fish completion of '\(line)': \(result.stderr)") }
        return result.lines.map { String($0.split(separator: "\t", maxSplits: 1).first ?? "") }
    }

    static func available(_ program: String) -> Bool {
        (try? runProcess("/usr/bin/env", ["sh", "-c", "command -v \(program)"], stdin: "", environment: toolEnvironment()).status) == 0
    }
}

/// A command line, what is typed so far, and what a shell must offer: worked out by hand from the tools' --help.
struct CompletionCase: CustomTestStringConvertible, Sendable {
    var line: String
    var offers: Set<String>
    var testDescription: String { "'\(line)'" }
}

/// The cases every shell must get right; the scratch folder holds export.xml, notes.txt and the folder keys/.
let completionCases: [CompletionCase] = [
    CompletionCase(line: "probe-http --con", offers: ["--concurrency", "--connectivity"]),
    CompletionCase(line: "store-samples agents ", offers: ["approve", "reject", "token"]),
    CompletionCase(line: "store-samples --db vitals.db agents ", offers: ["approve", "reject", "token"]),
    CompletionCase(line: "store-samples monitors --format ", offers: ["json", "ndjson", "csv"]),
    CompletionCase(line: "store-samples ov", offers: ["overview"]),
    CompletionCase(line: "store-samples history --ho", offers: ["--hours"]),
    CompletionCase(line: "notify devices ", offers: ["add", "remove", "count", "list"]),
    CompletionCase(line: "notify --cooldown-mode ", offers: ["drop", "defer"]),
    CompletionCase(line: "snapshot-delta anomalies ", offers: ["resolve"]),
    CompletionCase(line: "snapshot-delta cert ", offers: ["server", "client"]),
    CompletionCase(line: "snapshot-delta take ex", offers: ["export.xml"]),
    CompletionCase(line: "detect-anomaly --detector ", offers: ["envelope", "robust", "mad", "seed"]),
    CompletionCase(line: "detect-anomaly --direction ", offers: ["high", "low", "both"]),
    CompletionCase(line: "probe-ping --socket ", offers: ["auto", "datagram", "raw"]),
    CompletionCase(line: "probe-http --ip ", offers: ["4", "6", "both", "any"]),
    CompletionCase(line: "digest -f ", offers: ["text", "markdown", "html", "json", "prompt"]),
    CompletionCase(line: "probe-http no", offers: ["notes.txt"]),
]

// A hang guard: the limit counts the wait for a thread of the test pool, which tests waiting on servers hold.
@Suite("shell completions come from the command table", .timeLimit(.minutes(5)))
struct CompletionTests {
    /// A folder like a user's: a file of each kind the cases name, and a folder.
    static func workspace() throws -> ScratchDirectory {
        let scratch = try ScratchDirectory()
        try scratch.write("export.xml", "<HealthData/>\n")
        try scratch.write("notes.txt", "\n")
        try FileManager.default.createDirectory(atPath: scratch.path("keys"), withIntermediateDirectories: true)
        return scratch
    }

    @Test("bash completes probe-http --con, store-samples agents, choices, actions and files", arguments: completionCases)
    func bash(_ test: CompletionCase) throws {
        let scratch = try CompletionTests.workspace()
        try Completions.install("bash", into: scratch.path("completions"))
        var words = test.line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        if test.line.hasSuffix(" ") { words[words.count - 1] = "" }
        let offered = try Completions.bash(words, folder: scratch.path("completions"), directory: scratch.url)
        #expect(Set(offered) == test.offers, "offered \(offered)")
    }

    @Test("bash: a value after '=' (bash splits --format=ndjson at '='), an option's file or folder, nothing for a number")
    func bashValues() throws {
        let scratch = try CompletionTests.workspace()
        try Completions.install("bash", into: scratch.path("completions"))
        let folder = scratch.path("completions")
        #expect(try Completions.bash(["store-samples", "--format", "=", "nd"], folder: folder, directory: scratch.url) == ["ndjson"])
        #expect(Set(try Completions.bash(["store-samples", "-f", ""], folder: folder, directory: scratch.url)) == ["json", "ndjson", "csv"])
        #expect(Set(try Completions.bash(["store-samples", "--db", ""], folder: folder, directory: scratch.url))
                == ["completions", "export.xml", "notes.txt", "keys"])
        #expect(try Completions.bash(["snapshot-delta", "cert", "server", "--out", ""], folder: folder, directory: scratch.url).sorted() == ["completions", "keys"])
        #expect(try Completions.bash(["probe-http", "-c", ""], folder: folder, directory: scratch.url).isEmpty)
        #expect(try Completions.bash(["probe-http", "-c8", "--in"], folder: folder, directory: scratch.url).sorted() == ["--insecure", "--interval"])
        // After --, everything is an operand: files, not options.
        #expect(try Completions.bash(["probe-http", "--", "--"], folder: folder, directory: scratch.url).isEmpty)
        // An action's operand is the user's (an agent's id): nothing offered.
        #expect(try Completions.bash(["store-samples", "agents", "approve", ""], folder: folder, directory: scratch.url).isEmpty)
    }

    @Test("bash offers exactly the options each subcommand's --help lists (and the aliases it names)")
    func bashMatchesHelp() throws {
        let scratch = try CompletionTests.workspace()
        try Completions.install("bash", into: scratch.path("completions"))
        for tool in try Completions.tools() {
            let help = try run(tool, ["--help"]).stdout
            // The subcommands, as the help's "Subcommands" list names them.
            let subcommands = help.components(separatedBy: "\nSubcommands").dropFirst().first.map { section in
                section.split(separator: "\n").dropFirst().prefix { $0.hasPrefix("  ") }
                    .filter { !$0.hasPrefix("   ") }.map { String($0.split(separator: " ")[0]) }
            } ?? []
            for subcommand in [nil] + subcommands.map(Optional.some) {
                let words = [tool] + (subcommand.map { [$0] } ?? []) + ["--"]
                let text = try run(tool, (subcommand.map { [$0] } ?? []) + ["--help"]).stdout
                // Before a subcommand is named, every option may come (it may precede the subcommand).
                let listed = Set(helpOptions(text).map { "--" + $0.long })
                let named = Set(text.matches(of: try Regex("--[a-z][a-z0-9-]*")).map { String(text[$0.range]) })
                let offered = Set(try Completions.bash(words, folder: scratch.path("completions"), directory: scratch.url))
                #expect(listed.isSubset(of: offered), "\(words): not offered: \(listed.subtracting(offered))")
                #expect(offered.isSubset(of: named), "\(words): offered but not in --help: \(offered.subtracting(named))")
            }
        }
    }

    @Test("zsh (its completion system at an interactive prompt) and fish (complete -C) complete the same",
          arguments: ["zsh", "fish"], completionCases)
    func otherShells(_ shell: String, _ test: CompletionCase) throws {
        guard try requireGate(Completions.available(shell), "\(shell) is not installed") else { return }
        let scratch = try CompletionTests.workspace()
        try Completions.install(shell, into: scratch.path("completions"))
        let offered = shell == "zsh" ? try Completions.zsh(test.line, folder: scratch.path("completions"), directory: scratch.url)
            : try Completions.fish(test.line, folder: scratch.path("completions"), directory: scratch.url)
        // Where a file is wanted, zsh and fish offer the folders too (to go into them).
        #expect(Set(offered).subtracting(["keys/", "completions/"]) == test.offers, "offered \(offered)")
    }

    @Test("every script loads in its shell without an error, for every tool (the tools scripts/install installs)")
    func syntax() throws {
        // scripts/install installs the tools vitals-completions lists: every tool with a man page.
        let pages = try FileManager.default.contentsOfDirectory(atPath: Binaries.repositoryRoot.appendingPathComponent("man/man1").path)
        #expect(try Completions.tools().sorted() == pages.map { String($0.dropLast(2)) }.sorted())
        let scratch = try ScratchDirectory()
        for shell in ["bash", "zsh", "fish"] where shell == "bash" || Completions.available(shell) {
            try Completions.install(shell, into: scratch.path(shell))
            for file in try FileManager.default.contentsOfDirectory(atPath: scratch.path(shell)) {
                let result = try runProcess("/usr/bin/env", [shell, "-n", scratch.path(shell) + "/" + file], stdin: "", environment: toolEnvironment())
                #expect(result.status == 0 && result.stderr.isEmpty, "\(shell) -n \(file): \(result.stderr)")
            }
        }
        let unknown = try runProcess(Binaries.path("vitals-completions"), ["tcsh", "probe-http"], stdin: "", environment: toolEnvironment())
        #expect(unknown.status == 64 && unknown.stderr.contains("bash, zsh or fish"))
    }
}
