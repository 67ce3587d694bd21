import VitalsKit

/// Latencies in the words of sample messages and summaries.
public enum LatencyWords {
    /// `25ms`, `4.2ms`, `0.033ms` (below a millisecond three places, as ping(8) writes them), `1234ms`.
    public static func milliseconds(_ value: Double) -> String {
        if value < 10 {
            var out: [UInt8] = []
            JSONText.appendFixed(value, decimals: value < 1 ? 3 : 1, to: &out)
            return String(decoding: out, as: UTF8.self) + "ms"
        }
        return "\(Int(value.rounded()))ms"
    }
}
