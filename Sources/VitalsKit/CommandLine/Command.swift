import Foundation

/// The suite's version, printed by every tool's `--version`.
public enum Vitals {
    /// The version of the suite; every tool shares it.
    public static let version = "0.1.0"
}

/// A fatal error a tool reports in words and ends with exit 2 (a file that cannot be read, ...).
public struct ToolError: Error, CustomStringConvertible {
    /// What went wrong and, where possible, what to do.
    public let message: String
    /// Creates an error.
    public init(_ message: String) { self.message = message }
    /// The message.
    public var description: String { message }
}

/// What a running tool is given: its streams, its diagnostics sink, its record writer and environment.
public final class ToolContext {
    /// The descriptors for input, output and diagnostics.
    public let streams: Streams
    /// Where problems are reported; its error count decides exit 2.
    public let diagnostics: Diagnostics
    /// The writer for records on `streams.output`.
    public let output: RecordWriter
    /// The process environment (or a test's).
    public let environment: [String: String]

    /// Creates a context.
    public init(tool: String, streams: Streams, environment: [String: String]) {
        self.streams = streams
        self.diagnostics = Diagnostics(tool: tool, fd: streams.error)
        self.output = RecordWriter(fd: streams.output)
        self.environment = environment
    }
}

/// A vitals tool: a `CommandSpec` (options, help) and a `run` that returns an exit status.
///
/// The executable's `main.swift` is one line, `XCommand.main()`; tests call `execute` with pipes.
public protocol VitalsCommand {
    /// The command-line interface: parsing, `--help` and the man-page test all read it.
    static var spec: CommandSpec { get }
    /// Runs the tool with validated-later raw options. Throw `UsageError` for bad options
    /// (exit 64), `ToolError` for fatal errors (exit 2); return the exit status otherwise.
    static func run(_ options: ParsedOptions, _ context: ToolContext) throws -> ExitStatus
}

extension VitalsCommand {
    /// The entry point of the executable: installs the signal policy, runs, exits.
    /// A tool with a `cgi` subcommand run with no arguments under a web server (GATEWAY_INTERFACE
    /// set, as a web server that runs a program per request does) answers the request: the arguments are `cgi`.
    public static func main(_ arguments: [String] = Array(CommandLine.arguments.dropFirst())) -> Never {
        Signals.install()
        let environment = ProcessInfo.processInfo.environment
        var arguments = arguments
        if arguments.isEmpty, environment["GATEWAY_INTERFACE"]?.hasPrefix("CGI/") == true,
            spec.subcommands.contains(where: { $0.name == "cgi" })
        {
            arguments = ["cgi"]
        }
        let status = execute(arguments, streams: .standard, environment: environment)
        exit(status.rawValue)
    }

    /// Parses `arguments` and runs the tool on `streams`, returning the exit status.
    public static func execute(_ arguments: [String], streams: Streams, environment: [String: String]) -> ExitStatus {
        let name = spec.name
        let context = ToolContext(tool: name, streams: streams, environment: environment)
        var status: ExitStatus
        do {
            let options = try ArgumentParser.parse(arguments, spec: spec)
            if options.has("help") {
                Streams.writeAll(streams.output, Help.render(spec, subcommand: options.subcommand, action: options.action))
                return .success
            }
            if options.has("version") {
                Streams.writeAll(streams.output, "\(name) (vitals) \(Vitals.version)\n")
                return .success
            }
            status = try run(options, context)
            try context.output.flush()
        } catch let error as UsageError {
            Streams.writeAll(streams.error, "\(name): \(error.message)\nTry '\(name) --help' for more information.\n")
            return .usage
        } catch is BrokenPipe {
            return Signals.stopStatus ?? .success
        } catch let error as ToolError {
            _ = try? context.output.flush()
            context.diagnostics.error(error.message)
            status = .failure
        } catch {
            _ = try? context.output.flush()
            context.diagnostics.error("\(error)")
            status = .failure
        }
        if let stop = Signals.stopStatus { return stop }
        return status
    }
}
