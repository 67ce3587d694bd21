import Testing

@testable import StoreSamplesCore

@Suite("metrics: numbers and label values written as Prometheus' text format reads them")
struct MetricsExpositionTests {
    @Test("milliseconds as seconds, exactly: the decimal point moved three places, worked out by hand")
    func seconds() {
        #expect(MetricsExposition.seconds(milliseconds: 48.2) == "0.0482", "not 0.048200000000000004")
        #expect(MetricsExposition.seconds(milliseconds: 100.0) == "0.1")
        #expect(MetricsExposition.seconds(milliseconds: 0.5) == "0.0005")
        #expect(MetricsExposition.seconds(milliseconds: 0.0) == "0")
        #expect(MetricsExposition.seconds(milliseconds: 1234.5) == "1.2345")
        #expect(MetricsExposition.seconds(milliseconds: 60000.0) == "60")
        #expect(MetricsExposition.seconds(milliseconds: Int64(1_769_508_300_250)) == "1769508300.25")
        #expect(MetricsExposition.seconds(milliseconds: Int64(1_769_508_120_000)) == "1769508120")
        #expect(MetricsExposition.seconds(milliseconds: Int64(-1_500)) == "-1.5")
        #expect(MetricsExposition.seconds(milliseconds: 1e-7) == "1e-10", "the exponent lowered by three")
    }

    @Test("label values: backslash, double quote and line feed escaped, other bytes as they are; help text leaves quotes")
    func escaping() {
        func escaped(_ text: String, quote: Bool) -> String {
            var out: [UInt8] = []
            MetricsExposition.appendEscaped(text, quote: quote, to: &out)
            return String(decoding: out, as: UTF8.self)
        }
        #expect(escaped("a\\b\"c\nd", quote: true) == #"a\\b\"c\nd"#)
        #expect(escaped("a\\b\"c\nd", quote: false) == #"a\\b"c\nd"#)
        #expect(escaped("Zürich \t tab", quote: true) == "Zürich \t tab")
    }
}
