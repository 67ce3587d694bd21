import VitalsKit

/// One attempt of a probe tried again before its sample was written (`probe-http --confirm`).
public struct ProbeTry: Sendable, Equatable {
    /// When it started, wall clock ms.
    public var atMs: Int64
    /// Its status, reason, latency and words.
    public var status: SampleStatus
    public var reason: SampleReason?
    public var latencyMs: Double?
    public var message: String

    /// The attempt that started at `atMs` and came to `verdict`.
    public init(atMs: Int64, verdict: ProbeVerdict) {
        self.atMs = atMs
        status = verdict.status
        reason = verdict.reason
        latencyMs = verdict.latencyMs
        message = verdict.message
    }

    /// Writes `attempts` (their count) and `tries` (each: `at`, `status`, `reason`, `latency_ms`,
    /// `message`, in order, the last being the sample's own) when there was more than one.
    public static func write(_ tries: [ProbeTry], to record: inout JSONObjectBuilder) {
        guard tries.count > 1 else { return }
        record.int("attempts", tries.count)
        record.value(
            "tries",
            .array(
                tries.map { attempt in
                    var object = JSONObject()
                    object["at"] = .string(Timestamp.format(milliseconds: attempt.atMs))
                    object["status"] = .string(attempt.status.rawValue)
                    object["reason"] = attempt.reason.map { .string($0.rawValue) } ?? .null
                    object["latency_ms"] =
                        attempt.latencyMs.map { latency in
                            var digits: [UInt8] = []
                            JSONText.appendFixed(latency, decimals: 3, to: &digits)
                            return .number(String(decoding: digits, as: UTF8.self))
                        } ?? .null
                    object["message"] = .string(attempt.message)
                    return .object(object)
                }))
    }
}
