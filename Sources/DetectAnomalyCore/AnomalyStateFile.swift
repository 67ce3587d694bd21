import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The monitors of one run, in the order first seen, each with its detector state.
///
/// Looked up by the monitor id's UTF-8 bytes in an open-addressing table, so a sample's id is
/// never turned into a String (only a new monitor's is).
final class MonitorTable<Detector: MonitorDetector> {
    // Read or changed for every sample, used from one thread: `detectors`, `episodes`, `keys`,
    // `slots` and `judged` are exempt from dynamic exclusivity checks, which saves 5.1% of
    // detect-anomaly's instructions on 50,000 bench lines (callgrind). `names` and `judgedCount`,
    // changed only for a new monitor, are not (exempting them saved 0.03%).
    private(set) var names: [String] = []
    @exclusivity(unchecked) private(set) var detectors: [Detector] = []
    /// Each monitor's episodes, beside its detector.
    @exclusivity(unchecked) private(set) var episodes: [EpisodeTracker] = []
    /// Each monitor's memory for the user's verdicts (envelope only: the detector with channels).
    @exclusivity(unchecked) private(set) var memories: [FeedbackMemory] = []
    /// Each monitor's sensitivity factor (1 unless the feedback file sets one).
    @exclusivity(unchecked) private var sensitivities: [Double] = []
    /// The sensitivities the feedback file sets, by monitor, for monitors not seen yet.
    private var pendingSensitivities: [String: Double] = [:]
    @exclusivity(unchecked) private var keys: [[UInt8]] = []
    /// Positions in `names` + 1, 0 for an empty slot; the count is a power of two, at most half full.
    @exclusivity(unchecked) private var slots = [Int32](repeating: 0, count: 64)

    /// Whether each monitor was judged in this run (a monitor only in the state file was not).
    @exclusivity(unchecked) private var judged: [Bool] = []
    /// How many monitors were judged in this run: the monitors `--summary` counts.
    private(set) var judgedCount = 0

    /// The number of monitors, from the state file and this run.
    var count: Int { names.count }

    /// Judges `observation` with the detector of the monitor whose id is `id` (created empty
    /// when the monitor is new), changing it in place, and places the sample in the monitor's
    /// episodes (nil when it is in none).
    func judge(
        _ observation: Observation, at atMs: Int64, of id: UnsafeBufferPointer<UInt8>,
        settings: DetectorSettings
    ) -> (Detector.Report, EpisodeMark?) {
        let position: Int
        switch find(id) {
        case .found(let known):
            position = known
        case .empty:
            position = names.count
            add(String(decoding: id, as: UTF8.self), Detector(settings: settings))
        }
        if !judged[position] {
            judged[position] = true
            judgedCount += 1
        }
        var report = detectors[position].judge(observation, settings: settings)
        guard report.verdict != .unknown else { return (report, nil) }
        var over = report.verdict == .degrading
        guard var channels = report.channels else {
            let mark = episodes[position].advance(over: over, score: report.score, atMs: atMs, endAfter: settings.detector.episodeEnd)
            return (report, mark)
        }
        // The monitor's sensitivity scales the evidence (a sample over the limit by isitup's simulated
        // rules alone, with no channel over it, stays over).
        let factor = sensitivities[position]
        if factor != 1 {
            let simulatedOver = over && channels.max() <= 1
            channels *= factor
            let evidence = max(0, channels.max())
            over = evidence > 1 || simulatedOver
            if !simulatedOver { report.rejudge(over: over, score: evidenceScore(evidence, scale: 1)) }
        }
        // An onset like an episode the user called normal is not raised: stable, half its score.
        if over, !episodes[position].isOpen, memories[position].mutes(channels) {
            report.rejudge(over: false, score: report.score / 2)
            over = false
        }
        let mark = episodes[position].advance(over: over, score: report.score, atMs: atMs, endAfter: settings.detector.episodeEnd)
        if let mark { memories[position].record(mark, channels) }
        return (report, mark)
    }

    /// Adds a monitor (from a state file); it must not be present.
    func add(
        _ monitor: String, _ detector: Detector, episodes tracker: EpisodeTracker = EpisodeTracker(),
        memory: FeedbackMemory = FeedbackMemory()
    ) {
        var name = monitor
        let key = name.withUTF8 { Array($0) }
        names.append(monitor)
        detectors.append(detector)
        episodes.append(tracker)
        memories.append(memory)
        sensitivities.append(pendingSensitivities[monitor] ?? 1)
        judged.append(false)
        keys.append(key)
        if names.count * 2 > slots.count { grow() }
        key.withUnsafeBufferPointer { insert(names.count - 1, hash: Self.hash($0)) }
    }

    /// Whether `monitor` is present.
    func contains(_ monitor: String) -> Bool { position(of: monitor) != nil }

    /// The position of `monitor`, when present.
    func position(of monitor: String) -> Int? {
        var name = monitor
        return name.withUTF8 { if case .found(let position) = find($0) { return position } else { return nil } }
    }

    /// Sets a monitor's sensitivity, now or when it first comes.
    func setSensitivity(_ sensitivity: Sensitivity, of monitor: String) {
        pendingSensitivities[monitor] = sensitivity.factor
        if let position = position(of: monitor) { sensitivities[position] = sensitivity.factor }
    }

    /// Uses a verdict on an episode of the monitor at `position` (see `FeedbackMemory.take`).
    func take(
        _ verdict: EpisodeVerdict, id: Int64?, startedAtMs: Int64?, at position: Int
    ) -> FeedbackMemory.Outcome {
        memories[position].take(verdict, id: id, startedAtMs: startedAtMs, started: episodes[position].count)
    }

    private enum Lookup {
        case found(Int)
        case empty
    }

    private func find(_ id: UnsafeBufferPointer<UInt8>) -> Lookup {
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: Self.hash(id)) & mask
        while true {
            let entry = Int(slots[slot])
            if entry == 0 { return .empty }
            let matches = keys[entry - 1].withUnsafeBufferPointer { key in
                key.count == id.count && (key.count == 0 || memcmp(key.baseAddress!, id.baseAddress!, key.count) == 0)
            }
            if matches { return .found(entry - 1) }
            slot = (slot + 1) & mask
        }
    }

    private func insert(_ position: Int, hash: UInt64) {
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        while slots[slot] != 0 { slot = (slot + 1) & mask }
        slots[slot] = Int32(position + 1)
    }

    private func grow() {
        slots = [Int32](repeating: 0, count: slots.count * 2)
        for (position, key) in keys.enumerated() {
            key.withUnsafeBufferPointer { insert(position, hash: Self.hash($0)) }
        }
    }

    /// FNV-1a over the bytes, then a final mix so the low bits spread.
    private static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        hash ^= hash >> 29
        hash = hash &* 0xbf58_476d_1ce4_e5b9
        return hash ^ (hash >> 32)
    }
}

/// The state file behind `--state`: every monitor's window and detector state, as JSON,
/// versioned, written atomically (a temporary file in the same directory, fsync, rename,
/// mode 0600). A file that is not one, is of another version, or was written with other
/// settings is an error naming it; it is never silently replaced.
enum AnomalyStateFile {
    /// The `format` every state file names.
    static let format = "vitals detect-anomaly state"
    /// The version this build writes.
    static let version = 5
    /// The versions it reads: 4 is 5 without the monitors' memory for verdicts.
    static let readable = 4...5

    /// Reads the monitors saved in `path`; a file that does not exist yet gives none.
    static func load<Detector: MonitorDetector>(
        _ path: String, settings: DetectorSettings,
        into table: MonitorTable<Detector>
    ) throws(ToolError) {
        let bytes: [UInt8]
        switch readFile(path) {
        case .missing:
            // A first run: the file will be created at the end, so its directory must take it.
            let directory = AtomicFile.directoryName(path)
            if access(directory, W_OK) != 0 {
                throw ToolError("state file \(path) cannot be created: \(directory): \(String(cString: strerror(errno)))")
            }
            return
        case .failure(let reason): throw ToolError("cannot read state file \(path): \(reason)")
        case .contents(let contents): bytes = contents
        }
        func fail(_ message: String) -> ToolError {
            ToolError("state file \(path): \(message); it was left as it is (fix or remove it, or name another --state file)")
        }
        // The header's fields are read as values; the monitors are found as byte ranges and read one
        // at a time, so memory stays near the file's size however many monitors there are.
        try load(bytes.span, path: path, settings: settings, into: table, fail: fail)
    }

    private static func load<Detector: MonitorDetector>(
        _ bytes: Span<UInt8>, path: String, settings: DetectorSettings,
        into table: MonitorTable<Detector>,
        fail: (String) -> ToolError
    ) throws(ToolError) {
        var object = JSONObject()
        var monitorsRange: Range<Int>?
        do {
            for field in try JSONParser.scanObject(bytes) {
                let key = try JSONParser.parse(bytes.extracting((field.keyStart - 1)..<(field.keyEnd + 1)))
                guard let name = key.stringValue else { continue }
                if name == "monitors" {
                    monitorsRange = field.valueStart..<field.valueEnd
                } else {
                    object[name] = try JSONParser.parse(bytes.extracting(field.valueStart..<field.valueEnd))
                }
            }
        } catch {
            throw fail("not a detect-anomaly state file (not JSON: \(error))")
        }
        guard object["format"]?.stringValue == format else {
            throw fail("not a detect-anomaly state file (no \"format\": \"\(format)\")")
        }
        guard let fileVersion = object["version"]?.intValue else { throw fail("no version number") }
        guard readable.contains(fileVersion) else {
            throw ToolError(
                "state file \(path) is version \(fileVersion); this detect-anomaly reads versions \(readable.lowerBound) and \(readable.upperBound) "
                    + "(use the detect-anomaly that wrote it, or name another --state file)")
        }
        for (key, expected) in settingsFields(settings) where object[key] != expected {
            let found = object[key].map(\.jsonText) ?? "nothing"
            throw ToolError(
                "state file \(path) was written with --\(key.replacingUnderscores) \(found.unquoted); "
                    + "this run has --\(key.replacingUnderscores) \(expected.jsonText.unquoted) "
                    + "(run with the same options, or name another --state file)")
        }
        guard let monitorsRange, let monitors = try? JSONParser.scanArray(bytes.extracting(monitorsRange)) else {
            throw fail("\"monitors\" is not an array")
        }
        for (position, range) in monitors.enumerated() {
            let start = monitorsRange.lowerBound + range.lowerBound
            let entry = try? JSONParser.parse(bytes.extracting(start..<(start + range.count)))
            guard let state = entry?.objectValue, let name = state["monitor"]?.stringValue else {
                throw fail("monitor \(position + 1) has no \"monitor\" name")
            }
            guard !table.contains(name) else { throw fail("monitor '\(name)' is listed twice") }
            do {
                table.add(
                    name, try Detector(state: state, settings: settings),
                    episodes: try EpisodeTracker(state: state, endAfter: settings.detector.episodeEnd),
                    memory: try FeedbackMemory(state: state))
            } catch {
                throw fail("monitor '\(name)': \(error.message)")
            }
        }
    }

    /// The episodes a state file remembers of `monitor` (for `feedback add`), whatever the options it
    /// was written with; none when the monitor or the file is not there.
    static func episodes(_ path: String, of monitor: String) throws(ToolError) -> [EpisodeSignature] {
        let bytes: [UInt8]
        switch readFile(path) {
        case .missing: return []
        case .failure(let reason): throw ToolError("cannot read state file \(path): \(reason)")
        case .contents(let contents): bytes = contents
        }
        guard let root = (try? JSONParser.parse(bytes))?.objectValue, root["format"]?.stringValue == format,
            let monitors = root["monitors"]?.arrayValue
        else {
            throw ToolError("state file \(path): not a detect-anomaly state file")
        }
        for entry in monitors {
            guard let state = entry.objectValue, state["monitor"]?.stringValue == monitor else { continue }
            do {
                return try FeedbackMemory(state: state).episodes
            } catch {
                throw ToolError("state file \(path): monitor '\(monitor)': \(error.message)")
            }
        }
        return []
    }

    /// Writes the monitors to `path` atomically.
    static func save<Detector: MonitorDetector>(
        _ path: String, settings: DetectorSettings,
        table: MonitorTable<Detector>
    ) throws(ToolError) {
        var out: [UInt8] = []
        out.reserveCapacity(64 + table.count * (settings.window * 12 + 64))
        JSONText.appendLiteral("{\"format\":", to: &out)
        JSONText.appendString(format, to: &out)
        JSONText.appendLiteral(",\"version\":", to: &out)
        JSONText.appendInt(version, to: &out)
        for (key, value) in settingsFields(settings) {
            out.append(UInt8(ascii: ","))
            JSONText.appendString(key, to: &out)
            out.append(UInt8(ascii: ":"))
            JSONText.append(value, to: &out)
        }
        JSONText.appendLiteral(",\"monitors\":[", to: &out)
        for (position, name) in table.names.enumerated() {
            out.append(contentsOf: position == 0 ? [0x0A] : [UInt8(ascii: ","), 0x0A])
            JSONText.appendLiteral("{\"monitor\":", to: &out)
            JSONText.appendString(name, to: &out)
            table.detectors[position].encodeState(to: &out)
            table.episodes[position].encodeState(to: &out)
            if settings.detector == .envelope { table.memories[position].encodeState(to: &out) }
            out.append(UInt8(ascii: "}"))
        }
        JSONText.appendLiteral("\n]}\n", to: &out)
        try AtomicFile.write(out, to: path)
    }

    /// The settings a state file records, with the values it must hold.
    private static func settingsFields(_ settings: DetectorSettings) -> [(String, JSONValue)] {
        [
            ("detector", .string(settings.detector.rawValue)),
            ("field", .string(settings.field)),
            ("direction", .string(settings.direction.rawValue)),
            ("window", .integer(settings.window)),
            ("min_samples", .integer(settings.minSamples)),
            ("threshold", .number(exactText(settings.threshold))),
        ]
    }

    private static func exactText(_ value: Double) -> String {
        var out: [UInt8] = []
        StateText.exact(value, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    // MARK: - Files

    /// A file's bytes, or why there are none.
    enum ReadResult {
        case missing
        case failure(String)
        case contents([UInt8])
    }

    /// Reads a whole file.
    static func readFile(_ path: String) -> ReadResult {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            return errno == ENOENT ? .missing : .failure(String(cString: strerror(errno)))
        }
        defer { close(fd) }
        var contents: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(String(cString: strerror(errno)))
            }
            if count == 0 { break }
            contents.append(contentsOf: chunk[0..<count])
        }
        return .contents(contents)
    }

}

extension String {
    fileprivate var replacingUnderscores: String { String(map { $0 == "_" ? "-" : $0 }) }
    fileprivate var unquoted: String { hasPrefix("\"") && hasSuffix("\"") && count >= 2 ? String(dropFirst().dropLast()) : self }
}
