#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import VitalsKit

/// The `serve` subcommand every tool with an API shares: its options, and running the responder
/// under its supervisor. See vitals-serve(7).
public enum Serve {
    /// The options of `serve`, the same in every tool.
    public static let options: [OptionSpec] = [
        OptionSpec("socket", value: "PATH",
                   help: "serve: listen on a new Unix socket at PATH (mode 0600, or 0660 with --socket-group; its folder must give others nothing), unless systemd passes one"),
        OptionSpec("socket-group", value: "GROUP", help: "serve: make the socket 0660 and give it to GROUP (the group of nginx's workers)"),
        OptionSpec("workers", value: "N", help: "serve: requests answered at once (default: twice the cores, at least 4)"),
    ]
    /// Their names, for a subcommand's option list.
    public static let optionNames = Set(options.map(\.long))

    /// The default number of workers: twice the cores, at least 4.
    public static var defaultWorkers: Int { max(4, 2 * ProcessInfo.processInfo.activeProcessorCount) }

    /// Runs `serve`: in the supervisor, makes (or takes) the socket and keeps a worker process
    /// going; in the worker, answers requests with an answerer per thread until stopped. `what`
    /// names the API in the line that says it is serving.
    public static func run(_ options: ParsedOptions, _ context: ToolContext, what: String, limits: RequestLimits,
                           datagrams: (option: String, sink: @Sendable () -> DatagramSink)? = nil,
                           makeAnswerer: @escaping @Sendable () -> RequestAnswerer) throws -> ExitStatus {
        let workers = options.has("workers") ? try options.integer("workers", default: defaultWorkers, in: 1...256) : defaultWorkers
        let tool = context.diagnostics.tool
        let errorFD = context.streams.error
        let log: @Sendable (String) -> Void = { message in Streams.writeAll(errorFD, "\(tool): \(message)\n") }
        if let supervisor = context.environment[Supervisor.workerVariable].flatMap({ pid_t($0) }) {
            let responder = Responder(listenFD: 3, workers: workers, limits: limits, log: log, makeAnswerer: makeAnswerer)
            let hasDatagrams = datagrams != nil && fcntl(4, F_GETFD) >= 0
            try responder.run(parentGone: { getppid() != supervisor }, datagrams: hasDatagrams ? (4, datagrams!.sink) : nil)
            return Signals.stopStatus ?? .success
        }
        let group = options.value("socket-group")
        let listener = try Listener.open(path: options.value("socket"), group: group, environment: context.environment)
        defer { if let path = listener.path { unlink(path) } }
        var datagram: Listener?
        if let datagrams {
            datagram = try Listener.openDatagram(path: options.value(datagrams.option), group: group, option: "--" + datagrams.option,
                                                 environment: context.environment)
        }
        defer { if let path = datagram?.path { unlink(path) } }
        log("serving \(what) on \(listener.display) with \(workers) workers" + (datagram.map { "; nginx's refusals on \($0.display)" } ?? ""))
        return try Supervisor.run(listenFD: listener.fd, datagramFD: datagram?.fd, environment: context.environment, log: log)
    }
}
