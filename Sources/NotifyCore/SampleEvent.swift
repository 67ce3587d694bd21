import VitalsKit

/// What notify needs of one `sample` record (read by the shared `SampleLine` reader).
struct SampleEvent: Equatable {
    /// The monitor id.
    var monitor: String
    /// The human name (the id when the sample has none).
    var name: String
    /// When the check started, milliseconds since the epoch: the event time notify runs on.
    var at: Int64
    /// The status.
    var status: SampleStatus
    /// The result in words.
    var message: String?
    /// Why it is not up.
    var reason: String?
    /// The URL probed (already redacted by the prober).
    var target: String?
    /// The integer id store-samples gave the monitor (`monitor_id`, which it adds to the samples it passes on).
    var monitorID: Int? = nil
    /// Where the sample stands in detect-anomaly's episodes (`anomaly.episode.state`), if it has one.
    var episode: AnomalyEpisodeState? = nil
    /// The place it was taken from: its `agent`, nil for samples that name none (the local place).
    var agent: String? = nil
    /// The monitor's `check_interval`, seconds, when the sample states one.
    var checkIntervalSeconds: Int64? = nil
    /// The monitor's kind (`heartbeat`: a sample is expected every check interval).
    var kind: String? = nil
    /// The monitors it depends on (`depends_on`: an array of ids, or one id).
    var dependsOn: [String]? = nil
}

extension SampleEvent {
    /// The sample `reader` read last (`line`), with notify's own fields `own` read in its pass.
    init(_ reader: SampleLine, _ own: NotifyFields, line: LineBytes) {
        monitor = reader.monitor
        let name = reader.text(own.name)
        self.name = name.flatMap { $0.isEmpty ? nil : $0 } ?? monitor
        at = reader.atMs
        status = reader.status
        message = reader.text(own.message)
        reason = reader.reason
        target = reader.text(own.target)
        monitorID = own.monitorID.flatMap { Int(String(decoding: reader.raw($0), as: UTF8.self)) }
        episode = own.anomaly.flatMap { AnomalyEpisodeState.read(line, $0) }
        agent = reader.agent.flatMap { $0.isEmpty ? nil : $0 }
        checkIntervalSeconds = own.checkInterval.flatMap { JSONNumber.value(reader.raw($0)) }.flatMap {
            $0.isFinite && $0 >= 1 && $0 < 1e12 ? Int64($0) : nil
        }
        kind = reader.text(own.kind)
        dependsOn = own.dependsOn.flatMap { SampleEvent.monitorList(Array(reader.raw($0))) }
    }

    /// `["a","b"]` or `"a"` as a list of ids (anything else, or an empty list: nil).
    static func monitorList(_ raw: [UInt8]) -> [String]? {
        guard let value = try? JSONParser.parse(raw) else { return nil }
        switch value {
        case .string(let id): return id.isEmpty ? nil : [id]
        case .array(let items):
            let ids = items.compactMap { $0.stringValue }.filter { !$0.isEmpty }
            return ids.isEmpty ? nil : ids
        default: return nil
        }
    }
}

/// The fields notify reads beyond the spine, found in the reader's pass.
struct NotifyFields: SampleFieldReader {
    var name: FieldRange?
    var message: FieldRange?
    var target: FieldRange?
    var monitorID: FieldRange?
    var anomaly: FieldRange?
    var checkInterval: FieldRange?
    var kind: FieldRange?
    var dependsOn: FieldRange?

    // The raw key: the figure that keeps it is on `SampleFieldReader.take`.
    mutating func take(key: UnsafePointer<UInt8>, count: Int, field: FieldRange) {
        switch SampleLine.tag(key, count) {
        case 0x4_6E where SampleLine.key(key, is: "name"): name = field
        case 0x4_6B where SampleLine.key(key, is: "kind"): kind = field
        case 0xE_63 where SampleLine.key(key, is: "check_interval"): checkInterval = field
        case 0x6_74 where SampleLine.key(key, is: "target"): target = field
        case 0x7_6D where SampleLine.key(key, is: "message"): message = field
        case 0x7_61 where SampleLine.key(key, is: "anomaly"): anomaly = field
        case 0xA_6D where SampleLine.key(key, is: "monitor_id"): monitorID = field
        case 0xA_64 where SampleLine.key(key, is: "depends_on"): dependsOn = field
        default: break
        }
    }
}
