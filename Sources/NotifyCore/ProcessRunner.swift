import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A command started for a delivery: no shell, `VitalsKit.ChildProcess` underneath, its
/// standard output thrown away, its standard error kept (the first 2 KiB) for the message.
/// Polled beside the HTTP deliveries, never waited on; past its deadline its process group
/// gets SIGTERM, and SIGKILL a second later.
final class RunningProcess {
    private let child: ChildProcess?
    private(set) var outcome: ProcessOutcome?

    private init(child: ChildProcess?, outcome: ProcessOutcome?) {
        self.child = child
        self.outcome = outcome
    }

    /// Starts `request` with `timeoutMs` to finish; a command that cannot start comes back
    /// finished, with the reason.
    static func start(_ request: ProcessRequest, environment: [String: String], timeoutMs: Int64) -> RunningProcess {
        var merged = environment
        for (key, value) in request.environment { merged[key] = value }
        do {
            let child = try ChildProcess(
                [request.executable] + request.arguments, environment: merged, input: request.input,
                output: .discard, error: .capture(limit: 2048), timeoutMs: timeoutMs, graceMs: 1000)
            return RunningProcess(child: child, outcome: nil)
        } catch {
            return RunningProcess(child: nil, outcome: ProcessOutcome(exitStatus: nil, error: error.description))
        }
    }

    /// Moves it along without blocking; true once it ended (`outcome` is set).
    @discardableResult
    func poll() -> Bool {
        if outcome != nil { return true }
        guard let child, child.pump(), let result = child.result else { return false }
        let stderrText = RunningProcess.summary(result.error)
        switch result.termination {
        case .exited(let status):
            outcome = ProcessOutcome(exitStatus: Int(status), error: stderrText)
        case .signaled(let signal):
            let words = result.timedOut ? "timed out, stopped" : "killed by signal \(signal)"
            outcome = ProcessOutcome(exitStatus: nil, error: words + (stderrText.map { ": " + $0 } ?? ""))
        }
        return true
    }

    /// Its standard error on one line: lines joined with " / ", at most 300 characters.
    private static func summary(_ bytes: [UInt8]) -> String? {
        let text = String(decoding: bytes, as: UTF8.self)
            .split(separator: "\n").map { String($0).trimmingSpaces }.filter { !$0.isEmpty }.joined(separator: " / ")
        return text.isEmpty ? nil : String(text.prefix(300))
    }
}
