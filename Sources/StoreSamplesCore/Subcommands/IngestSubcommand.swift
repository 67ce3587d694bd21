import Foundation
import VitalsKit

/// `ingest` (the default): store the samples of the FILEs or standard input, in the store `--db`
/// names or, for an agent, through its remote store and spool.
extension StoreRun {
    func ingest() throws -> VitalsKit.ExitStatus {
        if let remote { return try ingestRemote(remote) }
        let keepPerMonitor =
            options.has("keep-per-monitor") ? try options.integer("keep-per-monitor", default: 0, in: 1...100_000_000) : nil
        let keepMs = try options.duration(defaulted: "keep")
        guard keepMs % 86_400_000 == 0, keepMs / 86_400_000 <= 100_000 else {
            throw UsageError(
                "--keep wants whole days up to 100000d (30d, 2w, 400d), or 0 for forever, not '\(options.value("keep") ?? "")'")
        }
        let keepDays = Int(keepMs / 86_400_000)
        if options.has("auto-approve"), !options.has("remote") {
            throw UsageError("--auto-approve applies to samples from elsewhere: add --remote (your own samples count at once)")
        }
        let approved =
            options.value("approve-agents").map {
                $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            } ?? []
        let policy = IngestPolicy(
            remote: options.has("remote"), autoApprove: options.has("auto-approve"), approvedAgents: approved, quorum: quorum)
        if clickHouse != nil, keepPerMonitor != nil {
            throw UsageError("--keep-per-monitor is for a SQLite file; a ClickHouse store keeps whole months (--keep)")
        }
        let store = try openStore(create: true, policy: policy)
        try store.approveListedAgents(now: now)
        let ingester = Ingester(
            store: store, retention: Retention(perMonitor: keepPerMonitor, days: keepDays == 0 ? nil : keepDays),
            output: context.output, passThrough: !options.has("quiet"),
            diagnostics: context.diagnostics, now: clock)
        feed(ingester)
        return context.diagnostics.errorCount > 0 ? .failure : .success
    }

    /// An agent's ingest: the samples go to the server through the spool.
    private func ingestRemote(_ remote: RemoteLocation) throws -> VitalsKit.ExitStatus {
        RemoteSampleWriter.mapLargeBuffersAlone()
        // The spool's age goes by the clock: --now moves the views' windows, not the files' age.
        let spoolBytes = try options.size("spool-size", default: RemoteSampleWriter.defaultSpoolBytes)
        guard spoolBytes >= 1 << 20 else { throw UsageError("--spool-size wants 1M or more (a batch is up to 512K)") }
        let writer = try RemoteSampleWriter(
            location: remote,
            spoolFolder: try options.value("spool") ?? StoreSamplesCommand.defaultSpoolFolder(context.environment),
            maxBytes: Int64(spoolBytes), maxAgeMs: try options.duration(defaulted: "spool-age"), now: Clock.wallMilliseconds(),
            diagnostics: context.diagnostics)
        feed(
            Ingester(
                store: writer, retention: Retention(perMonitor: nil, days: nil), output: context.output,
                passThrough: !options.has("quiet"), diagnostics: context.diagnostics, now: clock))
        let status = writer.finish(waitMs: options.has("wait") ? waitMs : RemoteSampleWriter.defaultWaitMs)
        return context.diagnostics.errorCount > 0 ? status.worst(.failure) : status
    }

    /// Reads every input into `ingester`, with progress on a terminal for files (a stream from a
    /// probe is a pipe: its own tool shows how it goes), until a commit fails or a stop arrives.
    private func feed(_ ingester: Ingester) {
        var keepGoing = true
        let inputs = Inputs(options.operands, stdin: context.streams.input)
        let total = inputs.totalBytes
        let progress = context.progressLine(options, auto: total != nil)
        var bytesBefore: Int64 = 0
        func progressText(_ bytes: Int64) -> String {
            "store-samples: "
                + ProgressText.reading(
                    bytes: bytes, of: total, items: ingester.stored, noun: "samples",
                    seconds: progress?.elapsedSeconds ?? 0)
        }
        inputs.forEach(diagnostics: context.diagnostics) { reader in
            if let progress {
                reader.onRead = { [unowned reader] in progress.update { progressText(bytesBefore + reader.bytesRead) } }
            }
            if keepGoing { keepGoing = ingester.ingest(reader) }
            bytesBefore += reader.bytesRead
        }
        progress?.finish(progressText(bytesBefore))
        if let failure = ingester.failure { context.diagnostics.error("\(failure)") }
    }
}
