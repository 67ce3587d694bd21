import SQLiteStore
import VitalsCrypto
import VitalsKit

// Unsafe pointers here are C interop (the SHA-256 of a sample's bytes, and libxml2's attribute bytes passed through): kept.

/// The samples themselves, kept beside the chain so "what exactly disappeared between these
/// two exports" has an answer.
///
/// Each sample is identified by a semantic fingerprint: the first 8 bytes of the SHA-256 of
/// its type, start, end, creation date, value, unit, source, source version and device
/// (without HealthKit's memory address), under its type and start time. Identical samples in
/// one input are told apart by an occurrence number. A take upserts every sample it reads
/// (`last_seen` and `verified_at` say it was there); afterwards, samples of complete types it
/// did not see are marked disappeared (never deleted), and samples seen again after having
/// disappeared are marked reappeared. The marks are events per snapshot, so whether a sample
/// was present in any snapshot can be answered later.
final class SampleArchiveWriter {
    private let archive: Archive
    private let seq: Int64
    private let now: Int64
    private var typeIDs: [Int64] = []
    private var fingerprintText: [UInt8] = []
    private let upsert: SQLiteStatement
    /// The identity of the sample upserted last (type, start, fingerprint, occurrence), for
    /// the metadata entries that follow it in an export.
    private var lastIdentity: (type: Int64, start: Int64, fingerprint: Int64, occurrence: Int64)?
    /// Samples read by this take (every occurrence).
    private(set) var seen: Int64 = 0

    /// A writer for the take whose snapshot number is `seq`, inside the archive's open transaction.
    init(archive: Archive, seq: Int64, now: Int64) throws {
        self.archive = archive
        self.seq = seq
        self.now = now
        upsert = try archive.db.prepare(
            """
            INSERT INTO samples (type_id, start_ms, fingerprint, occurrence, end_ms, created_ms, value, unit, source,
                source_version, device, uuid, first_seen, last_seen, present, verified_at)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?13, 1, ?14)
            ON CONFLICT (type_id, start_ms, fingerprint, occurrence) DO UPDATE
                SET last_seen = excluded.last_seen, verified_at = excluded.verified_at, uuid = coalesce(excluded.uuid, uuid)
                WHERE last_seen <> excluded.last_seen
            """)
        fingerprintText.reserveCapacity(1024)
    }

    private func typeID(_ index: Int, tally: Tally) throws -> Int64 {
        if index < typeIDs.count, typeIDs[index] >= 0 { return typeIDs[index] }
        while typeIDs.count <= index { typeIDs.append(-1) }
        let identifier = tally.identifier(index)
        let insert = try archive.db.prepare("INSERT INTO sample_types (identifier) VALUES (?) ON CONFLICT(identifier) DO NOTHING")
        insert.bind(identifier)
        try insert.step()
        let select = try archive.db.prepare("SELECT id FROM sample_types WHERE identifier = ?")
        select.bind(identifier)
        guard try select.step() else { throw ToolError("cannot register type \(identifier) in \(archive.path)") }
        typeIDs[index] = select.int64(0)
        return typeIDs[index]
    }

    /// The fingerprint of a sample: 8 bytes of SHA-256 over its semantic fields.
    static func fingerprint(_ sample: RawSample, into text: inout [UInt8]) -> Int64 {
        text.removeAll(keepingCapacity: true)
        text.append(contentsOf: sample.type)
        text.append(0x1F)
        JSONText.appendInt(sample.start, to: &text)
        text.append(0x1F)
        JSONText.appendInt(sample.end, to: &text)
        text.append(0x1F)
        if let created = sample.created { JSONText.appendInt(created, to: &text) }
        appendField(sample.value, to: &text)
        appendField(sample.unit, to: &text)
        appendField(sample.source, to: &text)
        appendField(sample.sourceVersion, to: &text)
        appendField(sample.device, to: &text)
        let digest = text.withUnsafeBytes { SHA256.digest($0) }
        var value: UInt64 = 0
        for index in 0..<8 { value = value << 8 | UInt64(digest[index]) }
        return Int64(bitPattern: value)
    }

    @inline(__always)
    private static func appendField(_ field: UnsafeBufferPointer<UInt8>?, to text: inout [UInt8]) {
        text.append(0x1F)
        if let field { text.append(contentsOf: field) }
    }

    /// Upserts one sample.
    func upsert(typeIndex: Int, tally: Tally, _ sample: RawSample) throws {
        seen += 1
        let type = try typeID(typeIndex, tally: tally)
        let fingerprint = SampleArchiveWriter.fingerprint(sample, into: &fingerprintText)
        // Occurrence 0 first; when it was already seen by this take, the next one, and so on.
        var occurrence: Int64 = 0
        while true {
            upsert.bind(
                type, sample.start, fingerprint, occurrence, sample.end, sample.created, sample.value, sample.unit, sample.source,
                sample.sourceVersion, sample.device, sample.uuid, seq, now)
            defer { upsert.reset() }
            try upsert.step()
            if archive.db.changes > 0 {
                lastIdentity = (type, sample.start, fingerprint, occurrence)
                return
            }
            occurrence += 1
        }
    }

    @inline(__always)
    /// Keeps `metadata` (a JSON object's text) with the sample upserted last.
    func attachMetadata(_ metadata: String) throws {
        guard let identity = lastIdentity else { return }
        let update = try archive.db.prepare(
            """
            UPDATE samples SET metadata = ? WHERE type_id = ? AND start_ms = ? AND fingerprint = ? AND occurrence = ?
            """)
        update.bind(metadata, identity.type, identity.start, identity.fingerprint, identity.occurrence)
        try update.step()
    }

    /// Forgets the last sample: what follows belongs to none.
    func forgetLast() { lastIdentity = nil }

    /// Samples this take archived for the first time, counted in the archive: comparing row ids
    /// around each insert missed the first sample of a new archive, whose row id equals the
    /// snapshot's placeholder row id, the last one inserted before it.
    func newCount() throws -> Int64 {
        try archive.db.scalarInt("SELECT count(*) FROM samples WHERE first_seen = \(seq)") ?? 0
    }

    /// What marking found.
    struct Marks {
        var reappeared: Int64
        var disappeared: Int64
    }

    /// After the take: marks the samples seen again and those not seen, for the types whose
    /// absence means something (`markable` type identifiers; nil means every type).
    func mark(markable: (String) -> Bool) throws -> Marks {
        let db = archive.db
        var excluded: [Int64] = []
        let types = try db.prepare("SELECT id, identifier FROM sample_types")
        while try types.step() {
            if !markable(types.text(1) ?? "") { excluded.append(types.int64(0)) }
        }
        let exclusion = excluded.isEmpty ? "" : " AND type_id NOT IN (\(excluded.map(String.init).joined(separator: ",")))"
        try db.execute(
            """
            INSERT INTO sample_events (sample_id, snapshot_seq, kind, at)
                SELECT id, \(seq), 'reappeared', \(now) FROM samples WHERE present = 0 AND last_seen = \(seq);
            """, context: "mark reappeared samples")
        let reappeared = Int64(db.changes)
        try db.execute(
            "UPDATE samples SET present = 1, disappeared_in = NULL, disappeared_at = NULL WHERE present = 0 AND last_seen = \(seq)",
            context: "mark reappeared samples")
        try db.execute(
            """
            INSERT INTO sample_events (sample_id, snapshot_seq, kind, at)
                SELECT id, \(seq), 'disappeared', \(now) FROM samples WHERE present = 1 AND last_seen <> \(seq)\(exclusion);
            """, context: "mark disappeared samples")
        let disappeared = Int64(db.changes)
        if disappeared > 0 {
            try db.execute(
                """
                UPDATE samples SET present = 0, disappeared_in = \(seq), disappeared_at = \(now)
                WHERE id IN (SELECT sample_id FROM sample_events WHERE snapshot_seq = \(seq) AND kind = 'disappeared')
                """, context: "mark disappeared samples")
        }
        return Marks(reappeared: reappeared, disappeared: disappeared)
    }
}

/// Reading the sample archive back, and keeping it consistent when snapshots are deleted.
extension Archive {
    /// One archived sample.
    struct ArchivedSample: Sendable {
        var typeIdentifier: String
        var start: Int64
        var end: Int64
        var created: Int64?
        var value: String?
        var unit: String?
        var source: String?
        var sourceVersion: String?
        var device: String?
        var uuid: String?
        var firstSeenSnapshotID: String?
        var verifiedAt: Int64
        var disappearedSnapshotID: String?
        var disappearedAt: Int64?
        /// The export's metadata entries for the sample, as a JSON object's text.
        var metadata: String?
        /// Its identity in the archive beside type and start (fingerprint, occurrence), when read by `samples`.
        var identity: (fingerprint: Int64, occurrence: Int64)?
    }

    private static let sampleColumns = """
        t.identifier, s.start_ms, s.end_ms, s.created_ms, s.value, s.unit, s.source, s.source_version, s.device, s.uuid,
        (SELECT id FROM snapshots WHERE seq = s.first_seen), s.verified_at,
        (SELECT id FROM snapshots WHERE seq = s.disappeared_in), s.disappeared_at, s.metadata
        """

    private func readSample(_ row: SQLiteStatement) -> ArchivedSample {
        ArchivedSample(
            typeIdentifier: row.text(0) ?? "", start: row.int64(1), end: row.int64(2), created: row.optionalInt64(3),
            value: row.text(4), unit: row.text(5), source: row.text(6), sourceVersion: row.text(7),
            device: row.text(8), uuid: row.text(9), firstSeenSnapshotID: row.text(10), verifiedAt: row.int64(11),
            disappearedSnapshotID: row.text(12), disappearedAt: row.optionalInt64(13), metadata: row.text(14))
    }

    /// Health Sync's fetch: the present samples of the query's types starting in [from, to),
    /// newest first, after `offset`, at most `limit` (with `lookAhead`, one more is read and
    /// passed to `body` with `extra` true, to tell whether more follow).
    func samples(_ query: SampleQuery, lookAhead: Bool = false, _ body: (ArchivedSample, _ extra: Bool) throws -> Void) throws -> Int {
        let marks = Array(repeating: "?", count: query.types.count).joined(separator: ", ")
        let statement = try db.prepare(
            """
            SELECT \(Archive.sampleColumns), s.fingerprint, s.occurrence FROM samples s JOIN sample_types t ON t.id = s.type_id
            WHERE t.identifier IN (\(marks)) AND s.start_ms >= ? AND s.start_ms < ? AND s.present = 1
            ORDER BY s.start_ms DESC, s.id DESC LIMIT ? OFFSET ?
            """)
        statement.bind(
            list: query.types, query.from ?? Int64.min / 2, query.to ?? Int64.max / 2, query.limit + (lookAhead ? 1 : 0), query.offset)
        var count = 0
        while try statement.step() {
            var sample = readSample(statement)
            sample.identity = (statement.int64(15), statement.int64(16))
            let extra = count >= query.limit
            try body(sample, extra)
            if !extra { count += 1 }
        }
        return count
    }

    /// The samples present in snapshot `a` and absent from the later snapshot `b`, by type and time.
    func disappeared(from a: Int64, to b: Int64, _ body: (ArchivedSample) throws -> Void) throws -> Int {
        func state(_ at: String) -> String {
            """
            coalesce((SELECT kind FROM sample_events e WHERE e.sample_id = s.id AND e.snapshot_seq <= \(at)
                      ORDER BY e.snapshot_seq DESC LIMIT 1), 'reappeared')
            """
        }
        let statement = try db.prepare(
            """
            SELECT \(Archive.sampleColumns) FROM samples s JOIN sample_types t ON t.id = s.type_id
            WHERE s.id IN (SELECT sample_id FROM sample_events WHERE kind = 'disappeared' AND snapshot_seq > ?1 AND snapshot_seq <= ?2)
              AND s.first_seen <= ?1 AND \(state("?1")) = 'reappeared' AND \(state("?2")) = 'disappeared'
            ORDER BY t.identifier, s.start_ms, s.id
            """)
        statement.bind(a, b)
        var count = 0
        while try statement.step() {
            try body(readSample(statement))
            count += 1
        }
        return count
    }

    /// How many samples the archive holds, and how many are present now.
    func sampleCounts() throws -> (total: Int64, present: Int64) {
        let statement = try db.prepare("SELECT count(*), coalesce(sum(present), 0) FROM samples")
        _ = try statement.step()
        return (statement.int64(0), statement.int64(1))
    }

    /// Keeps the sample archive true to the chain when snapshot `seq` is deleted; `previous`
    /// and `next` are its neighbours. Samples seen only by the deleted snapshot are removed;
    /// marks on it are moved to the next snapshot, or cancelled where the next snapshot undid
    /// them. Returns the number of samples removed.
    func forgetSamples(of seq: Int64, previous: Int64?, next: Int64?) throws -> Int64 {
        var removed: Int64 = 0
        func run(_ sql: String) throws {
            try db.execute(sql, context: "update the sample archive")
        }
        if let next {
            // Seen only here: first seen here and gone in the next snapshot (or nothing else).
            try run(
                """
                CREATE TEMP TABLE IF NOT EXISTS doomed (id INTEGER PRIMARY KEY);
                DELETE FROM doomed;
                INSERT INTO doomed SELECT id FROM samples WHERE first_seen = \(seq)
                    AND EXISTS (SELECT 1 FROM sample_events e WHERE e.sample_id = samples.id AND e.snapshot_seq = \(next) AND e.kind = 'disappeared');
                """)
            removed = try db.scalarInt("SELECT count(*) FROM doomed") ?? 0
            try run(
                """
                DELETE FROM sample_events WHERE sample_id IN (SELECT id FROM doomed);
                DELETE FROM samples WHERE id IN (SELECT id FROM doomed);
                UPDATE samples SET first_seen = \(next) WHERE first_seen = \(seq);
                DELETE FROM sample_events WHERE snapshot_seq IN (\(seq), \(next)) AND sample_id IN (
                    SELECT sample_id FROM sample_events WHERE snapshot_seq = \(seq)
                    INTERSECT SELECT sample_id FROM sample_events WHERE snapshot_seq = \(next));
                UPDATE sample_events SET snapshot_seq = \(next) WHERE snapshot_seq = \(seq);
                UPDATE samples SET disappeared_in = \(next) WHERE disappeared_in = \(seq);
                UPDATE samples SET last_seen = \(next) WHERE last_seen = \(seq);
                DELETE FROM doomed;
                """)
        } else {
            // The latest snapshot: what it first saw goes; its marks are undone.
            removed = try db.scalarInt("SELECT count(*) FROM samples WHERE first_seen = \(seq)") ?? 0
            try run(
                """
                DELETE FROM sample_events WHERE sample_id IN (SELECT id FROM samples WHERE first_seen = \(seq));
                DELETE FROM samples WHERE first_seen = \(seq);
                UPDATE samples SET present = 1, disappeared_in = NULL, disappeared_at = NULL
                    WHERE id IN (SELECT sample_id FROM sample_events WHERE snapshot_seq = \(seq) AND kind = 'disappeared');
                UPDATE samples SET present = 0,
                    disappeared_in = (SELECT max(snapshot_seq) FROM sample_events e WHERE e.sample_id = samples.id AND e.kind = 'disappeared' AND e.snapshot_seq < \(seq)),
                    disappeared_at = (SELECT at FROM sample_events e WHERE e.sample_id = samples.id AND e.kind = 'disappeared' AND e.snapshot_seq < \(seq) ORDER BY e.snapshot_seq DESC LIMIT 1)
                    WHERE id IN (SELECT sample_id FROM sample_events WHERE snapshot_seq = \(seq) AND kind = 'reappeared');
                DELETE FROM sample_events WHERE snapshot_seq = \(seq);
                """)
            if let previous { try run("UPDATE samples SET last_seen = \(previous) WHERE last_seen = \(seq)") }
        }
        return removed
    }
}
