import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `vitals-completions SHELL TOOL`: prints TOOL's completion script for bash, zsh or fish, made from
/// its option table, so completions never drift from `--help`. Run at install and packaging time
/// (scripts/install), not installed itself. `vitals-completions --list` names the tools it knows.
public enum CompletionsCommand {
    /// The script for `shell` and `spec`, or nil for a shell it does not write.
    public static func script(shell: String, _ spec: CommandSpec) -> String? {
        switch shell {
        case "bash": return BashCompletion.script(spec)
        case "zsh": return ZshCompletion.script(spec)
        case "fish": return FishCompletion.script(spec)
        default: return nil
        }
    }

    /// Runs with the command line (without the program name), given the tools' tables; exits.
    public static func main(_ tools: [CommandSpec], arguments: [String] = Array(CommandLine.arguments.dropFirst())) -> Never {
        let usage = "usage: vitals-completions SHELL TOOL (SHELL: bash, zsh or fish) | --list\n"
        switch arguments.count {
        case 1 where arguments[0] == "--list":
            Streams.writeAll(1, tools.map { $0.name + "\n" }.joined())
            exit(0)
        case 1 where arguments[0] == "--help" || arguments[0] == "-h":
            Streams.writeAll(1, usage)
            exit(0)
        case 2:
            guard let spec = tools.first(where: { $0.name == arguments[1] }) else {
                Streams.writeAll(2, "vitals-completions: no tool '\(arguments[1])' (--list names them)\n")
                exit(64)
            }
            guard let text = script(shell: arguments[0], spec) else {
                Streams.writeAll(2, "vitals-completions: no shell '\(arguments[0])'; bash, zsh or fish\n")
                exit(64)
            }
            exit(Streams.writeAll(1, text) ? 0 : 2)
        default:
            Streams.writeAll(2, "vitals-completions: " + usage)
            exit(64)
        }
    }
}
