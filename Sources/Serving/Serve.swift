import Foundation
import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The `serve` subcommand every tool with an API shares: its options, and running the responder
/// under its supervisor. See vitals-serve(7).
public enum Serve {
    /// The options of `serve`, the same in every tool.
    public static let options: [OptionSpec] = [
        OptionSpec(
            "socket", value: "PATH",
            help:
                "serve: listen on a new Unix socket at PATH (mode 0600, or 0660 with --socket-group; its folder must give others nothing), unless systemd passes one"
        ),
        OptionSpec("socket-group", value: "GROUP", help: "serve: make the socket 0660 and give it to GROUP (the group of nginx's workers)"),
        OptionSpec("workers", value: "N", help: "serve: whole requests answered at once (default: twice the cores, at least 4)"),
    ]
    /// Their names, for a subcommand's option list.
    public static let optionNames = Set(options.map(\.long))

    /// The default number of workers: twice the cores, at least 4.
    public static var defaultWorkers: Int { max(4, 2 * ProcessInfo.processInfo.activeProcessorCount) }

    /// Runs `serve`: in the supervisor, makes (or takes) the socket and keeps a worker process
    /// going; in the worker, answers requests with an answerer per thread until stopped. `what`
    /// names the API in the line that says it is serving.
    public static func run(
        _ options: ParsedOptions, _ context: ToolContext, what: String, limits: RequestLimits,
        lines: (option: String, sink: @Sendable () -> LineSink)? = nil,
        makeAnswerer: @escaping @Sendable () -> RequestAnswerer
    ) throws -> ExitStatus {
        let workers = options.has("workers") ? try options.integer("workers", default: defaultWorkers, in: 1...256) : defaultWorkers
        let tool = context.diagnostics.tool
        let errorFD = context.streams.error
        let log: @Sendable (String) -> Void = { message in Streams.writeAll(errorFD, "\(tool): \(message)\n") }
        if let supervisor = context.environment[Supervisor.workerVariable].flatMap({ pid_t($0) }) {
            let responder = Responder(listenFD: 3, workers: workers, limits: limits, log: log, makeAnswerer: makeAnswerer)
            let hasPipe = lines != nil && fcntl(4, F_GETFD) >= 0
            try responder.run(parentGone: { getppid() != supervisor }, lines: hasPipe ? (4, lines!.sink) : nil)
            return Signals.stopStatus ?? .success
        }
        let group = options.value("socket-group")
        // The pipe before the socket: whoever waits for the socket to start nginx finds the FIFO
        // there already (nginx would make a plain file of a path that does not exist).
        var pipe: Listener?
        if let lines {
            pipe = try Listener.openLogPipe(
                path: options.value(lines.option), group: group, option: "--" + lines.option,
                environment: context.environment)
        }
        defer { if let path = pipe?.path { unlink(path) } }
        let listener = try Listener.open(path: options.value("socket"), group: group, environment: context.environment)
        defer { if let path = listener.path { unlink(path) } }
        log("serving \(what) on \(listener.display) with \(workers) workers" + (pipe.map { "; nginx's refusals from \($0.display)" } ?? ""))
        return try Supervisor.run(listenFD: listener.fd, pipeFD: pipe?.fd, environment: context.environment, log: log)
    }
}
