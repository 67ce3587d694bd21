import Foundation
import Testing
import VitalsKit

@testable import DigestCore

@Suite("latency sketch")
struct LatencySketchTests {
    @Test("exact by nearest rank up to 512 values")
    func exact() {
        var sketch = LatencySketch()
        for value in [30.0, 10, 20, 50, 40] { sketch.add(value) }
        #expect(sketch.isExact)
        #expect(sketch.percentile(0.95) == 50)  // rank ⌈4.75⌉ = 5
        #expect(sketch.percentile(0.5) == 30)  // rank ⌈2.5⌉ = 3
        #expect(LatencySketch().percentile(0.95) == nil)
    }

    @Test("within 1% of the exact value past 512 values, for spread-out latencies")
    func estimate() {
        // A fixed pseudo-random spread from 0.5 ms to about 5 s (a linear congruential generator).
        var state: UInt64 = 12345
        var values: [Double] = []
        var sketch = LatencySketch()
        for _ in 0..<20_000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let unit = Double(state >> 11) / Double(1 << 53)
            let value = 0.5 * pow(10_000, unit * unit)  // skewed toward small latencies
            values.append(value)
            sketch.add(value)
        }
        #expect(!sketch.isExact)
        let sorted = values.sorted()
        for q in [0.5, 0.9, 0.95, 0.99] {
            let exact = sorted[Int((q * Double(values.count)).rounded(.up)) - 1]
            let estimate = sketch.percentile(q)!
            #expect(abs(estimate - exact) / exact <= 0.01, "q \(q): \(estimate) vs \(exact)")
        }
    }
}

@Suite("trend rule")
struct TrendTests {
    func micros(_ ms: [Int64]) -> [Int64] { ms.map { $0 * 1000 } }

    @Test("20% and 5 ms either way, newest N against the N before")
    func labels() {
        #expect(Trend.compute(micros([50, 50, 60, 60]), n: 10).label == .increasing)  // +20%, +10 ms
        #expect(Trend.compute(micros([50, 50, 59, 59]), n: 10).label == .stable)  // +18%
        #expect(Trend.compute(micros([10, 10, 13, 13]), n: 10).label == .stable)  // +30% but 3 ms
        #expect(Trend.compute(micros([100, 100, 80, 80]), n: 10).label == .decreasing)  // -20%, -20 ms
        #expect(Trend.compute(micros([100, 100, 81, 81]), n: 10).label == .stable)  // -19%
        let single = Trend.compute(micros([7]), n: 10)
        #expect(single.label == .stable && single.recentMs == nil && single.samples == 0)
        // Odd count: the oldest is left out; n = 1 compares the last two only.
        let odd = Trend.compute(micros([900, 10, 40]), n: 10)
        #expect(odd.earlierMs == 10 && odd.recentMs == 40 && odd.label == .increasing)
        #expect(Trend.compute(micros([10, 10, 10, 40, 40]), n: 1).label == .stable)
    }
}

@Suite("llm command words")
struct CommandWordsTests {
    @Test("split like a shell, without one")
    func split() throws {
        #expect(try LLMCommand.split("llama-cli -m model.gguf") == ["llama-cli", "-m", "model.gguf"])
        #expect(try LLMCommand.split(#"a 'b c' "d \"e\" $f" g\ h ''"#) == ["a", "b c", #"d "e" $f"#, "g h", ""])
        #expect(try LLMCommand.split("  spaced\tout  ") == ["spaced", "out"])
        #expect(try LLMCommand.split("no ~ $HOME * | > expansion") == ["no", "~", "$HOME", "*", "|", ">", "expansion"])
        #expect(throws: UsageError.self) { try LLMCommand.split("open 'quote") }
        #expect(throws: UsageError.self) { try LLMCommand.split("open \"quote") }
    }
}

@Suite("zones and words")
struct ZoneWordsTests {
    // 2026-01-27T10:25:00Z
    let instant: Int64 = 1_769_509_500_000

    @Test("offsets and names")
    func zones() throws {
        #expect(Zone.parse("UTC")?.label(at: instant) == "UTC")
        #expect(Zone.parse("+05:30")?.label(at: instant) == "+05:30")
        #expect(Zone.parse("-0800")?.offsetSeconds(at: instant) == -28_800)
        #expect(Zone.parse("Europe/Paris")?.offsetSeconds(at: instant) == 3600)  // CET in January
        #expect(Zone.parse("Mars/Olympus") == nil)
        #expect(Zone.parse("+25:00") == nil)
        let words = Words(zone: try #require(Zone.parse("+05:30")), reference: instant)
        #expect(words.fullTime(instant) == "2026-01-27 15:55 +05:30")
        #expect(words.time(instant - 16 * 3_600_000) == "2026-01-26 23:55")
        #expect(words.time(instant - 3_600_000) == "14:55")
    }

    @Test("numbers for reading")
    func numbers() {
        #expect(Words.percent(99.96) == ">99.9%")
        #expect(Words.percent(0.01) == "<0.1%")
        #expect(Words.percent(72.222) == "72.2%")
        #expect(Words.percent(100) == "100%")
        #expect(Words.latency(4.24) == "4.2 ms")
        #expect(Words.latency(1249.6) == "1,250 ms")
        #expect(Words.grouped(1_440_000) == "1,440,000")
        #expect(Words.span(86_400_000) == "24 hours")
        #expect(Words.span(604_800_000) == "7 days")
        #expect(Words.unit(300_000) == "5-minute bucket")
        #expect(Words.list(["a", "b", "c"]) == "a, b and c")
    }
}
