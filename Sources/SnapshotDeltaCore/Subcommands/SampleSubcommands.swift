import Foundation
import VitalsKit

/// `samples` and `disappeared`: querying the archived samples.
extension Run {
    func samples() throws -> VitalsKit.ExitStatus {
        guard let type = options.value("type"), !type.isEmpty else { throw UsageError("samples wants --type TYPE") }
        let format = try options.choice("format")
        let time = now()
        let page = try options.page(SampleQuery.pages)
        let query = SampleQuery(
            types: [type], from: try options.time("since", now: time), to: try options.time("until", now: time),
            offset: page.offset, limit: page.size)
        let archive = try Archive(path: path, create: false)
        if format == "csv" { try writer.write(Records.csvColumns.joined(separator: ",")) }
        // The access is logged with what it returned (Health Sync's audit log); the API runs the same fetch.
        _ = try archive.fetchSamples(query, operation: "samples", at: now, diagnostics: context.diagnostics) { sample in
            if format == "csv" { try writer.write(Records.csvRow(sample)) } else { try write(Records.sample(sample)) }
        }
        return context.diagnostics.errorCount > 0 ? .failure : .success
    }

    func disappeared(_ first: String, _ second: String) throws -> VitalsKit.ExitStatus {
        let format = try options.choice("format")
        let archive = try Archive(path: path, create: false)
        let a = try archive.resolve(first)
        let b = try archive.resolve(second)
        guard a.seq < b.seq else { throw ToolError("disappeared wants the older snapshot first (\(a.id) is not older than \(b.id))") }
        for snapshot in [a, b] where !snapshot.samplesArchived {
            throw ToolError("snapshot \(snapshot.id) was taken with --no-samples: its samples are not in the archive")
        }
        if format == "csv" { try writer.write(Records.csvColumns.joined(separator: ",")) }
        let returned = try archive.disappeared(from: a.seq, to: b.seq) { sample in
            if format == "csv" { try writer.write(Records.csvRow(sample)) } else { try write(Records.sample(sample)) }
        }
        let detail = JSONObject([
            JSONField("from_snapshot_id", .string(a.id)), JSONField("to_snapshot_id", .string(b.id)),
            JSONField("returned", .integer(returned)),
        ])
        _ = try archive.withLoggedChange("disappeared", snapshotIDs: [a.id, b.id], at: now(), diagnostics: context.diagnostics) {
            ((), detail)
        }
        return context.diagnostics.errorCount > 0 ? .failure : .success
    }
}
