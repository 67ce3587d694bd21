import VitalsKit

/// Writing: samples gathered into batches sent as one `RowBinary` INSERT each (one in flight
/// while the next is read), monitors and agents as new versions of their rows, a resend marked
/// before it is sent.
extension ClickHouseSampleStore {
    /// A version for a monitor or agent row: newer than any this instance wrote, and than the clock's µs.
    func nextVersion() -> UInt64 {
        version = max(version + 1, UInt64(max(0, Clock.wallMilliseconds())) * 1000)
        return version
    }

    /// Reads the monitors into the unit's caches, unless they are there.
    private func loadMonitors() throws {
        guard caches.monitors == nil else { return }
        var rows: [String: MonitorRow] = [:]
        for record in try readMonitors() { rows[record.monitor] = MonitorRow(record: record) }
        caches.monitors = rows
        caches.nextMonitorID = (rows.values.map(\.record.id).max() ?? 0) + 1
    }

    /// The agents as stored, read once a unit of work.
    private func loadAgents() throws -> [String: AgentRecord] {
        if let known = caches.agents { return known }
        var rows: [String: AgentRecord] = [:]
        for record in try readAgents() { rows[record.id] = record }
        caches.agents = rows
        return rows
    }

    func status(ofAgent agent: String) throws -> AgentStatus {
        if let known = caches.agentStatus[agent] { return known }
        let status = try loadAgents()[agent]?.status ?? policy.statusOfNewAgent(agent)
        caches.agentStatus[agent] = status
        return status
    }

    func approveListedAgents(now: Int64) throws {
        for agent in policy.approvedAgents {
            var record =
                try loadAgents()[agent]
                ?? AgentRecord(id: agent, status: .approved, createdAt: now, lastSeen: now, monitorCount: 0)
            record.status = .approved
            caches.agents?[agent] = record
            try writeAgents([record])
            try release(agent)
            caches.agentStatus[agent] = .approved
        }
    }

    func setAgentStatus(_ id: String, to status: AgentStatus) throws -> Bool {
        caches.agents = nil
        guard var record = try loadAgents()[id] else { return false }
        record.status = status
        try writeAgents([record])
        caches.agents = nil
        caches.agentStatus[id] = nil
        if status == .approved { try release(id) }
        return true
    }

    @discardableResult
    func note(_ monitor: StorableSample) throws -> Int64? {
        _ = try policy.admit(monitor, record: "monitor record", status: status(ofAgent:))
        batch.open = true
        return try monitorRow(for: monitor).record.id
    }

    /// How many bytes of rows make a batch full: each INSERT is a part the server writes, then
    /// merges with the others, and its work per sample falls as parts grow. A million bench samples
    /// (510 bytes a row) in 20,000-row batches cost the server 4.0-4.2 s of CPU, in 50,000-row
    /// ones 3.1-3.3 s, in 100,000-row ones 2.8 s (one run each on tmpfs, in turn). Two batches are
    /// in memory at once (the one read, the one in flight), so this sets the writer's peak: about
    /// 33 MB and twice this (81 MB in the bench; 24 MiB made it 108 MB).
    static let batchBytes = 16 << 20
    /// Room for a full batch and its last row, so neither buffer is copied as it grows (pages are
    /// only resident once written).
    static let batchCapacity = batchBytes + (1 << 20)

    var batchIsFull: Bool { batch.rows.bytes.count >= Self.batchBytes }

    /// As many rows as the server puts in one block of an INSERT (18.16's max_insert_block_size,
    /// 1,048,576): bytes bound a batch first unless rows are under 17 bytes.
    var maxBatchRows: Int { 1_000_000 }

    @discardableResult
    func add(_ sample: StorableSample) throws -> Int64? {
        let (remoteAgent, held) = try policy.admit(sample, record: "sample", status: status(ofAgent:))
        batch.open = true
        let monitor = try monitorRow(for: sample)
        if caches.agentTimes == nil { try loadMarks() }
        let id = caches.nextSampleID!
        caches.nextSampleID = id + 1
        if batch.count == 0 {
            batch.firstID = id
            batch.rows.bytes.reserveCapacity(Self.batchCapacity)
        }
        if !isNew(sample) { batch.uncertain.append(batch.count) }
        batch.rowStarts.append(batch.rows.bytes.count)
        batch.idOffsets.append(
            ClickHouseRows.write(
                sample, id: id, remote: policy.remote, agent: remoteAgent, held: held, batch: batch.number, to: &batch.rows))
        batch.count += 1
        noteSpan(of: monitor, sample, held: held)
        // Keep the batch in flight moving while this one is read (an upload stalls otherwise).
        // Every 16 samples rather than every 256: the server then has the batch when this one is
        // ready, and a million-sample ingest waited 2.4-2.7 s for answers instead of 3.7-4.0 s
        // (4.5-4.9 s in all instead of 5.5-5.8 s, three runs each, in turn).
        if inFlight != nil, batch.count & 15 == 0 { client.pump() }
        batch.agents.note(sample)
        return monitor.record.id
    }

    /// Counts a sample of `monitor` in its span of the batch (a held one only by its position).
    private func noteSpan(of monitor: MonitorRow, _ sample: StorableSample, held: Bool) {
        if monitor.spanBatch != batch.number {
            monitor.spanBatch = batch.number
            monitor.span = batch.spans.count
            batch.spans.append(PlaceSpan(row: monitor))
        }
        batch.rowSpans.append(Int32(monitor.span))
        guard !held else { return }
        let at = sample.at
        batch.spans[monitor.span].firstAt = min(batch.spans[monitor.span].firstAt, at)
        batch.spans[monitor.span].lastAt = max(batch.spans[monitor.span].lastAt, at)
        sample.withText(sample.agentRange) { bytes in
            // The place is the identity agent, '' for none (as the row stores it).
            switch batch.spans[monitor.span].places {
            case .none:
                batch.spans[monitor.span].places = .one(bytes.map { String(decoding: $0, as: UTF8.self) } ?? "")
            case .one(let place):
                if !(bytes.map { place.utf8.elementsEqual($0) } ?? place.isEmpty) { batch.spans[monitor.span].places = .several }
            case .several:
                break
            }
        }
    }

    /// The monitor's row, registering it or refreshing what the sample states (as SQLite does:
    /// each field the sample gives replaces the stored one; first_seen goes back only on the
    /// monitor's first sample of a unit of work).
    private func monitorRow(for sample: StorableSample) throws -> MonitorRow {
        try loadMonitors()
        let row: MonitorRow
        if let known = caches.monitors![sample.monitor] {
            row = known
            if !row.touched, sample.at < row.record.firstSeen {
                row.record.firstSeen = sample.at
                row.dirty = true
            }
        } else {
            row = MonitorRow(
                record: MonitorRecord(id: caches.nextMonitorID, monitor: sample.monitor, firstSeen: sample.at),
                dirty: true)
            row.created = true
            caches.monitors![sample.monitor] = row
            caches.nextMonitorID += 1
        }
        row.touched = true
        if row.record.metadata.take(sample) { row.dirty = true }
        return row
    }

    @discardableResult
    func commitBatch(retention: Retention, now: Int64) throws -> BatchOutcome {
        try submitBatch(retention: retention, now: now)
        return try awaitSubmitted()
    }

    /// Stores the batch's monitors and agents, then sends its samples without waiting for the
    /// answer, so the next batch is read meanwhile; `awaitSubmitted` waits (one batch in flight).
    func submitBatch(retention: Retention, now: Int64) throws {
        // The caller took the outcome of the batch in flight already (`Ingester` settles first).
        _ = try awaitSubmitted()
        guard batch.open else { return }
        do {
            // Monitors first, so no sample is ever stored under a monitor the store does not list.
            var monitorRows = RowBinaryWriter()
            var dirty: [MonitorRow] = []
            for row in (caches.monitors ?? [:]).values where row.dirty {
                ClickHouseRows.write(row.record, version: nextVersion(), to: &monitorRows)
                dirty.append(row)
            }
            if !dirty.isEmpty { try insert("monitors", ClickHouseRows.monitorColumns, monitorRows.bytes) }
            if dirty.contains(where: \.created) { try settleMonitorIDs() }
            var agentRecords: [AgentRecord] = []
            if !batch.agents.isEmpty {
                var known = try loadAgents()
                for (agent, seen, name) in batch.agents.toWrite(beyond: caches.agentsWritten) {
                    var record =
                        known[agent]
                        ?? AgentRecord(
                            id: agent, status: caches.agentStatus[agent] ?? .approved, createdAt: seen.first,
                            lastSeen: seen.last, monitorCount: 0)
                    record.createdAt = min(record.createdAt, seen.first)
                    record.lastSeen = max(record.lastSeen, seen.last)
                    if let name { record.name = name }
                    known[agent] = record
                    agentRecords.append(record)
                }
                caches.agents = known
            }
            try writeAgents(agentRecords)
            if batch.count > 0 {
                let outcome = try settleUncertain()
                try judgeBatch()
                // When the INSERT is sent, by this writer's clock: a follower reads a batch once it is
                // `--lag` old (see `ClickHouseSampleStore+Follow`).
                ClickHouseRows.stampReceived(Clock.wallMilliseconds(), idOffsets: batch.idOffsets, in: &batch.rows.bytes)
                sending.removeAll(keepingCapacity: true)
                sending.reserveCapacity(max(batch.rows.bytes.count, Self.batchCapacity))
                try ClickHouseRows.appendSorted(batch.rows.bytes, starts: batch.rowStarts, monitorRanks: monitorRanks(), to: &sending)
                let pending =
                    batch.count == 0
                    ? nil
                    : client.start(
                        "INSERT INTO \(placement.table("samples")) (\(ClickHouseRows.sampleColumns)) FORMAT RowBinary",
                        data: sending, settings: insertSettings)
                inFlight = (pending, batch.firstID, batch.firstID + Int64(batch.count) - 1, outcome)
            }
            for row in dirty { row.dirty = false }
            for record in agentRecords {
                caches.agentsWritten[record.id, default: AgentSpan(record.createdAt)].widen(AgentSpan(record.createdAt, record.lastSeen))
            }
            batch.clear()
            try applyRetention(retention, now: now)
        } catch {
            abortBatch()
            throw error
        }
    }

    /// Writers that make monitors at once each read the table before the others wrote, so they may
    /// give two monitors one id, or one monitor two: the table read again decides. A monitor's id
    /// is its stored row's (the newest version). Among monitors that share an id, the first by
    /// (first_seen, monitor) keeps it, and the others get new ones above every id, in that order,
    /// written again: writers that find a clash in the same table write the same rows. One that
    /// read the table before another's change finds the clash at its next look; the last to write
    /// looks last (eight looks at most). So ids are unique and, once settled, kept.
    private func settleMonitorIDs() throws {
        for _ in 0..<8 {
            caches.monitorTable = nil
            let stored = try readMonitors()
            var sharing: [Int64: [MonitorRecord]] = [:]
            for record in stored { sharing[record.id, default: []].append(record) }
            var top = stored.map(\.id).max() ?? 0
            var moved = RowBinaryWriter()
            for id in sharing.keys.sorted() where sharing[id]!.count > 1 {
                let order = sharing[id]!.sorted { ($0.firstSeen, $0.monitor) < ($1.firstSeen, $1.monitor) }
                for var record in order.dropFirst() {
                    top += 1
                    record.id = top
                    ClickHouseRows.write(record, version: nextVersion(), to: &moved)
                }
            }
            if moved.bytes.isEmpty {
                for record in stored {
                    guard let row = caches.monitors?[record.monitor] else { continue }
                    row.record.id = record.id
                    row.created = false
                }
                caches.nextMonitorID = top + 1
                caches.monitorsByID = nil
                return
            }
            try insert("monitors", ClickHouseRows.monitorColumns, moved.bytes)
        }
    }

    /// Judges each counted sample of the batch (`StoredConsensus`), in the batch's order, from the
    /// samples the store holds of its monitor's other places in the two intervals before it and the
    /// batch's earlier ones, and writes the consensus into the row's last byte. A monitor whose
    /// stored votes in the window and counted samples in the batch all come from one place has no
    /// other place's vote to meet: its rows keep their own status, unread. The votes are read in
    /// one query as before, and only the samples of monitors with two places are judged (a
    /// million bench samples of one place each: judging took 16% of the writer's CPU before,
    /// keeping every vote and scanning them for each sample, and 1.2% now; perf). Asking the server
    /// which places the votes come from first cost a second query a batch: an agent's batches of
    /// 1,000 samples, of monitors seen from 10 places, then took 59.9 ms of CPU per 1,000 samples
    /// against 37.0 (scripts/bench/agents' floor); a subquery choosing the monitors, over the pairs
    /// of monitor and place, cost the server 2.5 s against 1.35 s for 50 such batches.
    func judgeBatch() throws {
        var from = Int64.max
        var until = Int64.min
        var spanOf: [String: Int] = [:]
        var intervals = [Int64](repeating: 0, count: batch.spans.count)
        var judged = Set<Int32>()
        for (index, span) in batch.spans.enumerated() where span.places != .none {
            intervals[index] = PlaceRule.intervalMs(checkIntervalSeconds: span.row.record.metadata.checkInterval)
            from = min(from, StoredConsensus.windowStart(span.firstAt, intervalMs: intervals[index]))
            until = max(until, span.lastAt)
            spanOf[span.row.record.monitor] = index
            if span.places == .several { judged.insert(Int32(index)) }
        }
        guard !spanOf.isEmpty else { return }
        let names = spanOf.keys.sorted()
        var history: [String: [StoredConsensus.Vote]] = [:]
        for start in stride(from: 0, to: names.count, by: 1000) {
            let chunk = names[start..<min(names.count, start + 1000)].map(clickHouseLiteral).joined(separator: ", ")
            var reader = try self.rows(
                """
                SELECT monitor, identity_agent, at, status FROM \(placement.table("samples"))
                WHERE held = 0 AND \(timeCondition(from: from, until: until + 1)) AND monitor IN (\(chunk))
                """)
            while !reader.atEnd {
                let monitor = try reader.string()
                let vote = StoredConsensus.Vote(
                    place: try reader.string(), at: try reader.int64(), status: try SampleStatus(storeCode: Int64(try reader.uint8())))
                // A vote from another place than the batch's one makes its monitor judged.
                if let index = spanOf[monitor], case .one(let place) = batch.spans[index].places, place != vote.place {
                    judged.insert(Int32(index))
                }
                history[monitor, default: []].append(vote)
            }
        }
        guard !judged.isEmpty else { return }
        for row in try countedRows(of: judged, intervals: intervals) {
            let others = history[row.monitor] ?? []
            if others.contains(where: { $0.place != row.place }) {
                let consensus = StoredConsensus.judge(
                    place: row.place, at: row.at, status: row.status, others: others, intervalMs: row.intervalMs,
                    quorum: policy.quorum)
                batch.rows.bytes[row.consensusAt] = consensus.storeCode
            }
            history[row.monitor, default: []].append(StoredConsensus.Vote(place: row.place, at: row.at, status: row.status))
        }
    }

    /// The counted samples of the batch whose monitors' spans are `spans`, in the batch's order:
    /// what judging needs of each (its monitor's interval from `intervals`, by span), and where
    /// its consensus byte is.
    private func countedRows(of spans: Set<Int32>, intervals: [Int64]) throws -> [(
        monitor: String, at: Int64, place: String, status: SampleStatus, consensusAt: Int, intervalMs: Int64
    )] {
        let rows = batch.rows.bytes
        var counted: [(monitor: String, at: Int64, place: String, status: SampleStatus, consensusAt: Int, intervalMs: Int64)] = []
        for position in batch.rowStarts.indices where spans.contains(batch.rowSpans[position]) {
            let row = try ClickHouseRows.vote(ofRowAt: batch.rowStarts[position], in: rows)
            guard !row.held else { continue }
            let end = position + 1 < batch.rowStarts.count ? batch.rowStarts[position + 1] : rows.count
            let span = Int(batch.rowSpans[position])
            counted.append(
                (
                    batch.spans[span].row.record.monitor, row.at, String(decoding: rows[row.place], as: UTF8.self),
                    try SampleStatus(storeCode: Int64(row.status)), end - 1, intervals[span]
                ))
        }
        return counted
    }

    /// Each sample's monitor's place among the batch's monitors ordered by their bytes, by position.
    private func monitorRanks() -> [Int32] {
        let ranks = ClickHouseRows.byteOrderRanks(batch.spans.map(\.row.record.monitor))
        return batch.rowSpans.map { ranks[Int($0)] }
    }

    /// Waits for the samples INSERT in flight, if any (sending it again after a transport failure,
    /// marked first in `resends`).
    @discardableResult
    func awaitSubmitted() throws -> BatchOutcome {
        guard let flight = inFlight else { return BatchOutcome() }
        inFlight = nil
        guard let pending = flight.pending else { return flight.outcome }
        do {
            var marked = false
            _ = try client.finish(pending) {
                guard !marked else { return }
                try self.markResend(firstID: flight.firstID)
                marked = true
            }
            return flight.outcome
        } catch {
            abortBatch()
            throw error
        }
    }

    /// Settings of every INSERT: into a cluster's `Distributed` tables, answered once every shard has its rows.
    var insertSettings: [String: String] { isCluster ? ["insert_distributed_sync": "1"] : [:] }

    func insert(_ name: String, _ columns: String, _ rows: [UInt8]) throws {
        if name == "monitors" { caches.monitorTable = nil }
        _ = try client.run("INSERT INTO \(placement.table(name)) (\(columns)) FORMAT RowBinary", data: rows, settings: insertSettings)
    }

    /// Before samples are sent a second time (the first try may have been stored), says so in
    /// `resends` (once a batch): from then on the reads dedup with FINAL.
    private func markResend(firstID: Int64) throws {
        var marker = RowBinaryWriter()
        marker.uint64(writer)
        marker.uint64(UInt64(max(0, firstID)))
        marker.int64(Clock.wallMilliseconds())
        try insert("resends", "writer, first_id, at", marker.bytes)
        caches.samplesResent = nil
    }

    func writeAgents(_ records: [AgentRecord]) throws {
        guard !records.isEmpty else { return }
        var rows = RowBinaryWriter()
        for record in records { ClickHouseRows.write(record, version: nextVersion(), to: &rows) }
        try insert("agents", ClickHouseRows.agentColumns, rows.bytes)
    }
}
