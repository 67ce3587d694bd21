import Foundation
import VitalsKit

/// The integer ids of store-samples' views, for Apple pushes of monitors whose samples came
/// without one (`monitor_id` is added by store-samples to the samples it passes on; before it in
/// a pipe, or without it, there is none). With `--db`, the store is asked once, when a push first
/// needs an id, through store-samples itself (`monitors --format ndjson`, the store named in its
/// environment as VITALS_DB): the reader that numbers monitors is the one asked, whatever the
/// store. A monitor the store does not list yet is asked again at most every two seconds.
/// A push that still has no id says why, once per monitor and run.
final class MonitorIDs {
    /// The store, as `--db` names it; nil without the option.
    private let database: String?
    private let environment: [String: String]
    private let diagnostics: Diagnostics
    private var known: [String: Int] = [:]
    private var readAtMs: Int64?
    private var warned: Set<String> = []

    /// How long a store's list is trusted before a missing monitor asks again.
    static let rereadAfterMs: Int64 = 2000

    init(database: String?, environment: [String: String], diagnostics: Diagnostics) {
        self.database = database
        self.environment = environment
        self.diagnostics = diagnostics
    }

    /// The id of `monitor` in the store, or nil (and a warning, the first time) when there is none.
    func id(of monitor: String) -> Int? {
        if let id = known[monitor] { return id }
        if database != nil, readAtMs.map({ Clock.monotonicMilliseconds() - $0 >= MonitorIDs.rereadAfterMs }) ?? true {
            read()
            if let id = known[monitor] { return id }
        }
        if warned.insert(monitor).inserted {
            diagnostics.warning(
                "the Apple push for monitor '\(monitor)' carries no monitor_id, so a tap opens the app but no monitor: "
                    + (database.map { "the store \(Redaction.url($0)) lists no such monitor (yet)" }
                        ?? "its samples did not pass through store-samples, which numbers monitors (put it before notify, or give notify --db with its store)")
            )
        }
        return nil
    }

    /// Asks store-samples for the store's monitors; a failure is said once, and the ids stay unknown.
    private func read() {
        guard let database else { return }
        readAtMs = Clock.monotonicMilliseconds()
        var environment = self.environment
        environment["VITALS_DB"] = database
        let result: ChildProcess.Result
        do {
            result = try ChildProcess.run(
                [MonitorIDs.storeSamples(), "monitors", "--format", "ndjson"], environment: environment,
                output: .capture(limit: 256 << 20), timeoutMs: 30_000)
        } catch {
            diagnostics.warning("--db: cannot ask store-samples for the monitors' ids: \(error.reason)")
            return
        }
        guard result.succeeded else {
            let words = String(decoding: result.error, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
            diagnostics.warning("--db: store-samples could not list the monitors: \(words)")
            return
        }
        for line in result.output.split(separator: 0x0A) {
            guard let object = try? JSONParser.parse(Array(line)).objectValue, let monitor = object["monitor"]?.stringValue,
                let id = object["id"]?.intValue
            else { continue }
            known[monitor] = id
        }
    }

    /// store-samples beside this executable (the suite is installed together), else from PATH.
    static func storeSamples() -> String {
        if let own = Bundle.main.executablePath {
            let beside = (own as NSString).deletingLastPathComponent + "/store-samples"
            if FileManager.default.isExecutableFile(atPath: beside) { return beside }
        }
        return "store-samples"
    }
}
