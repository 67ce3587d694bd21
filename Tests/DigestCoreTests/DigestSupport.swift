import Testing
import VitalsKit

@testable import DigestCore

/// Samples for digest's core, written as the records the tools read, and the facts digest
/// makes of them in process: the shared reader (`SampleRowReader`), the one pass
/// (`Aggregator`) and the facts (`DigestFacts.build`), as `DigestCommand.run` chains them.
enum DigestInput {
    /// 2026-01-27T00:00:00Z.
    static let day = Timestamp.parse("2026-01-27T00:00:00Z")!

    /// `HH:MM[:SS]` on 2026-01-27, UTC, in milliseconds.
    static func at(_ clock: String) -> Int64 { Timestamp.parse("2026-01-27T\(clock.count == 5 ? clock + ":00" : clock)Z")! }

    /// One sample line at `HH:MM[:SS]` on 2026-01-27 (UTC); `latency` as JSON (a number or null);
    /// `extra` adds fields (`,"name":"API"`).
    static func line(_ monitor: String, _ clock: String, _ status: String, latency: String = "null", extra: String = "") -> String {
        let time = clock.count == 5 ? clock + ":00" : clock
        return #"{"type":"sample","monitor":"\#(monitor)","at":"2026-01-27T\#(time)Z","status":"\#(status)","#
            + #""latency_ms":\#(latency)\#(extra)}"#
    }

    /// The facts of `lines`, read in the order given (of one place only with `agent`, as `--agent`).
    static func facts(
        _ lines: [String], now: Int64? = nil, window: Int64 = 86_400_000, bucket: Int64 = 300_000,
        trendSamples: Int = 10, maxServices: Int = 20, quorum: Quorum = .majority, agent: String? = nil
    ) throws -> DigestFacts {
        let services = ServiceTable()
        var reader = SampleRowReader(services: services, notAfter: now, onlyPlace: agent)
        let aggregator = Aggregator(
            services: services, window: window, now: now, trendSamples: trendSamples, bucket: bucket, quorum: quorum)
        for line in lines {
            let bytes = Array(line.utf8)
            switch LineBytes.with(bytes, { reader.read($0) }) {
            case .sample(let row): aggregator.add(row)
            case .skipped: break
            case .invalid(let problem): Issue.record("not a valid sample: \(line): \(problem.message)")
            }
        }
        return DigestFacts.build(
            try aggregator.finish(), window: window, bucket: bucket, trendSamples: trendSamples,
            maxServices: maxServices, quorum: quorum, agent: agent)
    }

    /// The facts of one service among `facts`.
    static func service(_ facts: DigestFacts, _ monitor: String) throws -> ServiceFacts {
        try #require(facts.services.first { $0.monitor == monitor })
    }
}
