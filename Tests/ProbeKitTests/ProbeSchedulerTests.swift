import Testing

@testable import ProbeKit

/// The scheduler driven by a clock the test sets, in milliseconds.
@Suite("probe scheduling: concurrency, per host, rate, watch")
struct ProbeSchedulerTests {
    func ms(_ value: UInt64) -> UInt64 { value * 1_000_000 }

    func admit(_ scheduler: inout ProbeScheduler, at time: UInt64) -> [Int] {
        var started: [Int] = []
        scheduler.admit(nowNs: ms(time)) { started.append($0) }
        return started
    }

    @Test("in order, at most concurrency at once")
    func concurrency() {
        var scheduler = ProbeScheduler(
            hosts: ["a", "b", "c", "d", "e"], intervalsMs: Array(repeating: 60_000, count: 5),
            limits: ProbeLimits(concurrency: 2), watch: false)
        #expect(admit(&scheduler, at: 0) == [0, 1])
        #expect(admit(&scheduler, at: 1) == [])
        scheduler.finish(1)
        #expect(admit(&scheduler, at: 2) == [2])
        scheduler.finish(0)
        scheduler.finish(2)
        #expect(admit(&scheduler, at: 3) == [3, 4])
        #expect(!scheduler.isFinished)
        scheduler.finish(3)
        scheduler.finish(4)
        #expect(scheduler.isFinished)
        #expect(scheduler.waitMs(nowNs: ms(4)) == nil, "nothing waits on time")
    }

    @Test("a host at its limit holds back only its own probes, which then start in order")
    func perHost() {
        var scheduler = ProbeScheduler(
            hosts: ["a", "a", "b", "a", "b"], intervalsMs: Array(repeating: 60_000, count: 5),
            limits: ProbeLimits(concurrency: 10, perHost: 1), watch: false)
        #expect(admit(&scheduler, at: 0) == [0, 2])
        scheduler.finish(2)
        #expect(admit(&scheduler, at: 1) == [4], "b's next goes while a's wait")
        scheduler.finish(0)
        #expect(admit(&scheduler, at: 2) == [1])
        scheduler.finish(1)
        #expect(admit(&scheduler, at: 3) == [3])
        scheduler.finish(3)
        scheduler.finish(4)
        #expect(scheduler.isFinished)
    }

    @Test("at most rate new probes a second, evenly spaced")
    func rate() {
        var scheduler = ProbeScheduler(
            hosts: ["a", "b", "c"], intervalsMs: Array(repeating: 60_000, count: 3),
            limits: ProbeLimits(concurrency: 10, ratePerSecond: 10), watch: false)
        #expect(admit(&scheduler, at: 0) == [0])
        // 10 a second is one every 100 ms.
        #expect(scheduler.waitMs(nowNs: ms(0)) == 100)
        #expect(admit(&scheduler, at: 50) == [])
        #expect(scheduler.waitMs(nowNs: ms(50)) == 50)
        #expect(admit(&scheduler, at: 100) == [1])
        #expect(admit(&scheduler, at: 350) == [2], "a late start does not bank a burst")
        #expect(scheduler.waitMs(nowNs: ms(350)) == nil)
    }

    @Test("watching: each probe again an interval after its start, never twice at once")
    func watch() {
        var scheduler = ProbeScheduler(
            hosts: ["a", "b"], intervalsMs: [1000, 3000],
            limits: ProbeLimits(concurrency: 10), watch: true)
        #expect(admit(&scheduler, at: 0) == [0, 1])
        scheduler.finish(0)
        #expect(scheduler.waitMs(nowNs: ms(10)) == 990)
        #expect(admit(&scheduler, at: 999) == [])
        #expect(admit(&scheduler, at: 1000) == [0])
        // Probe 1 outlasts probe 0's next interval; probe 0 runs long too and starts again when it ends.
        #expect(admit(&scheduler, at: 2100) == [])
        scheduler.finish(0)
        #expect(admit(&scheduler, at: 2500) == [0], "due at 2000, started when the previous run ended")
        scheduler.finish(1)
        #expect(admit(&scheduler, at: 2600) == [])
        #expect(admit(&scheduler, at: 3000) == [1])
        #expect(!scheduler.isFinished)
    }

    @Test("the deadline heap gives entries back earliest first")
    func heap() {
        var heap = DeadlineHeap()
        let deadlines: [Int64] = [50, 10, 40, 10, 30, 20, 60, 0]
        for (value, deadline) in deadlines.enumerated() { heap.push(deadline, value) }
        var out: [Int64] = []
        while let top = heap.pop() { out.append(top.deadline) }
        #expect(out == deadlines.sorted())
    }

    @Test("rounds: a one-shot run is one round, ended by its last probe; watching, the probes due together make one")
    func rounds() {
        var once = ProbeScheduler(
            hosts: ["a", "b", "c"], intervalsMs: Array(repeating: 60_000, count: 3),
            limits: ProbeLimits(concurrency: 2), watch: false)
        var started: [Int: Int] = [:]
        once.admit(nowNs: ms(0)) { index, round in started[index] = round }
        #expect(started == [0: 1, 1: 1])
        #expect(once.finish(1) == nil)
        once.admit(nowNs: ms(1)) { index, round in started[index] = round }
        #expect(started[2] == 1)
        #expect(once.finish(0) == nil, "the slowest probe is still running")
        #expect(once.finish(2) == 1, "the last probe ends the round")

        var watching = ProbeScheduler(hosts: ["a", "b"], intervalsMs: [1000, 2000], limits: ProbeLimits(concurrency: 10), watch: true)
        var rounds: [[Int]] = []
        func admit(at time: UInt64) {
            var now: [Int] = []
            watching.admit(nowNs: ms(time)) { index, round in now.append(round) }
            if !now.isEmpty { rounds.append(now) }
        }
        admit(at: 0)
        #expect(rounds == [[1, 1]], "both due at the start: one round")
        #expect(watching.finish(0) == nil)
        #expect(watching.finish(1) == 1)
        admit(at: 1000)
        #expect(rounds.last == [2], "a alone at 1000")
        #expect(watching.finish(0) == 2)
        admit(at: 2000)
        #expect(rounds.last == [3, 3], "both due at 2000: one round")
        #expect(watching.finish(1) == nil)
        #expect(watching.finish(0) == 3)
    }
}
