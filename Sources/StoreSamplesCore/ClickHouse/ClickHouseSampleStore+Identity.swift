import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A sample stored once: ClickHouse has no unique key, so a writer decides before it sends a
/// batch which of its samples are stored already, and sends only the others.
///
/// Asking the store about every sample would read, for each batch, a granule of every monitor
/// it names. Instead `marks` (kept by a materialized view as samples are inserted) says, per
/// identity agent, the latest time stored: a sample after it, and after every sample this unit
/// of work added for that agent, cannot be stored already. That is every sample of a stream in
/// time order. The others (a replay, a sample older than one this run sent, a second sample of
/// the same identity) are uncertain: they are looked for among the batch's earlier rows, then in
/// the store, by their monitors and times, and dropped when found: the same bytes a duplicate,
/// other bytes a conflict.
///
/// What this cannot see: two writers sending samples of one identity at the same moment (each
/// finds neither's). The views then count it twice until ClickHouse merges the copies (the key
/// is the identity); store-samples serializes its own writers, so it takes two processes
/// replaying one agent's samples at once.
extension ClickHouseSampleStore {
    /// An identity agent's times: the latest stored before this unit of work, the latest this
    /// unit added, and the monitors of the samples it added at that very time.
    final class AgentTimes {
        let stored: Int64
        var added = Int64.min
        /// The monitors of the samples added at `added`: the first on its own, so that samples
        /// of distinct times (the usual case) never hash a monitor into the set.
        var firstAtAdded = ""
        var othersAtAdded: Set<String> = []

        init(stored: Int64) { self.stored = stored }
    }

    /// Reads `marks`: each identity agent's latest sample time, and the next sample number.
    func loadMarks() throws {
        var reader = try rows(
            "SELECT identity_agent, maxMerge(upto), toInt64(maxMerge(last_id)) FROM \(placement.table("marks")) "
                + "GROUP BY identity_agent")
        var times: [String: AgentTimes] = [:]
        var last: Int64 = 0
        while !reader.atEnd {
            let agent = try reader.string()
            times[agent] = AgentTimes(stored: try reader.int64())
            last = max(last, try reader.int64())
        }
        guard last >= 0, last < Int64.max / 2 else {
            throw ToolError("\(location.display): the marks table holds a last sample number of \(last)")
        }
        caches.agentTimes = times
        caches.nextSampleID = last + 1
    }

    /// Whether `sample` cannot be stored already (see the type's notes); notes it as added.
    func isNew(_ sample: StorableSample) -> Bool {
        let times: AgentTimes = sample.withText(sample.agentRange) { bytes in
            if let last = caches.lastAgent, Self.same(last.name, bytes) { return last.times }
            let name = bytes.map { String(decoding: $0, as: UTF8.self) } ?? ""
            let times = caches.agentTimes![name] ?? AgentTimes(stored: Int64.min)
            caches.agentTimes![name] = times
            caches.lastAgent = (name, times)
            return times
        }
        let at = sample.at
        if at <= times.stored { return false }
        if at > times.added {
            times.added = at
            times.firstAtAdded = sample.monitor
            if !times.othersAtAdded.isEmpty { times.othersAtAdded.removeAll(keepingCapacity: true) }
            return true
        }
        guard at == times.added, times.firstAtAdded != sample.monitor else { return false }
        return times.othersAtAdded.insert(sample.monitor).inserted
    }

    private static func same<Bytes: Collection<UInt8>>(_ text: String, _ bytes: Bytes?) -> Bool {
        guard let bytes else { return text.isEmpty }
        return text.utf8.count == bytes.count && text.utf8.elementsEqual(bytes)
    }

    /// A sample's identity as bytes: monitor, time and identity agent, each length-prefixed.
    private struct Identity: Hashable {
        let bytes: [UInt8]
        let monitor: String
        let at: Int64
    }

    private static func identity(_ rows: [UInt8], _ row: (monitor: Range<Int>, at: Int64, agent: Range<Int>, record: Range<Int>))
        -> Identity
    {
        var key = RowBinaryWriter()
        key.string(rows[row.monitor])
        key.int64(row.at)
        key.string(rows[row.agent])
        return Identity(bytes: key.bytes, monitor: String(decoding: rows[row.monitor], as: UTF8.self), at: row.at)
    }

    /// Decides which of the open batch's uncertain samples are stored already (or earlier in the
    /// batch), drops them from the batch and numbers the rest again from the batch's first number.
    func settleUncertain() throws -> BatchOutcome {
        var outcome = BatchOutcome()
        guard !batch.uncertain.isEmpty else { return outcome }
        let rows = batch.rows.bytes
        let parsed = try batch.rowStarts.map { try ClickHouseRows.identity(ofRowAt: $0, in: rows) }
        // The batch's rows by identity, in order; a later row of an identity is always uncertain.
        var groups: [Identity: [Int]] = [:]
        var order: [Identity] = []
        for position in parsed.indices {
            let key = Self.identity(rows, parsed[position])
            if groups[key] == nil { order.append(key) }
            groups[key, default: []].append(position)
        }
        // The store is asked about the identities whose first row is uncertain, by monitor and time.
        let uncertain = Set(batch.uncertain)
        let lookFor = order.filter { uncertain.contains(groups[$0]![0]) }
        var stored: [Identity: [UInt8]] = [:]
        for start in stride(from: 0, to: lookFor.count, by: 1000) {
            let chunk = lookFor[start..<min(lookFor.count, start + 1000)]
            let from = chunk.map(\.at).min()!
            let until = chunk.map(\.at).max()! + 1
            let monitors = Set(chunk.map(\.monitor)).sorted().map(clickHouseLiteral).joined(separator: ", ")
            var reader = try self.rows(
                """
                SELECT monitor, at, identity_agent, record FROM \(placement.table("samples"))
                WHERE \(timeCondition(from: from, until: until)) AND monitor IN (\(monitors))
                """)
            while !reader.atEnd {
                let monitor = try reader.stringBytesRange()
                let at = try reader.int64()
                let agent = try reader.stringBytesRange()
                let record = try reader.stringBytesRange()
                let key = Self.identity(reader.bytes, (monitor, at, agent, record))
                if groups[key] != nil, stored[key] == nil { stored[key] = Array(reader.bytes[record]) }
            }
        }
        // Each row is measured against the stored record of its identity, else the batch's first row of it.
        var dropped = Set<Int>()
        for key in order {
            let positions = groups[key]!
            let reference = stored[key] ?? Array(rows[parsed[positions[0]].record])
            for position in positions.dropFirst(stored[key] == nil ? 1 : 0) {
                dropped.insert(position)
                if rows[parsed[position].record].elementsEqual(reference) {
                    outcome.duplicates.append(position)
                } else {
                    outcome.conflicts.append(position)
                }
            }
        }
        guard !dropped.isEmpty else { return outcome }
        // The batch without them, its numbers given again in order.
        var kept = RowBinaryWriter()
        var starts: [Int] = []
        var offsets: [Int] = []
        var spans: [Int32] = []
        var id = batch.firstID
        for position in batch.rowStarts.indices where !dropped.contains(position) {
            spans.append(batch.rowSpans[position])
            let end = position + 1 < batch.rowStarts.count ? batch.rowStarts[position + 1] : rows.count
            starts.append(kept.bytes.count)
            offsets.append(kept.bytes.count + batch.idOffsets[position] - batch.rowStarts[position])
            kept.bytes.append(contentsOf: rows[batch.rowStarts[position]..<end])
            for index in 0..<8 { kept.bytes[offsets.last! + index] = UInt8(truncatingIfNeeded: UInt64(id) >> (8 * index)) }
            id += 1
        }
        batch.rows = kept
        batch.rowStarts = starts
        batch.idOffsets = offsets
        // A dropped sample still counts in its monitor's span: the span may then say a place that
        // only a dropped sample came from, and its monitor is judged sample by sample, as exactly.
        batch.rowSpans = spans
        batch.count = starts.count
        caches.nextSampleID = id
        outcome.duplicates.sort()
        outcome.conflicts.sort()
        return outcome
    }

    /// The condition of a time window `[from, until)` on the samples table: on the day that leads
    /// its key too, or every day's granules are read.
    func timeCondition(from: Int64, until: Int64) -> String {
        "intDiv(at, 86400000) >= intDiv(toInt64(\(from)), 86400000) AND intDiv(at, 86400000) <= intDiv(toInt64(\(until)) - 1, 86400000) "
            + "AND at >= \(from) AND at < \(until)"
    }
}
