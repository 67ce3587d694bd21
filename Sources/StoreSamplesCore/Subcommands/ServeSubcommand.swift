import Serving
import VitalsKit

/// `serve` and `cgi`: OnlineTracker's API behind nginx, as a FastCGI responder that stays up
/// (`serve`), or one request as a CGI program (`cgi`), both over `OnlineTrackerAPI`.
extension StoreRun {
    /// The API over the store `--db` names.
    private var api: OnlineTrackerAPI {
        OnlineTrackerAPI(
            database: path, tokens: tokensFile(), autoApprove: options.has("auto-approve"), quorum: quorum, clock: clock,
            openStore: Self.opener(database: database, clickHouse: clickHouse, waitMs: waitMs, now: now))
    }

    func serve() throws -> VitalsKit.ExitStatus {
        let api = self.api
        let errorFD = context.streams.error
        return try Serve.run(options, context, what: "OnlineTracker's API (\(path))", limits: OnlineTrackerAPI.limits) {
            OnlineTrackerWorker(api: api, log: { Streams.writeAll(errorFD, "store-samples: \($0)\n") })
        }
    }

    func cgi() -> VitalsKit.ExitStatus {
        let diagnostics = context.diagnostics
        let worker = OnlineTrackerWorker(api: api, log: { diagnostics.error($0) })
        return CGIAdapter.serve(
            environment: context.environment, input: context.streams.input, output: context.streams.output,
            maxBody: OnlineTrackerAPI.limits.maxBody, worker.answer)
    }
}
