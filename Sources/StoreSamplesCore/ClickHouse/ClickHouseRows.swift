import VitalsKit

/// The rows of the ClickHouse store's tables in `RowBinary`: for each table the columns in the
/// order its rows are written and read, an encoder and a decoder, kept side by side so they
/// cannot drift apart (the tests read back what was written, cut at every byte).
enum ClickHouseRows {
    // MARK: - monitors

    /// The monitors table's columns, as rows are written and read.
    static let monitorColumns = "monitor, id, name, kind, target, agent, description, check_interval, first_seen, config, enabled, version"

    static func write(_ record: MonitorRecord, version: UInt64, to rows: inout RowBinaryWriter) {
        let metadata = record.metadata
        rows.string(record.monitor)
        rows.uint64(UInt64(max(0, record.id)))
        rows.optionalString(metadata.name)
        rows.optionalString(metadata.kind)
        rows.optionalString(metadata.target)
        rows.optionalString(metadata.agent)
        rows.optionalString(metadata.description)
        rows.optionalInt64(metadata.checkInterval)
        rows.int64(record.firstSeen)
        rows.optionalString(metadata.config)
        rows.optionalUInt8(metadata.enabled.map { $0 ? 1 : 0 })
        rows.uint64(version)
    }

    /// A monitor row (its version read and dropped: 18.16 wants it selected for `FINAL` through a
    /// `Distributed` table).
    static func monitor(_ reader: inout RowBinaryReader) throws -> MonitorRecord {
        let monitor = try reader.string()
        let id = try reader.uint64AsInt64()
        let metadata = MonitorMetadata(
            name: try reader.optionalString(), kind: try reader.optionalString(),
            target: try reader.optionalString(), agent: try reader.optionalString(),
            description: try reader.optionalString(),
            checkInterval: try reader.optionalInt64(), config: nil, enabled: nil)
        let firstSeen = try reader.int64()
        var record = MonitorRecord(id: id, monitor: monitor, metadata: metadata, firstSeen: firstSeen)
        record.metadata.config = try reader.optionalString()
        record.metadata.enabled = try reader.optionalUInt8().map { $0 != 0 }
        _ = try reader.uint64()
        return record
    }

    // MARK: - agents

    /// The agents table's columns, as rows are written and read.
    static let agentColumns = "id, status, created_at, last_seen, name, version"

    static func write(_ record: AgentRecord, version: UInt64, to rows: inout RowBinaryWriter) {
        rows.string(record.id)
        rows.string(record.status.rawValue)
        rows.int64(record.createdAt)
        rows.int64(record.lastSeen)
        rows.optionalString(record.name)
        rows.uint64(version)
    }

    /// An agent row (its monitor count 0: the monitors table says it; the version dropped, as for monitors).
    static func agent(_ reader: inout RowBinaryReader) throws -> AgentRecord {
        let record = AgentRecord(
            id: try reader.string(), status: try AgentStatus(stored: try reader.string()),
            createdAt: try reader.int64(), lastSeen: try reader.int64(), monitorCount: 0,
            name: try reader.optionalString())
        _ = try reader.uint64()
        return record
    }

    // MARK: - samples

    /// The samples table's columns, as rows are written.
    static let sampleColumns =
        "monitor, at, identity_agent, id, batch, received_ms, status, latency_ms, message, tls_expiry_days, speed_mbps, origin, agent, "
        + "held, record, reason, consensus"

    /// Where a row's `received_ms` is, from where its number is (`batch` lies between them).
    static let receivedAfterID = 16

    /// Appends a sample's row: its number `id` in the store, the INSERT's `batch` number (0 for a
    /// held sample: a follower never writes it), its origin (`remote`), the agent a remote sample
    /// came from, and whether it is held; `received_ms` is 0 until `stampReceived` sets it when
    /// the batch is sent. Returns where the number's 8 bytes are (a batch numbers its samples
    /// again when it drops one stored already).
    @discardableResult
    static func write(
        _ sample: StorableSample, id: Int64, remote: Bool, agent: String?, held: Bool, batch: UInt64, to rows: inout RowBinaryWriter
    ) -> Int {
        rows.string(sample.monitor)
        rows.int64(sample.at)
        sample.withText(sample.agentRange) { agent in
            if let agent { rows.string(agent) } else { rows.string("") }
        }
        let idOffset = rows.bytes.count
        rows.uint64(UInt64(max(0, id)))
        rows.uint64(held ? 0 : batch)
        rows.int64(0)
        rows.uint8(sample.status.storeCode)
        rows.optionalFloat64(sample.latencyMs)
        sample.withText(sample.messageRange) { rows.optionalBytes($0) }
        rows.optionalInt64(sample.tlsExpiryDays)
        rows.optionalFloat64(sample.speedMbps)
        rows.uint8(remote ? 1 : 0)
        rows.optionalString(agent)
        rows.uint8(held ? 1 : 0)
        rows.string(sample.line)
        sample.withText(sample.reasonRange) { rows.optionalBytes($0) }
        // The consensus, the row's last byte: the sample's own status until the batch is judged
        // (`ClickHouseSampleStore.judgeBatch`).
        rows.uint8(sample.status.storeCode)
        return idOffset
    }

    /// Sets `received_ms` of the rows whose numbers are at `idOffsets`.
    static func stampReceived(_ milliseconds: Int64, idOffsets: [Int], in rows: inout [UInt8]) {
        for offset in idOffsets {
            for index in 0..<8 { rows[offset + receivedAfterID + index] = UInt8(truncatingIfNeeded: milliseconds >> (8 * index)) }
        }
    }

    /// Appends the sample rows that begin at `starts` in `rows` (`write`'s, one after another) to
    /// `sorted` in the samples table's key order: the day of their time, monitor, time, identity
    /// agent, each string by its bytes as ClickHouse compares them. `monitorRanks` gives each row's
    /// monitor's place in the byte order of the batch's monitors, so only rows of one monitor and
    /// one millisecond compare bytes. 18.16 skips sorting a block it finds in order, and the copy
    /// that sorting makes of every column: a million bench samples cost the server 0.3 s less CPU
    /// (3.6-3.8 s against 4.0 s, three runs each, in turn).
    static func appendSorted(_ rows: [UInt8], starts: [Int], monitorRanks: [Int32], to sorted: inout [UInt8]) throws {
        struct Key {
            let day: Int64
            let at: Int64
            let monitor: Int32
            let position: Int32
            let place: Range<Int>
        }
        var keys: [Key] = []
        keys.reserveCapacity(starts.count)
        for (position, start) in starts.enumerated() {
            var reader = RowBinaryReader(rows, at: start)
            _ = try reader.stringBytesRange()
            let at = try reader.int64()
            keys.append(
                Key(
                    day: at / 86_400_000, at: at, monitor: monitorRanks[position], position: Int32(position),
                    place: try reader.stringBytesRange()))
        }
        keys.sort { first, second in
            if first.day != second.day { return first.day < second.day }
            if first.monitor != second.monitor { return first.monitor < second.monitor }
            if first.at != second.at { return first.at < second.at }
            if !rows[first.place].elementsEqual(rows[second.place]) {
                return rows[first.place].lexicographicallyPrecedes(rows[second.place])
            }
            return first.position < second.position
        }
        for key in keys {
            let position = Int(key.position)
            sorted.append(contentsOf: rows[starts[position]..<(position + 1 < starts.count ? starts[position + 1] : rows.count)])
        }
    }

    /// The place of each of `names` in their order by bytes, as ClickHouse orders strings (Swift's
    /// `<` orders by Unicode, and puts "e" with a combining accent beside "é", not before "f").
    static func byteOrderRanks(_ names: [String]) -> [Int32] {
        let order = names.indices.sorted { names[$0].utf8.lexicographicallyPrecedes(names[$1].utf8) }
        var ranks = [Int32](repeating: 0, count: names.count)
        for (rank, index) in order.enumerated() { ranks[index] = Int32(rank) }
        return ranks
    }

    /// Reads past a sample row's number, batch and received_ms, which `write` writes together.
    private static func skipNumbering(_ reader: inout RowBinaryReader) throws {
        _ = try reader.uint64()
        _ = try reader.uint64()
        _ = try reader.int64()
    }

    /// What judging needs of a sample row written by `write` at `start`: its monitor, time,
    /// identity agent, status and whether it is held.
    static func vote(ofRowAt start: Int, in rows: [UInt8]) throws -> (
        monitor: Range<Int>, at: Int64, place: Range<Int>, status: UInt8, held: Bool
    ) {
        var reader = RowBinaryReader(rows, at: start)
        let monitor = try reader.stringBytesRange()
        let at = try reader.int64()
        let place = try reader.stringBytesRange()
        try skipNumbering(&reader)
        let status = try reader.uint8()
        _ = try reader.optionalFloat64()
        _ = try reader.isNull() ? nil : try reader.stringBytesRange()
        _ = try reader.optionalInt64()
        _ = try reader.optionalFloat64()
        _ = try reader.uint8()
        _ = try reader.isNull() ? nil : try reader.stringBytesRange()
        return (monitor, at, place, status, try reader.uint8() != 0)
    }

    /// A sample row's identity (monitor, time, identity agent) and record, read back from the
    /// bytes `write` appended at `start`.
    static func identity(ofRowAt start: Int, in rows: [UInt8]) throws -> (
        monitor: Range<Int>, at: Int64, agent: Range<Int>, record: Range<Int>
    ) {
        var reader = RowBinaryReader(rows, at: start)
        let monitor = try reader.stringBytesRange()
        let at = try reader.int64()
        let agent = try reader.stringBytesRange()
        try skipNumbering(&reader)
        _ = try reader.uint8()
        _ = try reader.optionalFloat64()
        _ = try reader.isNull() ? nil : try reader.stringBytesRange()
        _ = try reader.optionalInt64()
        _ = try reader.optionalFloat64()
        _ = try reader.uint8()
        _ = try reader.isNull() ? nil : try reader.stringBytesRange()
        _ = try reader.uint8()
        return (monitor, at, agent, try reader.stringBytesRange())
    }

    /// The columns of a `StoredSample`, as queries select them.
    static let storedSampleColumns = "id, at, status, latency_ms, message, tls_expiry_days, identity_agent, reason"

    static func storedSample(_ reader: inout RowBinaryReader) throws -> StoredSample {
        StoredSample(
            id: try reader.uint64AsInt64(), at: try reader.int64(),
            status: try SampleStatus(storeCode: Int64(try reader.uint8())), latencyMs: try reader.optionalFloat64(),
            message: try reader.optionalString(), tlsExpiryDays: try reader.optionalInt64(), place: try reader.string(),
            reason: try reader.optionalString())
    }
}
