import VitalsKit

/// The store's latest state in Prometheus' text exposition format (version 0.0.4): what
/// `store-samples metrics` prints and `GET /metrics` answers. Every series carries the labels
/// `monitor` (the monitor id), `name` (its name, else its id) and `kind` (the kind its samples
/// stated, else empty); monitors in the order first stored. Held samples (from agents nobody
/// approved) count nowhere, as in the views.
///
/// | family | type | value |
/// |---|---|---|
/// | vitals_monitor_up | gauge | 1 when the latest sample is up or degraded, 0 when down or error (no series when unknown or none) |
/// | vitals_monitor_status{status} | gauge (a state set) | 1 for the latest sample's status, 0 for the other four (unknown without samples) |
/// | vitals_monitor_latency_seconds | gauge | the latest sample's latency (no series when it has none) |
/// | vitals_monitor_last_check_timestamp_seconds | gauge | the latest sample's time (no series without samples) |
/// | vitals_monitor_tls_expiry_seconds | gauge | the latest sample's tls_expiry_days in seconds (no series when it has none) |
/// | vitals_checks_total{status} | counter | the samples stored with each status |
/// | vitals_place_up{agent} | gauge | per place: 1 when its newest sample is up or degraded, 0 when down or error |
/// | vitals_place_latency_seconds{agent} | gauge | per place: its newest sample's latency |
/// | vitals_place_last_check_timestamp_seconds{agent} | gauge | per place: its newest sample's time |
///
/// The monitor's families say its state by the place rule (`PlaceRule`): its status is the
/// consensus of its places, its latency, check time and certificate the newest check's. The place
/// families have a series for each place (`agent`, "local" for samples that name none) of every
/// monitor seen from a named agent or from more than one place.
enum MetricsExposition {
    /// The media type of the answer (Prometheus' text format).
    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// The statuses of the state set and the counter, by `storeCode`.
    static let statuses: [SampleStatus] = [.up, .degraded, .down, .error, .unknown]

    /// What one monitor contributes.
    struct Monitor {
        var record: MonitorRecord
        /// Its status by the place rule (nil without samples).
        var status: SampleStatus?
        /// Its newest check.
        var latest: StoredSample?
        /// Each place's newest sample, when the place families show them (else empty).
        var places: [StoredSample] = []
        /// Samples by status code.
        var counts: [Int]
    }

    /// The exposition of `monitors`.
    static func render(_ monitors: [Monitor]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64 + monitors.count * 1_400)
        let labels = monitors.map { labelText($0.record) }
        func family(_ name: String, _ type: String, _ help: String, _ body: () -> Void) {
            append("# HELP \(name) ", to: &out)
            appendEscaped(help, quote: false, to: &out)
            append("\n# TYPE \(name) \(type)\n", to: &out)
            body()
        }
        func series(_ name: String, _ labels: [UInt8], status: SampleStatus? = nil, _ value: String) {
            append(name, to: &out)
            out.append(contentsOf: labels)
            if let status { append(",status=\"\(status.rawValue)\"", to: &out) }
            append("} \(value)\n", to: &out)
        }
        family("vitals_monitor_up", "gauge", "1 when the monitor's latest check was up or degraded, 0 when down or error.") {
            for (monitor, labels) in zip(monitors, labels) {
                switch monitor.status {
                case .up?, .degraded?: series("vitals_monitor_up", labels, "1")
                case .down?, .error?: series("vitals_monitor_up", labels, "0")
                case .unknown?, nil: break
                }
            }
        }
        family("vitals_monitor_status", "gauge", "The monitor's latest status: 1 for it, 0 for the others (unknown without checks).") {
            for (monitor, labels) in zip(monitors, labels) {
                let current = monitor.status ?? .unknown
                for status in statuses { series("vitals_monitor_status", labels, status: status, status == current ? "1" : "0") }
            }
        }
        family("vitals_monitor_latency_seconds", "gauge", "The latency of the monitor's latest check.") {
            for (monitor, labels) in zip(monitors, labels) {
                if let latency = monitor.latest?.latencyMs, latency.isFinite {
                    series("vitals_monitor_latency_seconds", labels, seconds(milliseconds: latency))
                }
            }
        }
        family("vitals_monitor_last_check_timestamp_seconds", "gauge", "When the monitor's latest check was made, seconds since the epoch.")
        {
            for (monitor, labels) in zip(monitors, labels) {
                if let at = monitor.latest?.at { series("vitals_monitor_last_check_timestamp_seconds", labels, seconds(milliseconds: at)) }
            }
        }
        family(
            "vitals_monitor_tls_expiry_seconds", "gauge",
            "Time left until the certificate expires, as the latest check saw it (whole days, in seconds; negative once expired)."
        ) {
            for (monitor, labels) in zip(monitors, labels) {
                if let days = monitor.latest?.tlsExpiryDays { series("vitals_monitor_tls_expiry_seconds", labels, String(days * 86_400)) }
            }
        }
        family(
            "vitals_checks_total", "counter", "Checks stored, by status (retention and clear take old ones away: a drop reads as a reset)."
        ) {
            for (monitor, labels) in zip(monitors, labels) {
                for status in statuses {
                    series("vitals_checks_total", labels, status: status, String(monitor.counts[Int(status.storeCode)]))
                }
            }
        }
        let placed = zip(monitors, labels).flatMap { monitor, labels in monitor.places.map { (place: $0, labels: placeLabels(labels, $0)) }
        }
        guard !placed.isEmpty else { return out }
        family("vitals_place_up", "gauge", "Per place: 1 when its latest check of the monitor was up or degraded, 0 when down or error.") {
            for (place, labels) in placed {
                switch place.status {
                case .up, .degraded: series("vitals_place_up", labels, "1")
                case .down, .error: series("vitals_place_up", labels, "0")
                case .unknown: break
                }
            }
        }
        family("vitals_place_latency_seconds", "gauge", "Per place: the latency of its latest check of the monitor.") {
            for (place, labels) in placed {
                if let latency = place.latencyMs, latency.isFinite {
                    series("vitals_place_latency_seconds", labels, seconds(milliseconds: latency))
                }
            }
        }
        family(
            "vitals_place_last_check_timestamp_seconds", "gauge",
            "Per place: when its latest check of the monitor was made, seconds since the epoch."
        ) {
            for (place, labels) in placed { series("vitals_place_last_check_timestamp_seconds", labels, seconds(milliseconds: place.at)) }
        }
        return out
    }

    /// A monitor's labels with the place's `agent` label added (without the closing brace).
    static func placeLabels(_ labels: [UInt8], _ place: StoredSample) -> [UInt8] {
        var out = labels
        append(",agent=\"", to: &out)
        appendEscaped(place.report.name, quote: true, to: &out)
        out.append(UInt8(ascii: "\""))
        return out
    }

    /// `{monitor="...",name="...",kind="..."` (without the closing brace), each value escaped.
    static func labelText(_ record: MonitorRecord) -> [UInt8] {
        var out: [UInt8] = []
        append("{monitor=\"", to: &out)
        appendEscaped(record.monitor, quote: true, to: &out)
        append("\",name=\"", to: &out)
        appendEscaped(record.metadata.name ?? record.monitor, quote: true, to: &out)
        append("\",kind=\"", to: &out)
        appendEscaped(record.metadata.kind ?? "", quote: true, to: &out)
        out.append(UInt8(ascii: "\""))
        return out
    }

    /// Appends `text` escaped as the format asks: a backslash as `\\` and a line feed as `\n`,
    /// and in a label value (`quote`) a double quote as `\"` too. Every other byte as it is.
    static func appendEscaped(_ text: String, quote: Bool, to out: inout [UInt8]) {
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0A: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case UInt8(ascii: "\"") where quote: out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            default: out.append(byte)
            }
        }
    }

    private static func append(_ text: String, to out: inout [UInt8]) { out.append(contentsOf: text.utf8) }

    /// Milliseconds as seconds, written exactly: the decimal point of the milliseconds' shortest
    /// form moved three places (48.2 ms is `0.0482`, not 0.048200000000000004), or its exponent
    /// lowered by three.
    static func seconds(milliseconds: Double) -> String {
        let text = milliseconds.description
        guard milliseconds.isFinite else { return milliseconds.isNaN ? "NaN" : milliseconds > 0 ? "+Inf" : "-Inf" }
        if let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }), let exponent = Int(text[text.index(after: e)...]) {
            return text[..<e] + "e" + String(exponent - 3)  // 1e-07 ms is 1e-10 s
        }
        let negative = text.hasPrefix("-")
        let unsigned = negative ? String(text.dropFirst()) : text
        let parts = unsigned.split(separator: ".", omittingEmptySubsequences: false)
        return shifted(integer: String(parts[0]), fraction: parts.count > 1 ? String(parts[1]) : "", negative: negative)
    }

    /// Whole milliseconds as seconds (`1769472000123` is `1769472000.123`).
    static func seconds(milliseconds: Int64) -> String {
        let negative = milliseconds < 0
        return shifted(integer: String(milliseconds.magnitude), fraction: "", negative: negative)
    }

    /// The digits `integer.fraction` divided by 1,000, without leading or trailing zeros.
    private static func shifted(integer: String, fraction: String, negative: Bool) -> String {
        let digits = Array(integer + fraction)
        let point = integer.count - 3
        var whole: [Character]
        var rest: [Character]
        if point <= 0 {
            whole = ["0"]
            rest = Array(repeating: "0", count: -point) + digits
        } else {
            whole = Array(digits[..<point])
            rest = Array(digits[point...])
        }
        while whole.count > 1, whole.first == "0" { whole.removeFirst() }
        while rest.last == "0" { rest.removeLast() }
        let text = String(whole) + (rest.isEmpty ? "" : "." + String(rest))
        return negative && text != "0" ? "-" + text : text
    }
}

extension Views {
    /// The exposition of every monitor's latest state and counts (`MetricsExposition`).
    func metrics() throws -> [UInt8] {
        let counts = try store.checkCounts()
        let monitors = try store.monitors().map { record in
            let state = try state(record)
            let places = state?.places ?? []
            let shown = places.count > 1 || places.first?.agent != nil
            return MetricsExposition.Monitor(
                record: record, status: state?.verdict.status, latest: state?.newest, places: shown ? places : [],
                counts: counts[record.id] ?? [0, 0, 0, 0, 0])
        }
        return MetricsExposition.render(monitors)
    }
}
