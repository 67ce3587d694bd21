import VitalsKit

/// What one probe concluded, probe-http's or probe-ping's: the sample's status and why, in the
/// vocabulary of `vitals-records(7)`. (Not detect-anomaly's or notify's verdicts, which judge
/// other things.)
public struct ProbeVerdict: Sendable, Equatable {
    /// The sample's status.
    public var status: SampleStatus
    /// Why it is not `up` (nil when up).
    public var reason: SampleReason?
    /// In words, like OnlineTracker's `details`.
    public var message: String
    /// The measured latency, the simulated addition included (nil when nothing was measured).
    public var latencyMs: Double?
    /// Days until the earliest certificate in the chain expires (negative when expired).
    public var tlsExpiryDays: Int?
    /// Download speed of probe-http's speed test.
    public var speedMbps: Double?
    /// How much to trust `speedMbps`.
    public var speedConfidence: String?
    /// The bytes the speed was measured over.
    public var speedBytes: Int?

    /// Creates a verdict.
    public init(status: SampleStatus, reason: SampleReason?, message: String, latencyMs: Double? = nil) {
        self.status = status
        self.reason = reason
        self.message = message
        self.latencyMs = latencyMs
    }
}
