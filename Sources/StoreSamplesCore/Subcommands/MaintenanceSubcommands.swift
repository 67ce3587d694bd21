import Foundation
import VitalsKit

/// Keeping the store: `agents` (list, approve, reject, token), `clear`, `export` and `metrics`.
extension StoreRun {
    func agents() throws -> VitalsKit.ExitStatus {
        try emitList(try openViews().1.agents())
        return .success
    }

    /// `agents approve ID` and `agents reject ID`: the agent's new status, printed as `agents` lists it.
    func setAgentStatus(_ agent: String, to status: AgentStatus) throws -> VitalsKit.ExitStatus {
        let (store, views) = try openViews()
        guard try store.setAgentStatus(agent, to: status) else { throw ToolError("no agent '\(agent)' in \(path)") }
        try emitList(try views.agents().filter { $0.objectValue?["id"] == .string(agent) })
        return .success
    }

    /// `agents token ID`: a new bearer token for the agent, shown once; only its hash is kept.
    func agentToken(_ agent: String) throws -> VitalsKit.ExitStatus {
        guard let file = tokensFile() else {
            throw UsageError("agents token on a ClickHouse store wants --tokens FILE (or $VITALS_AGENT_TOKENS)")
        }
        guard !agent.isEmpty, agent.utf8.count <= 200, !agent.contains(where: { $0 == " " || $0 == "\n" || $0 == "\t" }) else {
            throw UsageError("an agent id has no spaces and at most 200 bytes")
        }
        let token = try AgentTokens.issue(agent: agent, path: file)
        try context.output.write(Array(token.utf8))
        context.diagnostics.note("the token of agent \(agent) is above; it is shown once (only its hash is kept in \(file))")
        return .success
    }

    func clear() throws -> VitalsKit.ExitStatus {
        let all = options.has("all")
        guard all != (options.has("monitor") || options.has("until")) else {
            throw UsageError(
                all
                    ? "clear --all clears everything; leave out --monitor and --until, or --all"
                    : "clear wants --all, --monitor ID or --until WHEN (or both of the last two)")
        }
        let store = try openStore(create: false)
        let monitorID = try options.value("monitor").map { try findMonitor(store, $0).id }
        let before = options.has("until") ? until : nil
        let deleted = try store.clear(monitorID: monitorID, before: before)
        try writer.write(
            JSONValue.object(
                JSONObject([
                    JSONField("type", .string("cleared")),
                    JSONField("monitor", options.value("monitor").map(JSONValue.string) ?? .null),
                    JSONField("before", before.map { .string(Timestamp.format(milliseconds: $0)) } ?? .null),
                    JSONField("samples", .integer(deleted)),
                ])
            ).encoded())
        return .success
    }

    func metrics() throws -> VitalsKit.ExitStatus {
        let exposition = try openViews().1.metrics()
        if let file = options.value("output") {
            // Readable by node_exporter, which runs as another user, and writable by no one else
            // even under umask 000: a file others can write is theirs to fill with metrics.
            let mask = umask(0o022)
            umask(mask)
            try AtomicFile.write(exposition, to: file, mode: 0o644 & ~mask)
        } else {
            try writer.write(exposition.dropLast())  // the writer ends the last line
        }
        return .success
    }

    func export() throws -> VitalsKit.ExitStatus {
        let ndjson = try ndjsonFormat()
        let store = try openStore(create: false)
        let monitorID = try options.value("monitor").map { try findMonitor(store, $0).id }
        if !ndjson {
            try writer.write(CSVExport.header)
            try store.export(from: since, until: until, monitorID: monitorID) { record in
                try writer.write(CSVExport.row(record))
            }
        } else {
            try store.export(from: since, until: until, monitorID: monitorID) { try writer.write($0) }
        }
        return .success
    }
}
