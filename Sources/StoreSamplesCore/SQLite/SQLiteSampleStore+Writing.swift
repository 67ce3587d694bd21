import SQLiteStore
import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Unsafe pointers here are C interop (a sample's line and text fields are bound to SQLite in place): kept.

/// Writing: samples and monitor records into the open transaction, monitors registered from
/// them, agents and their approval, and the commit.
extension SQLiteSampleStore {
    /// An agent's status: as stored, or for an agent seen for the first time, as the policy says.
    func status(ofAgent agent: String) throws -> AgentStatus {
        if let known = caches.agentStatus[agent] { return known }
        let stored = try db.withCached("SELECT status FROM agents WHERE id = ?") { select in
            select.bind(agent)
            return try select.step() ? select.text(0) : nil
        }
        let status = try stored.map { try AgentStatus(stored: $0) } ?? policy.statusOfNewAgent(agent)
        caches.agentStatus[agent] = status
        return status
    }

    /// Under `--remote`, the agent a record names and whether its samples are held (see `IngestPolicy.admit`).
    private func admit(_ sample: StorableSample, record: String) throws -> (agent: String?, held: Bool) {
        try policy.admit(sample, record: record) { agent in try translated { try status(ofAgent: agent) } }
    }

    /// Approves the policy's listed agents before ingesting, releasing what they had held.
    func approveListedAgents(now: Int64) throws {
        for agent in policy.approvedAgents {
            try db.writeTransaction {
                let upsert = try db.prepare(
                    """
                    INSERT INTO agents (id, created_at, last_seen, status) VALUES (?, ?, ?, ?)
                    ON CONFLICT(id) DO UPDATE SET status = excluded.status
                    """)
                upsert.bind(agent, now, now, AgentStatus.approved.rawValue)
                try upsert.step()
                try release(agent)
                try bumpGeneration()
            }
            caches.agentStatus[agent] = .approved
        }
    }

    func setAgentStatus(_ id: String, to status: AgentStatus) throws -> Bool {
        var changed = false
        try db.writeTransaction {
            let statement = try db.prepare("UPDATE agents SET status = ? WHERE id = ?")
            statement.bind(status.rawValue, id)
            try statement.step()
            changed = db.changes > 0
            if changed, status == .approved { try release(id) }
            if changed { try bumpGeneration() }
        }
        caches.agentStatus[id] = nil
        return changed
    }

    /// Counts the held samples of an approved agent: they become its place's votes. They were not
    /// judged when stored, and are not now: each counts with its own status as the monitor's
    /// consensus (store-samples(1), PLACES), on both stores alike.
    private func release(_ agent: String) throws {
        let update = try db.prepare("UPDATE samples SET held = 0 WHERE agent = ? AND held = 1")
        update.bind(agent)
        try update.step()
        guard db.changes > 0 else { return }
        try countDeletions()
        let places = try db.prepare(
            """
            INSERT INTO places (monitor_id, agent, last_at) SELECT monitor_id, identity_agent, max(at) FROM samples
            WHERE agent = ? AND held = 0 GROUP BY monitor_id, identity_agent
            ON CONFLICT (monitor_id, agent) DO UPDATE SET last_at = max(last_at, excluded.last_at)
            """)
        places.bind(agent)
        try places.step()
        forgetKnownPlaces(of: nil)
    }

    /// Every write that takes samples away or lets held ones count says so (see `SQLiteSchema.sampleIdentity`).
    func countDeletions() throws {
        _ = try db.withCached("UPDATE store_state SET deletions = deletions + 1") { try $0.step() }
    }

    @discardableResult
    func note(_ monitor: StorableSample) throws -> Int64? {
        _ = try admit(monitor, record: "monitor record")
        do {
            if !db.inTransaction { try db.beginImmediate() }
            return try knownMonitor(for: monitor).id
        } catch {
            abortBatch()
            throw translate(error)
        }
    }

    @discardableResult
    func add(_ sample: StorableSample) throws -> Int64? {
        // A remote sample names its agent; a rejected agent's are refused (a line error, the
        // batch goes on); a pending agent's are stored but held out of every view.
        let (remoteAgent, held) = try admit(sample, record: "sample")
        do {
            if !db.inTransaction { try db.beginImmediate() }
            guard let insert = insertSample else { throw ToolError("cannot prepare the insert statement") }
            let known = try knownMonitor(for: sample)
            let monitorID = known.id
            let place = sample.agentRange == nil ? "" : sample.agent ?? ""
            // A held sample is not counted: it neither votes nor is judged until its agent is approved.
            let consensus = held ? nil : try consensusCode(known, place: place, sample: sample)
            let (batch, lastID) = try numbering ?? readNumbering()
            sample.withText(sample.reasonRange) { reason in
                sample.withText(sample.messageRange) { message in
                    sample.withText(sample.agentRange) { agent in
                        insert.bind(
                            lastID + 1, monitorID, sample.at, Int64(sample.status.storeCode), sample.latencyMs, reason, sample.code,
                            message, sample.tlsExpiryDays, sample.speedMbps, sample.line, policy.remote, remoteAgent, held,
                            agent ?? SQLiteSampleStore.noAgent, consensus, held ? 0 : batch)
                    }
                }
            }
            try insert.step()
            insert.reset()
            if db.changes > 0 { numbering = (batch, lastID + 1) }
            let position = batchSamples
            batchSamples += 1
            batchMonitors.insert(monitorID)
            guard db.changes > 0 else {
                // Stored already: the same bytes are a duplicate, other bytes a conflict (the first stays).
                if try storedRecord(sample, monitorID: monitorID) {
                    batchOutcome.duplicates.append(position)
                } else {
                    batchOutcome.conflicts.append(position)
                }
                return monitorID
            }
            if var hint = caches.retentionHints[monitorID] {
                hint.count += 1
                hint.oldest = min(hint.oldest ?? sample.at, sample.at)
                caches.retentionHints[monitorID] = hint
            }
            batchAgents.note(sample)
            if !held {
                if !known.inBatch {
                    known.inBatch = true
                    batchKnown.append(known)
                }
                if place.isEmpty {
                    known.batchLocalNewest = max(known.batchLocalNewest, sample.at)
                } else {
                    known.batchAgentNewest[place] = max(known.batchAgentNewest[place] ?? Int64.min, sample.at)
                }
                known.addPlace(place)
                if known.votes != nil, sample.at >= known.votesFrom {
                    known.votes!.append(StoredConsensus.Vote(place: place, at: sample.at, status: sample.status))
                }
            }
            return monitorID
        } catch {
            abortBatch()
            throw translate(error)
        }
    }

    /// The open transaction's batch number and the largest sample id given, read under its write
    /// lock (no other writer can move either until it commits).
    private func readNumbering() throws -> (batch: Int64, lastID: Int64) {
        let read = try db.withCached("SELECT generation, last_sample_id FROM store_state") { state in
            guard try state.step() else { throw ToolError("the store's store_state has no row") }
            return (batch: state.int64(0) + 1, lastID: state.int64(1))
        }
        numbering = read
        return read
    }

    /// Whether the sample stored with `sample`'s identity has its very bytes.
    private func storedRecord(_ sample: StorableSample, monitorID: Int64) throws -> Bool {
        try db.withCached("SELECT record FROM samples WHERE at = ? AND monitor_id = ? AND identity_agent = ?") { select in
            sample.withText(sample.agentRange) { agent in select.bind(sample.at, monitorID, agent ?? SQLiteSampleStore.noAgent) }
            guard try select.step() else { throw ToolError("a sample vanished while its copy was being stored") }
            let stored = select.textBytes(0)
            return stored.count == sample.line.count
                && (stored.isEmpty || memcmp(stored.baseAddress!, sample.line.baseAddress!, stored.count) == 0)
        }
    }

    /// The identity agent of a sample that names none.
    static var noAgent: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: nil, count: 0) }

    func submitBatch(retention: Retention, now: Int64) throws {
        submitted = try commitBatch(retention: retention, now: now)
    }

    func awaitSubmitted() throws -> BatchOutcome {
        defer { submitted = BatchOutcome() }
        return submitted
    }

    @discardableResult
    func commitBatch(retention: Retention, now: Int64) throws -> BatchOutcome {
        guard db.inTransaction else { return BatchOutcome() }
        do {
            for (agent, seen, name) in batchAgents.toWrite(beyond: caches.agentsWritten) {
                let upsert = try db.prepare(
                    """
                    INSERT INTO agents (id, created_at, last_seen, status, name) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT(id) DO UPDATE SET created_at = min(created_at, excluded.created_at),
                        last_seen = max(last_seen, excluded.last_seen), name = coalesce(excluded.name, name)
                    """)
                upsert.bind(agent, seen.first, seen.last, (caches.agentStatus[agent] ?? .approved).rawValue, name)
                try upsert.step()
                caches.agentsWritten[agent, default: seen].widen(seen)
            }
            try writePlaces()
            try applyRetention(batchMonitors, retention: retention, now: now)
            if let (_, lastID) = numbering {
                _ = try db.withCached("UPDATE store_state SET last_sample_id = ?") { update in
                    update.bind(lastID)
                    return try update.step()
                }
            }
            try bumpGeneration()
            try db.execute("COMMIT", context: "commit")
            numbering = nil
            batchMonitors.removeAll(keepingCapacity: true)
            batchAgents.removeAll()
            for known in batchKnown { known.endBatch() }
            batchKnown.removeAll(keepingCapacity: true)
            let outcome = batchOutcome
            batchSamples = 0
            batchOutcome = BatchOutcome()
            return outcome
        } catch {
            abortBatch()
            throw translate(error)
        }
    }

    /// The consensus code to store with a sample of `place` (see `StoredConsensus`): nil when it is
    /// the sample's own status, as it always is for a monitor with no other place. The votes of the
    /// two intervals before it come from the covering index, read once a transaction for each
    /// monitor with more than one place (from the first sample's window on) and then kept up with
    /// the transaction's own samples: a million samples of 1,000 monitors from ten agents judged
    /// with a query each cost twice the instructions of storing them without places.
    private func consensusCode(_ known: KnownMonitor, place: String, sample: StorableSample) throws -> Int64? {
        if known.places == nil {
            let places = try db.withCached("SELECT agent FROM places WHERE monitor_id = ?") { select in
                select.bind(known.id)
                var places: Set<String> = []
                while try select.step() { places.insert(select.text(0) ?? "") }
                return places
            }
            known.places = places
            known.onlyPlace = places.count == 1 ? places.first : nil
        }
        guard known.hasPlace(besides: place) else { return nil }
        let interval = PlaceRule.intervalMs(checkIntervalSeconds: known.metadata.checkInterval)
        let from = StoredConsensus.windowStart(sample.at, intervalMs: interval)
        if known.votes == nil || from < known.votesFrom {
            known.votes = try votes(monitorID: known.id, from: from, through: Int64.max)
            known.votesFrom = from
            if !known.inBatch {
                known.inBatch = true
                batchKnown.append(known)
            }
        }
        let consensus = StoredConsensus.judge(
            place: place, at: sample.at, status: sample.status, others: known.votes!, intervalMs: interval, quorum: policy.quorum)
        return consensus == sample.status ? nil : Int64(consensus.storeCode)
    }

    /// The counted samples of a monitor in `[from, through]`, each as the place rule reads it.
    func votes(monitorID: Int64, from: Int64, through: Int64) throws -> [StoredConsensus.Vote] {
        try db.withCached(
            """
            SELECT identity_agent, at, status FROM samples INDEXED BY samples_by_monitor_time
            WHERE held = 0 AND monitor_id = ? AND at >= ? AND at <= ?
            """
        ) { select in
            select.bind(monitorID, from, through)
            var votes: [StoredConsensus.Vote] = []
            while try select.step() {
                votes.append(
                    StoredConsensus.Vote(
                        place: select.text(0) ?? "", at: select.int64(1), status: try SampleStatus(storeCode: select.int64(2))))
            }
            return votes
        }
    }

    /// Brings `places` up to date with the places the open transaction stored samples of.
    private func writePlaces() throws {
        guard !batchKnown.isEmpty else { return }
        try db.withCached(
            """
            INSERT INTO places (monitor_id, agent, last_at) VALUES (?, ?, ?)
            ON CONFLICT (monitor_id, agent) DO UPDATE SET last_at = max(last_at, excluded.last_at)
            """
        ) { upsert in
            func write(_ id: Int64, _ place: String, _ at: Int64) throws {
                upsert.bind(id, place, at)
                try upsert.step()
                upsert.reset()
            }
            for known in batchKnown {
                if known.batchLocalNewest != Int64.min { try write(known.id, "", known.batchLocalNewest) }
                for (place, at) in known.batchAgentNewest { try write(known.id, place, at) }
            }
        }
    }

    /// Makes the unit forget the places it read of one monitor (by integer id), or of all.
    func forgetKnownPlaces(of monitorID: Int64?) {
        for known in caches.monitors.values where monitorID == nil || known.id == monitorID {
            known.places = nil
            known.onlyPlace = nil
            known.votes = nil
            known.votesFrom = Int64.max
        }
    }

    /// Every write transaction calls this before it commits (see `generation()`).
    func bumpGeneration() throws {
        _ = try db.withCached("UPDATE store_state SET generation = generation + 1") { try $0.step() }
    }

    /// The integer id of a sample's monitor, registering it, or refreshing its metadata when the
    /// sample states other values (`MonitorMetadata.take`). The first sample of a monitor in a
    /// unit of work reads its row; its `first_seen` goes back then only.
    private func knownMonitor(for sample: StorableSample) throws -> KnownMonitor {
        if let known = caches.monitors[sample.monitor] {
            if known.metadata.take(sample) { try refresh(known.id, sample) }
            return known
        }
        // The row is read first and made only when missing, both statements kept prepared: a
        // responder starts each request with cold caches, and preparing the two statements and
        // trying the insert for each of a POST's 1,000 monitors was a third of its store's time.
        let read = {
            try self.db.withCached(
                """
                SELECT id, first_seen, name, kind, target, agent, description, check_interval, config, enabled FROM monitors WHERE monitor = ?
                """
            ) { select -> MonitorRecord? in
                select.bind(sample.monitor)
                guard try select.step() else { return nil }
                return MonitorRecord(
                    id: select.int64(0), monitor: sample.monitor, metadata: SQLiteSampleStore.metadata(select, from: 2),
                    firstSeen: select.int64(1))
            }
        }
        var found = try read()
        if found == nil {
            try db.withCached("INSERT OR IGNORE INTO monitors (monitor, first_seen) VALUES (?, ?)") { insert in
                insert.bind(sample.monitor, sample.at)
                try insert.step()
            }
            found = try read()
        }
        guard var record = found else { throw ToolError("monitor \(sample.monitor) vanished while registering it") }
        if record.metadata.take(sample) { try refresh(record.id, sample) }
        if sample.at < record.firstSeen {
            let update = try db.prepare("UPDATE monitors SET first_seen = ? WHERE id = ? AND first_seen > ?")
            update.bind(sample.at, record.id, sample.at)
            try update.step()
            record.firstSeen = sample.at
        }
        let known = KnownMonitor(id: record.id, metadata: record.metadata)
        caches.monitors[sample.monitor] = known
        return known
    }

    /// A monitor's metadata from the columns name, kind, target, agent, description,
    /// check_interval, config, enabled, starting at column `first`.
    static func metadata(_ row: SQLiteStatement, from first: Int32) -> MonitorMetadata {
        MonitorMetadata(
            name: row.text(first), kind: row.text(first + 1), target: row.text(first + 2), agent: row.text(first + 3),
            description: row.text(first + 4), checkInterval: row.optionalInt64(first + 5), config: row.text(first + 6),
            enabled: row.optionalInt64(first + 7).map { $0 != 0 })
    }

    /// Writes what `sample` states of monitor `id`: each field it gives replaces the stored one,
    /// the others stay (another writer may have set them meanwhile).
    private func refresh(_ id: Int64, _ sample: StorableSample) throws {
        try db.withCached(
            """
            UPDATE monitors SET name = coalesce(?, name), kind = coalesce(?, kind), target = coalesce(?, target),
                agent = coalesce(agent, ?), description = coalesce(?, description), check_interval = coalesce(?, check_interval),
                config = coalesce(?, config), enabled = coalesce(?, enabled)
            WHERE id = ?
            """
        ) { update in
            update.bind(
                sample.name, sample.kind, sample.target, sample.agent, sample.description, sample.checkInterval,
                sample.raw(sample.configRange), sample.enabled, id)
            try update.step()
        }
    }
}
