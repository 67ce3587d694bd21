import VitalsKit

/// The leading fields of every `sample` record, written by one hand for both probes, in the
/// order vitals-records(7) SAMPLE gives: `type`, `monitor`, `name`, `kind`, `target`, `at`,
/// `method` (probe-http only), `status`, `reason`, `message`. Each probe adds its own fields after.
public enum SampleHead {
    /// A record holding the leading fields of one sample.
    /// - Parameters:
    ///   - monitor: the monitor id; `name`, `kind` and `target` as the sample writes them.
    ///   - atMs: when the probe started, wall clock.
    ///   - method: the method that answered (probe-http); nil writes no `method` field.
    ///   - capacity: bytes to reserve for the whole record.
    public static func begin(
        monitor: String, name: String, kind: String, target: String, atMs: Int64, method: String?,
        verdict: ProbeVerdict, capacity: Int
    ) -> JSONObjectBuilder {
        var record = identity(type: "sample", monitor: monitor, name: name, kind: kind, target: target, atMs: atMs, capacity: capacity)
        if let method { record.string("method", method) }
        record.string("status", verdict.status.rawValue)
        record.string("reason", verdict.reason?.rawValue)
        record.string("message", verdict.message)
        return record
    }

    /// A record of `type` holding `type`, `monitor`, `name`, `kind`, `target` and `at`: how
    /// samples and `monitor` records both begin.
    static func identity(
        type: String, monitor: String, name: String, kind: String, target: String, atMs: Int64,
        capacity: Int
    ) -> JSONObjectBuilder {
        var record = JSONObjectBuilder(capacity: capacity)
        record.string("type", type)
        record.string("monitor", monitor)
        record.string("name", name)
        record.string("kind", kind)
        record.string("target", target)
        var at: [UInt8] = []
        Timestamp.append(milliseconds: atMs, to: &at)
        record.string("at", String(decoding: at, as: UTF8.self))
        return record
    }
}
