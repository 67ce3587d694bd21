import Foundation
import Testing
import VitalsKit

/// The completion scripts vitals-completions writes, as each shell runs them. Each shell runs once
/// for many command lines (a batch), so the suite starts few shells.
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
            guard result.status == 0, !result.stdout.isEmpty else {
                throw TestFailure("vitals-completions \(shell) \(tool): \(result.stderr)")
            }
            let name = ["bash": tool, "zsh": "_" + tool, "fish": tool + ".fish"][shell]!
            try result.stdout.write(toFile: folder + "/" + name, atomically: true, encoding: .utf8)
        }
    }

    /// The offers printed after each `@@ LINE` marker, in order.
    static func batches(_ output: String) -> [[String]] {
        var result: [[String]] = []
        for line in output.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("@@ ") {
                result.append([])
            } else if !line.isEmpty, !result.isEmpty {
                result[result.count - 1].append(String(line))
            }
        }
        return result
    }

    /// What bash offers for the last word of each of `lines` (the word being completed, maybe empty),
    /// run in `directory`: the tool's script sourced, COMP_WORDS and COMP_CWORD set as readline sets
    /// them, the function `complete -p` names called.
    static func bash(_ lines: [[String]], folder: String, directory: URL) throws -> [[String]] {
        var script = "for f in \"$0\"/*; do source \"$f\" || exit 2; done\n"
        for words in lines {
            let quoted = words.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
            script += """
                echo "@@ \(words.joined(separator: " "))"
                COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1); COMPREPLY=()
                "$(complete -p \(words[0]) | sed 's/.*-F \\([^ ]*\\) .*/\\1/')" || exit 2
                for reply in "${COMPREPLY[@]}"; do printf '%s\\n' "$reply"; done

                """
        }
        let result = try runProcess(
            "/bin/bash", ["--norc", "-c", script, folder], stdin: "", environment: toolEnvironment(), directory: directory)
        guard result.status == 0 else { throw TestFailure("bash completion: \(result.stderr)") }
        return batches(result.stdout)
    }

    /// What zsh's completion system offers for each of `lines` typed at an interactive prompt
    /// (Fixtures/completion/zsh-complete.zsh), or fish's `complete -C`.
    static func other(_ shell: String, _ lines: [String], folder: String, directory: URL) throws -> [[String]] {
        let result: RunResult
        if shell == "zsh" {
            let harness = Binaries.fixtures.appendingPathComponent("completion/zsh-complete.zsh").path
            result = try runProcess(
                "/usr/bin/timeout", ["120", "zsh", "-f", harness, folder] + lines, stdin: "", environment: toolEnvironment(),
                directory: directory)
        } else {
            let script = "for f in $argv[1]/*.fish; source $f; end; for line in $argv[2..-1]; echo \"@@ $line\"; complete -C $line; end"
            result = try runProcess(
                "/usr/bin/env", ["fish", "--no-config", "-c", script, folder] + lines, stdin: "", environment: toolEnvironment(),
                directory: directory)
        }
        guard result.status == 0 else { throw TestFailure("\(shell) completion: exit \(result.status) \(result.stderr)") }
        // fish writes each candidate's description after a tab.
        return batches(result.stdout).map { $0.map { String($0.split(separator: "\t", maxSplits: 1).first ?? "") } }
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
    CompletionCase(line: "probe-http --con", offers: ["--concurrency", "--confirm", "--confirm-delay", "--connectivity"]),
    CompletionCase(line: "store-samples agents ", offers: ["approve", "reject", "token"]),
    CompletionCase(line: "store-samples --db vitals.db agents ", offers: ["approve", "reject", "token"]),
    CompletionCase(line: "store-samples monitors --format ", offers: ["json", "ndjson"]),
    CompletionCase(line: "store-samples export --format ", offers: ["ndjson", "csv"]),
    CompletionCase(line: "snapshot-delta take -f ", offers: ["auto", "apple-health", "ndjson"]),
    CompletionCase(line: "snapshot-delta cert server --format ", offers: ["text", "ndjson"]),
    CompletionCase(line: "store-samples ov", offers: ["overview"]),
    CompletionCase(line: "store-samples history --si", offers: ["--since"]),
    CompletionCase(line: "snapshot-delta samples --pa", offers: ["--page"]),
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
    CompletionCase(line: "healthsync ", offers: ["scan", "fetch", "types", "discover"]),
    CompletionCase(line: "healthsync scan --c", offers: ["--cert", "--clipboard"]),
    CompletionCase(line: "healthsync fetch --pe", offers: ["--per-page"]),
    CompletionCase(line: "healthsync -f ", offers: ["ndjson", "csv", "text"]),
]

@Suite("shell completions come from the command table", .hangGuard(minutes: 2))
struct CompletionTests {
    /// A folder like a user's: a file of each kind the cases name, and a folder; the scripts in completions/.
    static func workspace(_ shell: String) throws -> ScratchDirectory {
        let scratch = try ScratchDirectory()
        try scratch.write("export.xml", "<HealthData/>\n")
        try scratch.write("notes.txt", "\n")
        try FileManager.default.createDirectory(atPath: scratch.path("keys"), withIntermediateDirectories: true)
        try Completions.install(shell, into: scratch.path("completions"))
        return scratch
    }

    /// A case's line as bash's words: the last one is what is being completed (empty after a space).
    static func words(_ line: String) -> [String] {
        line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
    }

    @Test("bash completes probe-http --con, store-samples agents, choices, actions and files")
    func bash() throws {
        let scratch = try CompletionTests.workspace("bash")
        let offered = try Completions.bash(
            completionCases.map { CompletionTests.words($0.line) }, folder: scratch.path("completions"),
            directory: scratch.url)
        try #require(offered.count == completionCases.count)
        for (test, offer) in zip(completionCases, offered) {
            #expect(Set(offer) == test.offers, "'\(test.line)': offered \(offer)")
        }
    }

    @Test("bash: a value after '=' (bash splits --format=ndjson at '='), an option's file or folder, nothing for a number")
    func bashValues() throws {
        let scratch = try CompletionTests.workspace("bash")
        let cases: [([String], Set<String>)] = [
            (["store-samples", "--format", "=", "nd"], ["ndjson"]),
            (["store-samples", "-f", ""], ["json", "ndjson", "csv"]),
            (["store-samples", "--db", ""], ["completions", "export.xml", "notes.txt", "keys"]),
            (["snapshot-delta", "cert", "server", "--out", ""], ["completions", "keys"]),
            (["probe-http", "-c", ""], []),
            (["probe-http", "-c8", "--in"], ["--insecure", "--interval"]),
            // After --, everything is an operand: files, not options.
            (["probe-http", "--", "--"], []),
            // An action's operand is the user's (an agent's id): nothing offered.
            (["store-samples", "agents", "approve", ""], []),
            // After an action, its own options: devices add's --platform, not after remove (or its other word).
            (["notify", "devices", "register", "ab12", "--pl"], ["--platform"]),
            (["notify", "devices", "remove", "ab12", "--pl"], []),
            (["store-samples", "agents", "token", "a", "--to"], ["--tokens"]),
            (["store-samples", "agents", "approve", "a", "--to"], []),
        ]
        let offered = try Completions.bash(cases.map(\.0), folder: scratch.path("completions"), directory: scratch.url)
        try #require(offered.count == cases.count)
        for ((words, expected), offer) in zip(cases, offered) {
            #expect(Set(offer) == expected, "\(words): offered \(offer)")
        }
    }

    @Test("bash offers exactly the options each subcommand's --help lists (and the aliases it names)")
    func bashMatchesHelp() throws {
        let scratch = try CompletionTests.workspace("bash")
        var lines: [[String]] = []
        var helps: [String] = []
        for spec in documentedSpecs {
            // Before a subcommand is named, every option may come (it may precede the subcommand).
            for subcommand in [nil] + spec.subcommands.map(\.name) {
                lines.append([spec.name] + (subcommand.map { [$0] } ?? []) + ["--"])
                helps.append(Help.render(spec, subcommand: subcommand))
            }
            // After an action, the options its own --help lists (devices remove: no --platform).
            for subcommand in spec.subcommands {
                for action in subcommand.actions {
                    lines.append([spec.name, subcommand.name, action.name] + (action.operands.lowerBound > 0 ? ["x"] : []) + ["--"])
                    helps.append(Help.render(spec, subcommand: subcommand.name, action: action.name))
                }
            }
        }
        let offered = try Completions.bash(lines, folder: scratch.path("completions"), directory: scratch.url)
        try #require(offered.count == lines.count)
        for ((words, text), offer) in zip(zip(lines, helps), offered) {
            let listed = Set(helpOptions(text).map { "--" + $0.long })
            let named = Set(text.matches(of: try Regex("--[a-z][a-z0-9-]*")).map { String(text[$0.range]) })
            #expect(listed.isSubset(of: Set(offer)), "\(words): not offered: \(listed.subtracting(offer))")
            #expect(Set(offer).isSubset(of: named), "\(words): offered but not in --help: \(Set(offer).subtracting(named))")
        }
    }

    @Test("zsh (its completion system at an interactive prompt) and fish (complete -C) complete the same", arguments: ["zsh", "fish"])
    func otherShells(_ shell: String) throws {
        guard try requireGate(Completions.available(shell), "\(shell) is not installed") else { return }
        let scratch = try CompletionTests.workspace(shell)
        let offered = try Completions.other(shell, completionCases.map(\.line), folder: scratch.path("completions"), directory: scratch.url)
        try #require(offered.count == completionCases.count, "\(offered)")
        for (test, offer) in zip(completionCases, offered) {
            // Where a file is wanted, zsh and fish offer the folders too (to go into them).
            #expect(Set(offer).subtracting(["keys/", "completions/"]) == test.offers, "\(shell) '\(test.line)': offered \(offer)")
        }
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
                let result = try runProcess(
                    "/usr/bin/env", [shell, "-n", scratch.path(shell) + "/" + file], stdin: "", environment: toolEnvironment())
                #expect(result.status == 0 && result.stderr.isEmpty, "\(shell) -n \(file): \(result.stderr)")
            }
        }
        let unknown = try runProcess(
            Binaries.path("vitals-completions"), ["tcsh", "probe-http"], stdin: "", environment: toolEnvironment())
        #expect(unknown.status == 64 && unknown.stderr.contains("bash, zsh or fish"))
    }
}
