import Foundation
import Serving
import VitalsKit

/// `serve` and `cgi`: Health Sync's endpoints behind nginx, as a FastCGI responder that stays up
/// (`serve`), or one request as a CGI program (`cgi`), both over `HealthSyncAPI`.
extension Run {
    func serve() throws -> VitalsKit.ExitStatus {
        let path = self.path
        let now = self.now
        let errorFD = context.streams.error
        let refusals: @Sendable () -> LineSink = {
            RefusalLog(archivePath: path, now: now, diagnostics: Diagnostics(tool: "snapshot-delta", fd: errorFD))
        }
        return try Serve.run(
            options, context, what: "Health Sync (\(path))", limits: HealthSyncAPI.limits,
            lines: ("refusal-log", refusals)
        ) {
            HealthSyncWorker(archivePath: path, now: now, errorFD: errorFD)
        }
    }

    func cgi() throws -> VitalsKit.ExitStatus {
        let diagnostics = context.diagnostics
        return CGIAdapter.serve(
            environment: context.environment, input: context.streams.input, output: context.streams.output,
            maxBody: HealthSyncAPI.limits.maxBody
        ) { request in
            HealthSyncAPI.handle(request, archivePath: path, now: now, diagnostics: diagnostics)
        }
    }
}

/// A worker thread's answerer: diagnostics of its own (the archive's log checks report there).
final class HealthSyncWorker: RequestAnswerer {
    let archivePath: String
    let now: @Sendable () -> Int64
    let diagnostics: Diagnostics

    init(archivePath: String, now: @escaping @Sendable () -> Int64, errorFD: Int32) {
        self.archivePath = archivePath
        self.now = now
        self.diagnostics = Diagnostics(tool: "snapshot-delta", fd: errorFD)
    }

    func answer(_ request: APIRequest) -> APIResponse {
        HealthSyncAPI.handle(request, archivePath: archivePath, now: now, diagnostics: diagnostics)
    }
}
