import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `vitals-fixture-server`: the scripted HTTP server of the tests and the demo, as a process.
///
/// It prints its base URL as the first line of standard output (so scripts read the port
/// instead of guessing it), then serves until SIGINT or SIGTERM.
public enum FixtureServerCommand: VitalsCommand {
    /// The option table.
    public static let spec = CommandSpec(
        name: "vitals-fixture-server",
        summary: "Serve the scripted HTTP endpoints the vitals tests and demo probe.",
        usage: ["[--host ADDRESS] [--port N] [--pace-bytes MS] [--routes]"],
        description:
            "Prints its base URL on the first line of standard output, then serves until interrupted. A development tool; it is not installed.",
        options: [
            OptionSpec("host", value: "ADDRESS", help: "address to listen on (default 127.0.0.1)"),
            OptionSpec("port", short: "p", value: "N", help: "port to listen on; 0 picks a free one (default 0)"),
            OptionSpec("ipv6", help: "also listen on ::1 at the same port"),
            OptionSpec("pace-bytes", value: "MS", help: "send /bytes/N's body over at least MS milliseconds (default 0: at once)"),
            OptionSpec("routes", help: "print the routes and exit"),
        ],
        exitStatuses: [
            (.success, "stopped by a signal after serving"), (.failure, "could not listen"), (.usage, "the command line was wrong"),
        ]
    )

    /// Runs the server until a stop signal.
    public static func run(_ options: ParsedOptions, _ context: ToolContext) throws -> ExitStatus {
        if options.has("routes") {
            for (route, meaning) in FixtureServer.routes {
                try context.output.write("\(route)\t\(meaning)")
            }
            return .success
        }
        let port = try options.integer("port", default: 0, in: 0...65_535)
        let pace = try options.integer("pace-bytes", default: 0, in: 0...600_000)
        let server: FixtureServer
        do {
            server = try FixtureServer(
                host: options.value("host") ?? "127.0.0.1", port: port, alsoIPv6: options.has("ipv6"),
                bytesPaceMs: pace)
        } catch {
            throw ToolError("\(error)")
        }
        try context.output.write(server.baseURL)
        try context.output.flush()
        while !Signals.stopRequested {
            var descriptor = pollfd(fd: Signals.wakeFD, events: Int16(POLLIN), revents: 0)
            _ = poll(&descriptor, 1, 1000)
        }
        server.stop()
        return .success
    }
}
