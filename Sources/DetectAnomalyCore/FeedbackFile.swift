import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Unsafe pointers here are C interop (write(2) of the feedback file): kept.

/// One line of a feedback file: a verdict, `{"monitor":"api","episode":7,"verdict":"normal"}`, the
/// episode named by its id or by its `started_at` (a time), or by both (`"started_at"` beside an id);
/// or a monitor's sensitivity, `{"monitor":"api","sensitivity":"low"}`.
struct FeedbackEntry: Equatable {
    /// The monitor's id.
    var monitor: String
    /// The episode's number, when named by it.
    var id: Int64?
    /// The episode's onset time (ms), when named by it.
    var startedAtMs: Int64?
    /// The user's word on the episode.
    var verdict: EpisodeVerdict?
    /// The monitor's sensitivity, on a line that sets it.
    var sensitivity: Sensitivity?

    /// The entry as one NDJSON line, without its newline: monitor, episode (the id, or the time),
    /// started_at beside an id when known, verdict.
    var line: String {
        var out: [UInt8] = []
        JSONText.appendLiteral("{\"monitor\":", to: &out)
        JSONText.appendString(monitor, to: &out)
        if let sensitivity {
            JSONText.appendLiteral(",\"sensitivity\":", to: &out)
            JSONText.appendString(sensitivity.rawValue, to: &out)
            out.append(UInt8(ascii: "}"))
            return String(decoding: out, as: UTF8.self)
        }
        JSONText.appendLiteral(",\"episode\":", to: &out)
        if let id {
            JSONText.appendInt(id, to: &out)
            if let startedAtMs {
                JSONText.appendLiteral(",\"started_at\":\"", to: &out)
                Timestamp.append(milliseconds: startedAtMs, to: &out)
                out.append(UInt8(ascii: "\""))
            }
        } else if let startedAtMs {
            out.append(UInt8(ascii: "\""))
            Timestamp.append(milliseconds: startedAtMs, to: &out)
            out.append(UInt8(ascii: "\""))
        }
        JSONText.appendLiteral(",\"verdict\":", to: &out)
        JSONText.appendString(verdict?.rawValue ?? "", to: &out)
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }

    /// Reads an episode as a user names it: a whole number of 1 or more (its id) or an RFC 3339 time (its onset).
    static func episode(_ text: String) -> (id: Int64?, startedAtMs: Int64?)? {
        if let id = Int64(text) { return id >= 1 ? (id, nil) : nil }
        return Timestamp.parse(text).map { (nil, $0) }
    }

    /// Reads one line of a feedback file; throws what is wrong with it, in words.
    static func parse(_ bytes: [UInt8]) throws(StateError) -> FeedbackEntry {
        guard let object = (try? JSONParser.parse(bytes))?.objectValue else { throw StateError("not a JSON object") }
        guard let monitor = object["monitor"]?.stringValue, !monitor.isEmpty else {
            throw StateError("no \"monitor\" (a non-empty string)")
        }
        if let level = object["sensitivity"] {
            guard let word = level.stringValue, let sensitivity = Sensitivity(rawValue: word) else {
                throw StateError("\"sensitivity\" is not " + Sensitivity.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", "))
            }
            guard object["verdict"] == nil, object["episode"] == nil else {
                throw StateError("a line sets a sensitivity or gives a verdict, not both")
            }
            return FeedbackEntry(monitor: monitor, sensitivity: sensitivity)
        }
        guard let word = object["verdict"]?.stringValue, let verdict = EpisodeVerdict(rawValue: word) else {
            throw StateError("\"verdict\" is not " + EpisodeVerdict.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: " or "))
        }
        var entry = FeedbackEntry(monitor: monitor, verdict: verdict)
        switch object["episode"] {
        case .number(let text)?:
            guard let id = Int64(text), id >= 1 else { throw StateError("\"episode\" is not a whole number of 1 or more") }
            entry.id = id
        case .string(let text)?:
            guard let at = Timestamp.parse(text) else { throw StateError("\"episode\" is neither an id nor an RFC 3339 time") }
            entry.startedAtMs = at
        default:
            throw StateError("no \"episode\" (its id, or its started_at time)")
        }
        if let started = object["started_at"], started != .null {
            guard entry.id != nil, let text = started.stringValue, let at = Timestamp.parse(text) else {
                throw StateError("\"started_at\" is not an RFC 3339 time beside an episode id")
            }
            entry.startedAtMs = at
        }
        return entry
    }
}

/// The file behind `--feedback`: NDJSON verdicts, read whole at the start of a run, appended to by
/// `feedback add` one whole line at a time.
enum FeedbackFile {
    /// The entries of `path`, with their line numbers, and the lines that are not entries (a line
    /// number and what is wrong). A file that does not exist yet holds no verdicts.
    static func read(_ path: String) throws(ToolError) -> (
        entries: [(line: Int, entry: FeedbackEntry)], problems: [(line: Int, message: String)]
    ) {
        let bytes: [UInt8]
        switch AnomalyStateFile.readFile(path) {
        case .missing: return ([], [])
        case .failure(let reason): throw ToolError("cannot read feedback file \(path): \(reason)")
        case .contents(let contents): bytes = contents
        }
        var entries: [(line: Int, entry: FeedbackEntry)] = []
        var problems: [(line: Int, message: String)] = []
        var number = 0
        for line in bytes.split(separator: 0x0A, omittingEmptySubsequences: false) {
            number += 1
            var text = Array(line)
            if text.last == 0x0D { text.removeLast() }
            if text.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            do {
                entries.append((number, try FeedbackEntry.parse(text)))
            } catch {
                problems.append((number, "not a verdict: \(error.message)"))
            }
        }
        return (entries, problems)
    }

    /// Appends `entry` as one line, in one write under an exclusive lock, so a run reading the file
    /// and another writer never see half of it; a last line without its newline gets one first.
    static func append(_ entry: FeedbackEntry, to path: String) throws(ToolError) {
        let fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ToolError("cannot open feedback file \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        guard flock(fd, LOCK_EX) == 0 else { throw ToolError("cannot lock feedback file \(path): \(String(cString: strerror(errno)))") }
        var bytes = Array((entry.line + "\n").utf8)
        var info = stat()
        if fstat(fd, &info) == 0, info.st_size > 0 {
            var last: UInt8 = 0
            if pread(fd, &last, 1, off_t(info.st_size - 1)) == 1, last != 0x0A { bytes.insert(0x0A, at: 0) }
        }
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count, fsync(fd) == 0 else {
            throw ToolError("cannot write feedback file \(path): \(String(cString: strerror(errno)))")
        }
    }
}
