import Foundation
import VitalsKit

/// The input formats `take` reads.
enum InputFormat: String, Sendable {
    /// Decided by the first byte: `<` is an Apple Health export, `{` NDJSON.
    case auto
    /// An Apple Health `export.xml`.
    case appleHealth = "apple-health"
    /// `health_record` and `type_status` lines.
    case ndjson
}

/// How `take` is to work.
struct TakeSettings {
    /// The input format.
    var format: InputFormat = .auto
    /// The monitored types (nil: every type in the input).
    var registry: [String]?
    /// The time zone of the yearly counts.
    var timezone: String = "UTC"
    /// What asked for the snapshot.
    var trigger = "manual"
    /// `--post-restore`: the snapshot is a baseline after a restore.
    var postRestore = false
    /// Keep the samples themselves.
    var archiveSamples = true
    /// The anomaly thresholds.
    var rules = AnomalyRules()
    /// A chain start with more records than this is taken as a post-restore baseline.
    var restoreRecords: Int64 = 1000
    /// The device id file.
    var deviceIDPath: String = ""
    /// The clock.
    var now: () -> Int64 = { Clock.wallMilliseconds() }
    /// HealthProbe's observer debounce: a take whose trigger is not `manual` is skipped while
    /// the latest snapshot is younger than this, ms (nil: never skipped).
    var debounceMs: Int64?
    /// A progress line on the terminal, when one is wanted: the bytes read, the records, the rate and the time left.
    var progress: ProgressLine?

    /// The defaults.
    init() {}
}

/// A take skipped by the debounce: the latest snapshot is younger than the window.
struct TakeDebounced: Error {
    /// The latest snapshot, which this take would have repeated.
    let latest: Snapshot
    /// The window, ms.
    let windowMs: Int64
}

/// What a take produced.
struct TakeResult {
    /// The new snapshot.
    var snapshot: Snapshot
    /// The delta from the previous snapshot (nil for a chain start).
    var delta: Delta?
    /// The anomalies found.
    var anomalies: [AnomalyRecord]
}

/// `take`: read the records, build the snapshot, link it, compute the delta, detect anomalies,
/// archive the samples, all in one transaction with its operation log entry. Any error in the
/// input means no snapshot at all: a partial one would look like a mass deletion.
final class Taker {
    private let archive: Archive
    private let settings: TakeSettings
    private let diagnostics: Diagnostics

    /// A taker writing into `archive`.
    init(archive: Archive, settings: TakeSettings, diagnostics: Diagnostics) {
        self.archive = archive
        self.settings = settings
        self.diagnostics = diagnostics
    }

    /// Takes a snapshot of the inputs; nil when none was taken (the reasons were reported).
    func take(_ operands: [String], stdin: Int32) throws -> TakeResult? {
        let device = try DeviceIdentity.load(path: settings.deviceIDPath)
        guard let calendar = YearCalendar(identifier: settings.timezone) else {
            throw ToolError("unknown time zone \(settings.timezone)")
        }
        let now = settings.now()
        // Checked before reading (an export can be large) and again under the write lock.
        try checkDebounce(latest: try archive.latestSnapshot(), now: now)
        let id = UUID().uuidString.lowercased()
        let paths = operands.isEmpty ? ["-"] : operands
        let tally = Tally(calendar: calendar, registry: settings.registry)

        // With samples, the write lock is held from the first sample on: the upserts and the
        // snapshot commit together or not at all.
        var writer: SampleArchiveWriter?
        var seq: Int64 = 0
        if settings.archiveSamples {
            try archive.begin()
            do {
                seq = try archive.insertPlaceholder(id: id, createdAt: now, deviceID: device.id, source: paths.joined(separator: ", "))
                writer = try SampleArchiveWriter(archive: archive, seq: seq, now: now)
            } catch {
                archive.rollback()
                throw archive.translate(error)
            }
        }
        let sink = SampleSink(tally: tally, archive: writer, diagnostics: diagnostics)
        let totalBytes = Inputs.totalBytes(paths, stdin: stdin)
        var bytesBefore: Int64 = 0
        func progressText(_ bytes: Int64) -> String {
            "snapshot-delta: "
                + ProgressText.reading(
                    bytes: bytes, of: totalBytes, items: Int(tally.recordCount), noun: "records",
                    seconds: settings.progress?.elapsedSeconds ?? 0)
        }
        defer { settings.progress?.finish(progressText(bytesBefore)) }
        var exportVersion: String?
        var exportDate: Int64?
        var ok = true
        var exports = 0
        do {
            for path in paths {
                if Signals.stopRequested { break }
                let input: LineReader
                do {
                    // Large reads: an Apple Health export is read in chunks for libxml2.
                    input = try LineReader.open(path, stdin: stdin, chunkSize: 1 << 20)
                } catch {
                    diagnostics.error(error.message)
                    ok = false
                    continue
                }
                if let progress = settings.progress {
                    let before = bytesBefore
                    input.onRead = { [unowned input] in progress.update { progressText(before + input.bytesRead) } }
                }
                defer { bytesBefore += input.bytesRead }
                var format = settings.format
                if format == .auto {
                    switch input.peekFirstSignificantByte() {
                    case UInt8(ascii: "<")?: format = .appleHealth
                    case UInt8(ascii: "{")?: format = .ndjson
                    case nil:
                        if let problem = input.readError {
                            diagnostics.error("error reading \(input.source): \(problem)")
                            ok = false
                        }
                        continue  // an empty input holds no records
                    default:
                        diagnostics.error(
                            "\(input.source): neither an Apple Health export (<) nor NDJSON ({); name the format with --format")
                        ok = false
                        continue
                    }
                }
                if format == .appleHealth {
                    exports += 1
                    if exports > 1 {
                        diagnostics.error("\(input.source): one snapshot reads one Apple Health export; take another snapshot for this one")
                        ok = false
                        continue
                    }
                    let reader = AppleHealthReader(sink: sink, source: input.source, diagnostics: diagnostics)
                    if try !reader.read(input) { ok = false }
                    exportVersion = reader.exportVersion
                    exportDate = reader.exportDate
                    for (name, count) in reader.uncounted.sorted(by: { $0.key < $1.key }) {
                        diagnostics.warning(
                            "\(input.source): \(count) <\(name)> element\(count == 1 ? "" : "s") not counted (not a sample type snapshot-delta knows)"
                        )
                    }
                } else {
                    try HealthRecordReader(sink: sink, diagnostics: diagnostics).read(input)
                    if let problem = input.readError {
                        diagnostics.error("error reading \(input.source): \(problem)")
                        ok = false
                    }
                }
                sink.summarizeErrors(source: input.source)
            }
        } catch {
            archive.rollback()
            throw archive.translate(error)
        }
        // Read: what is left (the delta, the anomalies, the commit) takes a moment on a large export.
        settings.progress?.draw(progressText(bytesBefore) + "; saving")
        if let stop = Signals.stopStatus {
            archive.rollback()
            diagnostics.note("stopped (\(stop == .interrupted ? "SIGINT" : "SIGTERM")): no snapshot taken")
            return nil
        }
        if !ok || sink.recordErrors > 0 {
            archive.rollback()
            diagnostics.error("no snapshot taken: the input has errors (a partial snapshot would look like deleted data)")
            return nil
        }
        if tally.ignoredRecords > 0 {
            diagnostics.note("\(tally.ignoredRecords) records of \(tally.ignoredTypes.count) types outside the registry were not counted")
        }

        let (types, corrections) = tally.typeCounts()
        for correction in corrections {
            diagnostics.warning(
                "\(correction.typeIdentifier) is \(correction.quality.rawValue) but \(correction.recordsRead) records were read: its count is -1 (the count/quality coherence rule)"
            )
        }

        do {
            if !settings.archiveSamples {
                try archive.begin()
                seq = try archive.insertPlaceholder(id: id, createdAt: now, deviceID: device.id, source: paths.joined(separator: ", "))
            }
            let result = try finish(
                seq: seq, id: id, now: now, types: types, device: device, paths: paths,
                exportVersion: exportVersion, exportDate: exportDate, recordCount: tally.recordCount,
                writer: writer)
            try archive.commit()
            try archive.verifyLogEntry(
                result.logID, operation: "take", snapshotIDs: [id], detail: result.logDetail, at: now,
                diagnostics: diagnostics)
            return result.take
        } catch {
            archive.rollback()
            throw archive.translate(error)
        }
    }

    /// Throws `TakeDebounced` when this take is not manual and `latest` is younger than the window.
    private func checkDebounce(latest: Snapshot?, now: Int64) throws {
        guard let window = settings.debounceMs, settings.trigger != "manual", let latest, now - latest.createdAt < window else { return }
        throw TakeDebounced(latest: latest, windowMs: window)
    }

    private func finish(
        seq: Int64, id: String, now: Int64, types: [TypeCount], device: DeviceIdentity, paths: [String],
        exportVersion: String?, exportDate: Int64?, recordCount: Int64,
        writer: SampleArchiveWriter?
    ) throws -> (take: TakeResult, logID: Int64, logDetail: JSONObject) {
        let previous = try archive.latestSnapshot()
        try checkDebounce(latest: previous, now: now)
        let finished = try archive.snapshotCount() - 1  // without this take's placeholder
        if let stored = try archive.meta("device_id"), stored != device.id {
            diagnostics.warning("this archive was started with device id \(stored); the device id file holds \(device.id)")
        } else if try archive.meta("device_id") == nil {
            try archive.setMeta("device_id", device.id)
        }
        let quality = Quality.aggregate(types.map(\.quality))
        var snapshot = Snapshot(
            seq: seq, id: id, createdAt: now, trigger: settings.trigger, quality: quality, checksum: Hashing.checksum(types),
            typeSetHash: Hashing.typeSetHash(settings.registry ?? types.map(\.typeIdentifier)),
            registry: settings.registry?.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) },
            timezone: settings.timezone, exportVersion: exportVersion, exportDate: exportDate,
            source: paths.map { $0 == "-" ? "<stdin>" : $0 }.joined(separator: ", "), previousSnapshotID: previous?.id,
            isChainStart: previous == nil, isPostRestore: false, isPostRestoreInferred: false, isPostRestoreForwarded: false,
            postRestoreSuppressedDeltaID: nil, deviceID: device.id, recoveredDeviceID: finished == 0 && device.existed,
            samplesArchived: writer != nil, recordCount: recordCount, types: types)

        // Post-restore: stated, inferred (a full deny followed by a complete snapshot, or a new
        // chain that starts with many records), or forwarded from a predecessor whose token
        // could not be used because detection does not run on this pair.
        let afterFullDeny = previous?.quality == .unauthorized && quality == .complete
        let largeChainStart = previous == nil && recordCount > settings.restoreRecords
        let forwarded =
            previous.map {
                $0.isPostRestore && $0.postRestoreSuppressedDeltaID == nil
                    && !($0.quality == .complete && quality == .complete)
            } ?? false
        snapshot.isPostRestoreInferred = afterFullDeny || largeChainStart
        snapshot.isPostRestoreForwarded = forwarded
        snapshot.isPostRestore = settings.postRestore || snapshot.isPostRestoreInferred || forwarded
        try archive.saveSnapshot(snapshot)

        var delta: Delta?
        var anomalies: [AnomalyRecord] = []
        if let previous {
            var built = DeltaBuilder.delta(id: UUID().uuidString.lowercased(), from: previous, to: snapshot, at: now)
            let detection = AnomalyDetector.detect(
                previous: previous, current: snapshot, delta: built, rules: settings.rules,
                at: now, newID: { UUID().uuidString.lowercased() })
            if detection.consumedPostRestoreToken {
                built.postRestoreSuppressed = true
                try archive.setSuppressionToken(snapshotID: previous.id, deltaID: built.id)
            }
            try archive.saveDelta(built)
            try archive.saveAnomalies(detection.anomalies)
            delta = built
            anomalies = detection.anomalies
        }

        var detail = JSONObject([
            JSONField("snapshot_id", .string(id)), JSONField("seq", .number(String(seq))),
            JSONField("quality", .string(quality.rawValue)), JSONField("record_count", .number(String(recordCount))),
            JSONField("source", .string(snapshot.source)), JSONField("delta_id", Records.string(delta?.id)),
            JSONField("anomalies", .integer(anomalies.count)),
        ])
        if let writer {
            let registry = settings.registry
            let marks = try writer.mark { identifier in
                if let type = snapshot.type(identifier) { return type.quality == .complete }
                return registry == nil
            }
            detail["samples"] = .object(
                JSONObject([
                    JSONField("read", .number(String(writer.seen))), JSONField("new", .number(String(try writer.newCount()))),
                    JSONField("reappeared", .number(String(marks.reappeared))),
                    JSONField("disappeared", .number(String(marks.disappeared))),
                ]))
        }
        let logID = try archive.appendLog("take", snapshotIDs: [id], detail: detail, at: now)
        return (TakeResult(snapshot: snapshot, delta: delta, anomalies: anomalies), logID, detail)
    }
}
