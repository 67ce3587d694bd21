import Foundation
import VitalsKit

/// `cgi`: Health Sync's endpoints as a CGI program (nginx + fcgiwrap run it once a request,
/// with no arguments; `VitalsCommand.main` then runs this subcommand).
extension Run {
    /// The largest body read (nginx's client_max_body_size refuses larger ones first).
    static let cgiMaxBody = 1 << 20

    func cgi() throws -> VitalsKit.ExitStatus {
        CGIRequest.serve(environment: context.environment, input: context.streams.input, output: context.streams.output,
                         diagnostics: context.diagnostics) { request in
            try HealthSyncAPI.handle(request, archivePath: path, now: now, diagnostics: context.diagnostics)
        }
    }
}
