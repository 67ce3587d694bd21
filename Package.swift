// swift-tools-version:6.0
//
// The vitals suite: small command-line tools that read and write NDJSON.
// This file reads as the architecture: one table of tools, each naming the
// library that holds its logic and the C libraries that library reaches.
import PackageDescription

/// One row per tool: the executable, its `Core` library, and what the core uses.
/// The executable itself is one line (`main.swift`); every behaviour lives in the core.
let tools: [(tool: String, core: String, uses: [Target.Dependency])] = [
    // probe HTTP(S) targets concurrently; one sample per probe (libcurl via HTTPTransport)
    ("probe-http", "ProbeHTTPCore", ["ProbeKit", "HTTPTransport", "VitalsCrypto"]),
    // mark latency anomalies on rolling windows per monitor (no C)
    ("detect-anomaly", "DetectAnomalyCore", []),
    // keep samples in SQLite, or in ClickHouse over its HTTP interface, and answer OnlineTracker's views,
    // on the command line and as its API's FastCGI responder (SQLite via SQLiteStore; libcurl via HTTPTransport;
    // agents' token hashes via VitalsCrypto; the responder via Serving)
    ("store-samples", "StoreSamplesCore", ["SQLiteStore", "HTTPTransport", "VitalsCrypto", "Serving"]),
    // summarize a day of samples per service: trends, outages, correlated failures (no C)
    ("digest", "DigestCore", []),
    // ICMP echo and TCP connect probes, many on one thread; shares ProbeKit's target conventions and
    // scheduler with probe-http (TCP and TLS through HTTPTransport's connect-only mode)
    ("probe-ping", "ProbePingCore", ["ProbeKit", "HTTPTransport", "VitalsCrypto"]),
    // state changes into notifications: cooldowns, grouping, webhook/ntfy/chat/mail/push/desktop/exec channels
    // (libcurl via HTTPTransport; HMAC and ES256 via VitalsCrypto); OnlineTracker's device endpoints (Serving)
    ("notify", "NotifyCore", ["HTTPTransport", "VitalsCrypto", "Serving"]),
    // integrity snapshots of health records: chain, deltas, anomaly rules, the sample archive; Health Sync's
    // data endpoint (libxml2 via XMLStream for Apple Health exports, SQLite via SQLiteStore, SHA-256 via
    // VitalsCrypto, the responder via Serving)
    ("snapshot-delta", "SnapshotDeltaCore", ["XMLStream", "SQLiteStore", "VitalsCrypto", "Serving"]),
    // Health Sync's client, the seed's `healthsync` CLI on another machine: pairs from the QR text, fetches
    // the shared samples page by page over mutual TLS 1.3 pinned to the server's key (libcurl via
    // HTTPTransport; certificate fingerprints via VitalsCrypto); Bonjour through avahi-browse
    ("healthsync", "HealthSyncCore", ["HTTPTransport", "VitalsCrypto"]),
]

var targets: [Target] = [
    // C libraries, each behind a module map; a shim header gives typed wrappers for variadic C.
    .systemLibrary(name: "CCurl", path: "Sources/CCurl", pkgConfig: "libcurl",
                   providers: [.apt(["libcurl4-openssl-dev"]), .brew(["curl"])]),
    .systemLibrary(name: "CSQLite", path: "Sources/CSQLite", pkgConfig: "sqlite3",
                   providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]),
    .systemLibrary(name: "CCrypto", path: "Sources/CCrypto", pkgConfig: "libcrypto",
                   providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]),
    .systemLibrary(name: "CXML2", path: "Sources/CXML2", pkgConfig: "libxml-2.0",
                   providers: [.apt(["libxml2-dev"]), .brew(["libxml2"])]),

    // Shared by every tool, no C: records, NDJSON, JSON values, options, exit statuses, signals, time.
    .target(name: "VitalsKit"),
    // SHA-256, HMAC-SHA256, ES256 signatures, Base64: the only importer of CCrypto.
    .target(name: "VitalsCrypto", dependencies: ["CCrypto"]),
    // libxml2's SAX2 push parser, streaming: the only importer of CXML2.
    .target(name: "XMLStream", dependencies: ["CXML2"]),
    // SQLite connections and statements: the only importer of CSQLite.
    .target(name: "SQLiteStore", dependencies: ["CSQLite"]),
    // The curl multi engine (HTTP and HTTPS; SMTP for mail, its reply watcher in a file of its
    // own): the only importer of CCurl.
    .target(name: "HTTPTransport", dependencies: ["CCurl", "VitalsCrypto"]),
    // The web side of the tools with an API: a FastCGI responder (a private Unix socket, worker
    // threads, a supervisor that restarts its worker), one router and one JSON error writer, and a
    // thin CGI adapter. No C: the protocol is written here (see Responder.swift for why not libfcgi).
    .target(name: "Serving", dependencies: ["VitalsKit"]),
    .testTarget(name: "ServingTests", dependencies: ["Serving", "VitalsKit"]),
    // Shared by the two probes: run options, scheduler, tally, target lists, ids, verdicts, a sample's leading fields, the network view.
    .target(name: "ProbeKit", dependencies: ["VitalsKit", "VitalsCrypto", "HTTPTransport"]),

    // A scripted HTTP server for tests and the demo: healthy, slow, failing, flapping and hostile endpoints.
    .target(name: "FixtureServer", dependencies: ["VitalsKit"]),
    .executableTarget(name: "vitals-fixture-server", dependencies: ["FixtureServer", "VitalsKit"]),

    .testTarget(name: "VitalsKitTests", dependencies: ["VitalsKit", "VitalsCrypto"]),
    .testTarget(name: "ProbeKitTests", dependencies: ["ProbeKit", "VitalsKit", "HTTPTransport", "VitalsCrypto"]),
]

for row in tools {
    targets.append(.target(name: row.core, dependencies: ["VitalsKit"] + row.uses))
    targets.append(.executableTarget(name: row.tool, dependencies: [.target(name: row.core)]))
    targets.append(.testTarget(name: row.core + "Tests", dependencies: [.target(name: row.core), "VitalsKit"] + row.uses))
}

// Shell completions (bash, zsh, fish) written from the tools' option tables, so they never drift from --help;
// vitals-completions runs at install and packaging time (scripts/install) and is not installed itself.
targets.append(.target(name: "CompletionScripts", dependencies: ["VitalsKit"]))
targets.append(.executableTarget(name: "vitals-completions", dependencies: ["CompletionScripts"] + tools.map { .target(name: $0.core) }))

// End-to-end tests run the built executables in real pipes against real local servers.
targets.append(.testTarget(
    name: "EndToEndTests",
    dependencies: ["FixtureServer", "VitalsKit"] + tools.map { .target(name: $0.core) } + tools.map { .target(name: $0.tool) }
        + [.target(name: "vitals-fixture-server"), .target(name: "vitals-completions")],
    resources: [.copy("Fixtures")]))

let package = Package(
    name: "vitals",
    platforms: [.macOS(.v14)],
    products: tools.map { .executable(name: $0.tool, targets: [$0.tool]) }
        + [.executable(name: "vitals-fixture-server", targets: ["vitals-fixture-server"]),
           .executable(name: "vitals-completions", targets: ["vitals-completions"])],
    targets: targets,
    swiftLanguageModes: [.v6]
)
