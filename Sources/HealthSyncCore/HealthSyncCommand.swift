import Foundation
import VitalsKit

/// `healthsync`: the seed's command-line client of Health Sync. `scan` pairs with a server from the
/// text of its QR code, `fetch` pages through the samples it shares, `types` lists them, `discover`
/// finds servers by Bonjour.
public enum HealthSyncCommand: VitalsCommand {
    /// The option table.
    public static let spec = CommandSpec(
        name: "healthsync",
        summary: "Health Sync's command-line client: pair with a server from its QR text, then fetch the health samples it shares.",
        usage: [
            "[OPTIONS] scan [PAYLOAD | -]", "[OPTIONS] fetch [--types TYPES] [--since WHEN] [--until WHEN]",
            "[OPTIONS] types", "[OPTIONS] discover",
        ],
        description: """
            scan reads the pairing text (the QR code snapshot-delta pair prints) from its argument, standard input or \
            the clipboard, checks that the server shows the certificate and key it names, presents this client's \
            certificate (made with openssl when there is none), pairs with the one-time token, and keeps the server's \
            address and fingerprints in the state file (mode 0600). fetch asks for the samples of the shared types \
            starting in [--since, --until), page by page (offset and limit) until the range is complete, and writes them \
            as health_record lines that snapshot-delta take reads (then one type_status line per type: complete, or \
            partial when a range or a limit cut it or a page was refused), or as CSV; a request refused for the moment \
            (429, 5xx, a failed connection) is asked again with backoff, and a fetch into --output FILE cut short is \
            continued by --resume. Every request is HTTPS (TLS 1.3), \
            pinned to the server's public key and certificate. --discover finds the server by Bonjour \
            (_healthsync._tcp, with avahi-browse). See healthsync(1) and vitals-serve(7).
            """,
        options: [
            OptionSpec(
                "state", value: "FILE",
                help:
                    "the pairing, kept between runs with mode 0600 (default $XDG_CONFIG_HOME/vitals/healthsync.json, else ~/.config/vitals/healthsync.json)"
            ),
            OptionSpec(
                "cert", value: "FILE",
                help:
                    "scan: the client certificate to present, PEM (default: the state file with .crt for .json, made with openssl when missing)"
            ),
            OptionSpec("key", value: "FILE", help: "scan: the client certificate's key, PEM (default: the state file with .key for .json)"),
            OptionSpec("clipboard", help: "scan: read the pairing text from the clipboard (pbpaste, wl-paste, xclip or xsel)"),
            OptionSpec(
                "discover",
                help:
                    "scan, fetch, types: find the server by Bonjour (_healthsync._tcp, through avahi-browse), the one showing the paired certificate, instead of the address in the pairing text or the state file"
            ),
            OptionSpec(
                "types", value: "TYPES", repeatable: true,
                help: "fetch: the types to fetch, comma-separated (default: every type the server shares)"),
            .when("since", help: "fetch: samples starting at or after this time (RFC 3339) or this long ago (7d); default the beginning"),
            .when("until", help: "fetch: samples starting before this time, or this long ago; default no end"),
            OptionSpec(
                "per-page", value: "N", default: String(Client.pages.defaultPerPage),
                help: "fetch: samples asked for in one request (one page), at most \(Client.pages.maxPerPage)"),
            OptionSpec("limit", short: "n", value: "N", help: "fetch: at most N samples in all (default: every sample of the range)"),
            OptionSpec(
                "output", value: "FILE",
                help:
                    "fetch: write to FILE (mode 0600) instead of standard output, keeping the progress beside it (FILE.resume) for --resume"
            ),
            OptionSpec(
                "resume", help: "fetch: continue the fetch into --output FILE that was cut short, from the page after the last one written"),
            OptionSpec(
                "retries", value: "N", default: String(Client.defaultRetries),
                help:
                    "fetch, types: ask again after a 429 (as its Retry-After says), a 5xx or a failed connection, at most N times a request, waiting 1s, 2s, 4s ... 30s"
            ),
            OptionSpec(
                "format", short: "f", value: "FORMAT", choices: ["ndjson", "csv", "text"],
                help: "fetch: ndjson (default) or csv; types, discover: ndjson (default) or text; scan: text (default) or ndjson"),
            .duration(
                "timeout", short: "t", default: "30s", range: 1...3_600_000, help: "how long one request, or the Bonjour search, may take"),
            .now(),
        ],
        subcommands: [
            SubcommandSpec(
                "scan", operands: 0...1, "[PAYLOAD | -]", options: ["cert", "key", "clipboard", "discover", "format", "timeout"],
                choices: ["format": ["text", "ndjson"]],
                summary: "pair with a server from its pairing text (the QR code snapshot-delta pair prints)"),
            SubcommandSpec(
                "fetch",
                options: [
                    "types", "since", "until", "per-page", "limit", "output", "resume", "retries", "format", "discover", "timeout", "now",
                ],
                choices: ["format": ["ndjson", "csv"]],
                summary: "fetch the samples of the shared types in a range, page by page, as NDJSON or CSV"),
            SubcommandSpec(
                "types", options: ["format", "discover", "retries", "timeout"], choices: ["format": ["ndjson", "text"]],
                summary: "the types the server shares"),
            SubcommandSpec(
                "discover", options: ["format", "timeout"], choices: ["format": ["ndjson", "text"]],
                summary: "the Health Sync servers Bonjour finds on the local network"),
        ],
        examples: [
            "healthsync scan < pairing.json",
            "healthsync types --format text",
            "healthsync fetch --types HKQuantityTypeIdentifierHeartRate --since 2026-01-10T08:10:00Z --format csv",
        ],
        exitStatuses: [
            (.success, "done: paired, or every page of the range fetched"),
            (
                .failure,
                "an error: the server refused (401 not paired, 403 not shared or not local, 429 or 5xx after the retries), could not be reached or showed another certificate, or a fetch stopped before its range was complete (--resume continues one into --output)"
            ),
            (.usage, "the command line was wrong"),
            (.interrupted, "stopped by SIGINT"),
            (.terminated, "stopped by SIGTERM"),
        ],
        seeAlso: ["snapshot-delta(1)", "vitals-serve(7)", "vitals-records(7)", "avahi-browse(1)"]
    )

    /// Runs healthsync: the framework has already taken the subcommand and checked its options and operands.
    public static func run(_ options: ParsedOptions, _ context: ToolContext) throws -> VitalsKit.ExitStatus {
        let client = try Client(options: options, context: context)
        switch options.subcommand(as: Subcommand.self) {
        case .scan: return try client.scan(options.operands.first)
        case .fetch: return try client.fetch()
        case .types: return try client.types()
        case .discover: return try client.discover()
        }
    }

    /// The subcommands, as the table names them (a test holds the two to the same words).
    enum Subcommand: String, CaseIterable {
        case scan, fetch, types, discover
    }
}
