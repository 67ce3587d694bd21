import VitalsKit

/// One sample as digest keeps it: fixed size, so rows can be spooled to disk and read back.
struct SampleRow: Equatable {
    /// When the check started, milliseconds since the epoch.
    var at: Int64
    /// Latency in thousandths of a millisecond (microseconds), or `SampleRow.none`.
    var latencyMicros: Int64
    /// Download speed in thousandths of a Mbit/s, or `SampleRow.none`.
    var speedMilli: Int64
    /// Arrival order, the tie-break between samples of one service at the same instant.
    var sequence: UInt64
    /// The service's index in the `ServiceTable`.
    var service: UInt32
    /// The status, as an index into `SampleStatus.allCases`.
    var status: UInt8
    /// Where the sample stands in an anomaly episode detect-anomaly marked: an
    /// `AnomalyEpisodeState`'s raw value, 0 for none.
    var episode: UInt8 = 0
    /// The place the sample was taken from: its index among its monitor's places
    /// (`ServiceTable`), in order of first appearance; 0 for a monitor's first place.
    var place: UInt16 = 0
    /// The `check_interval` the sample stated, in milliseconds; 0 when it stated none.
    var intervalMs: Int64 = 0
    /// The tries its probe made (`attempts`, probe-http --confirm), at most 255; 1 when it states none.
    var attempts: UInt8 = 1

    /// The marker for a missing number.
    static let none = Int64.min

    /// Creates a row of a monitor's first place, stating no check interval.
    init(at: Int64, latencyMicros: Int64, speedMilli: Int64, sequence: UInt64, service: UInt32, status: UInt8) {
        self.at = at
        self.latencyMicros = latencyMicros
        self.speedMilli = speedMilli
        self.sequence = sequence
        self.service = service
        self.status = status
    }

    /// The status as a `SampleStatus`.
    var sampleStatus: SampleStatus { SampleStatus.allCases[Int(status)] }
    /// Whether the status is `down` or `error`.
    var isFailure: Bool { sampleStatus.isFailure }
}

/// The status indexes rows use.
enum StatusIndex {
    static let up = UInt8(SampleStatus.allCases.firstIndex(of: .up)!)
    static let degraded = UInt8(SampleStatus.allCases.firstIndex(of: .degraded)!)
    static let down = UInt8(SampleStatus.allCases.firstIndex(of: .down)!)
    static let error = UInt8(SampleStatus.allCases.firstIndex(of: .error)!)
    static let unknown = UInt8(SampleStatus.allCases.firstIndex(of: .unknown)!)

    /// The index of `status`.
    static func of(_ status: SampleStatus) -> UInt8 { UInt8(SampleStatus.allCases.firstIndex(of: status)!) }
}
