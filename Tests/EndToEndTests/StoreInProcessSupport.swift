import Foundation
import VitalsKit

@testable import StoreSamplesCore

/// Ingests `lines` into `store` as `store-samples ingest` and the API do (through `Ingester`),
/// at the fixed time `now`; returns how many samples were stored and the line errors.
@discardableResult
func ingestInProcess(_ store: SampleStore, _ lines: [String], now: Int64, retention: Retention = Retention(days: nil)) throws -> (
    stored: Int, errors: [String]
) {
    let diagnostics = Diagnostics(tool: "store-samples", capture: true)
    let devNull = open("/dev/null", O_WRONLY | O_CLOEXEC)
    defer { close(devNull) }
    let ingester = Ingester(
        store: store, retention: retention, output: RecordWriter(fd: devNull), passThrough: false,
        diagnostics: diagnostics, now: { now })
    _ = ingester.ingest(LineReader(bytes: Array((lines.joined(separator: "\n") + "\n").utf8), source: "test"))
    if let failure = ingester.failure { throw failure }
    return (ingester.stored, diagnostics.lineErrors.map(\.message))
}

/// Every view the API answers, as bytes, over `store` at `now`: what a responder's worker would
/// send for overview, monitors, agents, and each monitor's record, history and results.
func everyViewInProcess(_ store: SampleStore, now: Int64) throws -> [String: String] {
    let views = Views(store: store, now: now)
    var answers: [String: String] = [
        "overview": String(decoding: try views.overview().encoded(), as: UTF8.self),
        "monitors": String(decoding: JSONValue.array(try views.monitors()).encoded(), as: UTF8.self),
        "agents": String(decoding: JSONValue.array(try views.agents()).encoded(), as: UTF8.self),
        "stats": String(decoding: try views.stats(from: now - 86_400_000).encoded(), as: UTF8.self),
    ]
    for record in try store.monitors() {
        var history: [UInt8] = []
        try views.history(record, spanMs: 24 * 3_600_000, separator: UInt8(ascii: ","), into: &history)
        answers["monitor \(record.monitor)"] = String(decoding: try views.monitor(record).encoded(), as: UTF8.self)
        answers["history \(record.monitor)"] = String(decoding: history, as: UTF8.self)
        answers["results \(record.monitor)"] = String(
            decoding: try views.results(record, spanMs: 24 * 3_600_000, page: Page(number: 1, size: 100)).encoded(), as: UTF8.self)
    }
    return answers
}

/// A sample line for the cache tests: `monitor` checked `minute` minutes after 11:00Z on
/// 2026-02-01, with the extra fields given (a name, an agent).
func cacheSample(_ monitor: String, minute: Int, _ extra: String = "") -> String {
    #"{"type":"sample","monitor":"\#(monitor)","at":"2026-02-01T11:\#(String(format: "%02d", minute)):00.000Z","status":"up","latency_ms":\#(minute).5\#(extra)}"#
}

/// 2026-02-01T12:00:00Z, the cache tests' now.
let cacheNow: Int64 = 1_769_947_200_000
