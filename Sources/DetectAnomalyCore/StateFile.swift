#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import VitalsKit

/// The monitors of one run, in the order first seen, each with its detector state.
final class MonitorTable<Detector: MonitorDetector> {
    private var index: [String: Int] = [:]
    private(set) var names: [String] = []
    private(set) var detectors: [Detector] = []

    /// The number of monitors.
    var count: Int { names.count }

    /// The detector of `monitor`, created empty when the monitor is new.
    func detector(for monitor: String, settings: DetectorSettings) -> Detector {
        if let position = index[monitor] { return detectors[position] }
        let detector = Detector(settings: settings)
        add(monitor, detector)
        return detector
    }

    /// Adds a monitor (from a state file).
    func add(_ monitor: String, _ detector: Detector) {
        index[monitor] = names.count
        names.append(monitor)
        detectors.append(detector)
    }

    /// Whether `monitor` is present.
    func contains(_ monitor: String) -> Bool { index[monitor] != nil }
}

/// The state file behind `--state`: every monitor's window and detector state, as JSON,
/// versioned, written atomically (a temporary file in the same directory, fsync, rename,
/// mode 0600). A file that is not one, is of another version, or was written with other
/// settings is an error naming it; it is never silently replaced.
enum StateFile {
    /// The `format` every state file names.
    static let format = "vitals detect-anomaly state"
    /// The version this build reads and writes.
    static let version = 1

    /// Reads the monitors saved in `path`; a file that does not exist yet gives none.
    static func load<Detector: MonitorDetector>(_ path: String, settings: DetectorSettings,
                                                into table: MonitorTable<Detector>) throws(ToolError) {
        let bytes: [UInt8]
        switch readFile(path) {
        case .missing: return
        case .failure(let reason): throw ToolError("cannot read state file \(path): \(reason)")
        case .contents(let contents): bytes = contents
        }
        func fail(_ message: String) -> ToolError {
            ToolError("state file \(path): \(message); it was left as it is (fix or remove it, or name another --state file)")
        }
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            throw fail("not a detect-anomaly state file (not JSON: \(error))")
        }
        guard let object = value.objectValue, object["format"]?.stringValue == format else {
            throw fail("not a detect-anomaly state file (no \"format\": \"\(format)\")")
        }
        guard let fileVersion = object["version"]?.intValue else { throw fail("no version number") }
        guard fileVersion == version else {
            throw ToolError("state file \(path) is version \(fileVersion); this detect-anomaly reads version \(version) "
                            + "(use the detect-anomaly that wrote it, or name another --state file)")
        }
        for (key, expected) in settingsFields(settings) where object[key] != expected {
            let found = object[key].map(\.jsonText) ?? "nothing"
            throw ToolError("state file \(path) was written with --\(key.replacingUnderscores) \(found.unquoted); "
                            + "this run has --\(key.replacingUnderscores) \(expected.jsonText.unquoted) "
                            + "(run with the same options, or name another --state file)")
        }
        guard let monitors = object["monitors"]?.arrayValue else { throw fail("\"monitors\" is not an array") }
        for (position, entry) in monitors.enumerated() {
            guard let state = entry.objectValue, let name = state["monitor"]?.stringValue else {
                throw fail("monitor \(position + 1) has no \"monitor\" name")
            }
            guard !table.contains(name) else { throw fail("monitor '\(name)' is listed twice") }
            do {
                table.add(name, try Detector(state: state, settings: settings))
            } catch {
                throw fail("monitor '\(name)': \(error.message)")
            }
        }
    }

    /// Writes the monitors to `path` atomically.
    static func save<Detector: MonitorDetector>(_ path: String, settings: DetectorSettings,
                                                table: MonitorTable<Detector>) throws(ToolError) {
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
            out.append(UInt8(ascii: "}"))
        }
        JSONText.appendLiteral("\n]}\n", to: &out)
        if let reason = writeAtomically(path, out) {
            throw ToolError("cannot save state file \(path): \(reason) (the previous state, if any, is unchanged)")
        }
    }

    /// The settings a state file records, with the values it must hold.
    private static func settingsFields(_ settings: DetectorSettings) -> [(String, JSONValue)] {
        [("detector", .string(settings.detector.rawValue)),
         ("field", .string(settings.field)),
         ("direction", .string(settings.direction.rawValue)),
         ("window", .integer(settings.window)),
         ("min_samples", .integer(settings.minSamples)),
         ("threshold", .number(exactText(settings.threshold)))]
    }

    private static func exactText(_ value: Double) -> String {
        var out: [UInt8] = []
        StateText.exact(value, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    // MARK: - Files

    private enum ReadResult {
        case missing
        case failure(String)
        case contents([UInt8])
    }

    private static func readFile(_ path: String) -> ReadResult {
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

    /// Writes `bytes` to a temporary file beside `path`, fsyncs it, renames it over `path` and
    /// fsyncs the directory. Returns the reason on failure (the temporary file is removed).
    private static func writeAtomically(_ path: String, _ bytes: [UInt8]) -> String? {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let base = slash.map { String(path[path.index(after: $0)...]) } ?? path
        var template = ((directory == "/" ? "/" : directory + "/") + "." + base + ".XXXXXX").utf8CString
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        if fd < 0 { return String(cString: strerror(errno)) }
        let temporary = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        func abandon(_ reason: String) -> String {
            close(fd)
            unlink(temporary)
            return reason
        }
        fchmod(fd, 0o600)
        let written = bytes.withUnsafeBytes { Streams.writeAll(fd, $0) }
        if !written { return abandon(String(cString: strerror(errno))) }
        if fsync(fd) != 0 { return abandon(String(cString: strerror(errno))) }
        if close(fd) != 0 {
            unlink(temporary)
            return String(cString: strerror(errno))
        }
        if rename(temporary, path) != 0 {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            return reason
        }
        let directoryFD = open(directory, O_RDONLY | O_CLOEXEC)
        if directoryFD >= 0 {
            _ = fsync(directoryFD)
            close(directoryFD)
        }
        return nil
    }
}

private extension String {
    var replacingUnderscores: String { String(map { $0 == "_" ? "-" : $0 }) }
    var unquoted: String { hasPrefix("\"") && hasSuffix("\"") && count >= 2 ? String(dropFirst().dropLast()) : self }
}
