import Testing
import VitalsKit

@testable import NotifyCore

/// Drives a `Decider` round by round, as notify does: the samples of one round (no closing by
/// time, as with round marks), then `closeRound`, and every channel accepts what it is given
/// (as a dry run does), so cooldowns start at each notification.
///
/// Every expected value below is worked out by hand from notify(1), DECISIONS, and from
/// isitup's notification rules (seed 000, sections 4, 6.3, 8.2 and 8.3), never read back from
/// the decider.
final class DeciderRun {
    static let base = Timestamp.parse("2026-01-27T10:00:00Z")!
    let decider: Decider

    init(channels: [String] = ["stdout"], ungrouped: Set<String> = [], _ configure: (inout Policy) -> Void = { _ in }) {
        var policy = Policy()
        configure(&policy)
        decider = Decider(policy: policy, channels: channels, ungrouped: ungrouped, monitors: [:], views: [:])
    }

    /// `base` plus `seconds`.
    static func at(_ seconds: Int64) -> Int64 { base + seconds * 1000 }

    /// One sample of `monitor` at `base + seconds`.
    static func sample(
        _ monitor: String, _ seconds: Int64, _ status: SampleStatus,
        episode: AnomalyEpisodeState? = nil
    ) -> SampleEvent {
        SampleEvent(monitor: monitor, name: monitor.uppercased(), at: at(seconds), status: status, episode: episode)
    }

    /// One round of samples; the decisions of its end, each accepted by the channels it names.
    @discardableResult
    func round(_ samples: SampleEvent...) -> [Decision] { decide(samples) }

    /// One round, as its notifications.
    func told(_ samples: SampleEvent...) -> [Notification] { decide(samples).map(\.notification) }

    private func decide(_ samples: [SampleEvent]) -> [Decision] {
        for sample in samples { #expect(decider.add(sample, roundByTime: false).isEmpty, "a round ends only at closeRound") }
        let decided = decider.closeRound()
        for decision in decided {
            for channel in decision.channels { decider.accepted(decision.notification, by: channel) }
        }
        return decided
    }
}

private func s(_ monitor: String, _ seconds: Int64, _ status: SampleStatus, episode: AnomalyEpisodeState? = nil) -> SampleEvent {
    DeciderRun.sample(monitor, seconds, status, episode: episode)
}

private func at(_ seconds: Int64) -> Int64 { DeciderRun.at(seconds) }

@Suite("Decider: first samples (a monitor starts unknown)")
struct DeciderFirstSampleTests {
    @Test("first seen up is no news; a later down is Monitor DOWN from up, since its sample")
    func firstUp() {
        let run = DeciderRun()
        #expect(run.told(s("a", 0, .up)).isEmpty)
        let down = run.told(s("a", 60, .down))
        // One monitor newly down: told on its own under its id (seed 000 8.2), previous status up.
        #expect(down.count == 1)
        #expect(down.first?.event == .down)
        #expect(down.first?.grouped == false)
        #expect(down.first?.key == "a")
        #expect(down.first?.monitors.first?.previousStatus == "up")
        #expect(down.first?.monitors.first?.since == at(60))
        #expect(down.first?.title == "Monitor DOWN")
        #expect(down.first?.body == "A is not responding")
    }

    @Test("first seen down, error or degraded is news, with no previous status (isitup's unknown)")
    func firstNotUp() {
        let down = DeciderRun().told(s("a", 0, .down))
        #expect(down.map(\.event) == [.down])
        #expect(down.first?.monitors.first?.previousStatus == nil)
        #expect(down.first?.monitors.first?.status == "down")
        #expect(down.first?.monitors.first?.since == at(0), "the outage began at the first sample")
        // error is a failure like down (seed 000 6.3 counts down/error as failed): event down,
        // the monitor's status error, and the notification's status the one monitor's.
        let error = DeciderRun().told(s("a", 0, .error))
        #expect(error.map(\.event) == [.down])
        #expect(error.first?.status == "error")
        // degraded under its own key, MONITOR.degrading (seed 000 8.2: individual degrading).
        let degraded = DeciderRun().told(s("a", 0, .degraded))
        #expect(degraded.map(\.event) == [.degraded])
        #expect(degraded.first?.key == "a.degrading")
        #expect(degraded.first?.body == "A is degraded")
    }

    @Test("--baseline: the first sample is the baseline, not news; later changes are")
    func baseline() {
        let run = DeciderRun { $0.firstSampleIsBaseline = true }
        #expect(run.told(s("a", 0, .down)).isEmpty)
        #expect(run.told(s("a", 60, .down)).isEmpty, "still down: no change")
        // notify(1): "only later changes are news"; the first sample said down, so up is one.
        let up = run.told(s("a", 120, .up))
        #expect(up.map(\.event) == [.recovered])
        #expect(up.first?.key == "a.recovered")
        #expect(up.first?.monitors.first?.previousStatus == "down")
    }

    @Test("a sample whose status is unknown changes nothing")
    func unknownStatus() {
        let run = DeciderRun()
        #expect(run.told(s("a", 0, .unknown)).isEmpty)
        #expect(run.decider.monitors["a"] == nil, "an unknown first sample does not create the monitor")
        #expect(run.told(s("a", 60, .up)).isEmpty)
        #expect(run.told(s("a", 120, .unknown)).isEmpty)
        #expect(run.decider.monitors["a"]?.confirmed == "up")
        #expect(run.decider.monitors["a"]?.lastAt == at(60), "unknown is not taken")
        let down = run.told(s("a", 180, .down))
        #expect(down.first?.monitors.first?.previousStatus == "up")
    }
}

@Suite("Decider: thresholds and flap damping")
struct DeciderThresholdTests {
    @Test("--failure-threshold 3: down at the third failing sample in a row, since the first")
    func failureThreshold() {
        let run = DeciderRun { $0.failureThreshold = 3 }
        #expect(run.told(s("a", 0, .up)).isEmpty)
        #expect(run.told(s("a", 60, .down)).isEmpty)
        #expect(run.told(s("a", 120, .error)).isEmpty, "error counts as failing, 2 of 3")
        let down = run.told(s("a", 180, .down))
        #expect(down.map(\.event) == [.down])
        // The outage began at the first failing sample of the streak, 60 s.
        #expect(down.first?.monitors.first?.since == at(60))
        #expect(down.first?.at == at(180), "told at the sample that decided it")
    }

    @Test("--success-threshold 2: recovered at the second up sample; 'up again after' the outage's length")
    func successThreshold() {
        let run = DeciderRun { $0.successThreshold = 2 }
        run.round(s("a", 0, .up))
        #expect(run.told(s("a", 60, .down)).map(\.event) == [.down])
        #expect(run.told(s("a", 120, .up)).isEmpty, "1 of 2")
        let up = run.told(s("a", 180, .up))
        #expect(up.map(\.event) == [.recovered])
        // Since 60 s, told at 180 s: 2 minutes (DurationText writes 2m).
        #expect(up.first?.monitors.first?.since == at(60))
        // One failed check (60 s): the up sample at 120 s is no failure.
        #expect(up.first?.body == "A is up again after 2m, 1 failed check")
    }

    @Test("flap damping: with --failure-threshold 2 a monitor alternating down and up is never told")
    func flapping() {
        let run = DeciderRun { $0.failureThreshold = 2 }
        var seconds: Int64 = 0
        for status in [SampleStatus.up, .down, .up, .down, .up, .error, .up, .down] {
            #expect(run.told(s("a", seconds, status)).isEmpty, "no two failing samples in a row at \(seconds) s")
            seconds += 60
        }
        // The 8th sample (420 s) was down; the 9th makes two in a row.
        let down = run.told(s("a", seconds, .down))
        #expect(down.map(\.event) == [.down])
        #expect(down.first?.monitors.first?.since == at(420))
    }

    @Test("degraded after as many samples degraded or worse as the failure threshold")
    func degradedThreshold() {
        let run = DeciderRun { $0.failureThreshold = 2 }
        run.round(s("a", 0, .up))
        #expect(run.told(s("a", 60, .degraded)).isEmpty)
        let degraded = run.told(s("a", 120, .degraded))
        #expect(degraded.map(\.key) == ["a.degrading"])
        #expect(degraded.first?.monitors.first?.since == at(60))
    }

    @Test("a degraded sample then a failing one are two samples degraded or worse: degraded, not down")
    func degradedThenDown() {
        let run = DeciderRun { $0.failureThreshold = 2 }
        run.round(s("a", 0, .up))
        #expect(run.told(s("a", 60, .degraded)).isEmpty)
        // notify(1), Thresholds: "degraded after as many samples degraded or worse". Two samples
        // degraded or worse (60 s degraded, 120 s down), only one failing: degraded since 60 s.
        let degraded = run.told(s("a", 120, .down))
        #expect(degraded.map(\.event) == [.degraded])
        #expect(degraded.first?.monitors.first?.since == at(60))
        // A second failing sample makes it down; the trouble still began at 60 s.
        let down = run.told(s("a", 180, .down))
        #expect(down.map(\.event) == [.down])
        #expect(down.first?.monitors.first?.previousStatus == "degraded")
        #expect(down.first?.monitors.first?.since == at(60))
    }

    @Test("a down monitor that answers slowly is degraded after --success-threshold samples that do not fail")
    func downToDegraded() {
        let run = DeciderRun { $0.successThreshold = 2 }
        run.round(s("a", 0, .down))
        #expect(run.told(s("a", 60, .degraded)).isEmpty)
        let better = run.told(s("a", 120, .degraded))
        #expect(better.map(\.event) == [.degraded])
        #expect(better.first?.monitors.first?.previousStatus == "down")
        #expect(better.first?.body == "A answers again, but degraded")
    }

    @Test("down and error are one condition: changing between them is not news")
    func downAndError() {
        let run = DeciderRun()
        #expect(run.told(s("a", 0, .down)).map(\.event) == [.down])
        #expect(run.told(s("a", 60, .error)).isEmpty)
        #expect(run.decider.monitors["a"]?.confirmed == "error")
        #expect(run.told(s("a", 120, .down)).isEmpty)
    }
}

@Suite("Decider: rounds and grouping (seed 000 8.3)")
struct DeciderGroupingTests {
    @Test("three monitors newly down in one round: one grouped notification, groupedOutage, in round order")
    func grouped() {
        let run = DeciderRun()
        run.round(s("a", 0, .up), s("b", 0, .up), s("c", 0, .up))
        let told = run.told(s("c", 60, .down), s("a", 61, .error), s("b", 62, .down))
        #expect(told.count == 1)
        #expect(told.first?.grouped == true)
        #expect(told.first?.key == "groupedOutage")
        #expect(told.first?.monitors.map(\.monitor) == ["c", "a", "b"])
        #expect(told.first?.title == "3 services down")
        #expect(told.first?.body == "C, A, B")
        // The event time is the round's latest sample among them, 62 s.
        #expect(told.first?.at == at(62))
    }

    @Test("degradations and recoveries group too, under groupedDegrading and groupedRecovery")
    func groupedOtherEvents() {
        let run = DeciderRun()
        run.round(s("a", 0, .up), s("b", 0, .up))
        let degraded = run.told(s("a", 60, .degraded), s("b", 60, .degraded))
        #expect(degraded.map(\.key) == ["groupedDegrading"])
        #expect(degraded.first?.title == "2 services degraded")
        let recovered = run.told(s("a", 120, .up), s("b", 120, .up))
        #expect(recovered.map(\.key) == ["groupedRecovery"])
        #expect(recovered.first?.title == "2 services recovered")
    }

    @Test("a monitor down and another degraded in one round are two lists: one each, under their own keys")
    func mixedRound() {
        let run = DeciderRun()
        let told = run.told(s("a", 0, .down), s("b", 0, .degraded))
        #expect(told.map(\.key) == ["a", "b.degrading"])
        #expect(told.allSatisfy { !$0.grouped })
    }

    @Test("the lone new failure: c down in a later round is told on its own under key c, while a and b stay down")
    func loneNewFailure() {
        let run = DeciderRun()
        run.round(s("a", 0, .up), s("b", 0, .up), s("c", 0, .up))
        #expect(run.told(s("a", 60, .down), s("b", 60, .down), s("c", 60, .up)).map(\.key) == ["groupedOutage"])
        // 30 s later groupedOutage still cools down (60 s), but c is the only monitor newly
        // impacted in this round: 1 < 2, so it is told alone, under its own key (seed 000 8.3).
        let told = run.told(s("a", 90, .down), s("b", 90, .down), s("c", 90, .down))
        #expect(told.count == 1)
        #expect(told.first?.key == "c")
        #expect(told.first?.grouped == false)
        #expect(told.first?.monitors.map(\.monitor) == ["c"])
        #expect(told.first?.title == "Monitor DOWN")
    }

    @Test("--group-min 3: two monitors newly down are told one by one")
    func groupMin() {
        let told = DeciderRun { $0.groupMin = 3 }.told(s("a", 0, .down), s("b", 0, .down))
        #expect(told.map(\.key) == ["a", "b"])
    }

    @Test("a channel that never groups (Apple push) is told of each monitor; the others get the group")
    func ungroupedChannel() {
        let run = DeciderRun(channels: ["stdout", "apns"], ungrouped: ["apns"])
        let decided = run.round(s("a", 0, .down), s("b", 0, .down))
        #expect(decided.map(\.notification.key) == ["groupedOutage", "a", "b"])
        #expect(decided.map(\.channels) == [["stdout"], ["apns"], ["apns"]])
    }

    @Test("input without marks: a sample --group-wait or more after the round's first closes it")
    func roundsByTime() {
        var policy = Policy()
        policy.groupWaitMs = 2_000
        // By time: a at 0 s and b at 1.999 s share a round (within 2 s of its first): grouped.
        let near = Decider(policy: policy, channels: ["stdout"], monitors: [:], views: [:])
        #expect(near.add(SampleEvent(monitor: "a", name: "a", at: at(0), status: .down)).isEmpty)
        #expect(near.add(SampleEvent(monitor: "b", name: "b", at: at(0) + 1_999, status: .down)).isEmpty)
        #expect(near.closeRound().map(\.notification.key) == ["groupedOutage"])
        // b at exactly 2 s starts a new round: adding it returns the round of a, told alone.
        let far = Decider(policy: policy, channels: ["stdout"], monitors: [:], views: [:])
        #expect(far.add(SampleEvent(monitor: "a", name: "a", at: at(0), status: .down)).isEmpty)
        #expect(far.add(SampleEvent(monitor: "b", name: "b", at: at(2), status: .down)).map(\.notification.key) == ["a"])
        #expect(far.closeRound().map(\.notification.key) == ["b"])
        // With round marks (roundByTime false) the samples' times end nothing: one probe run is
        // one round however long its slowest probe takes (seed 000 6.3).
        let marked = Decider(policy: policy, channels: ["stdout"], monitors: [:], views: [:])
        #expect(marked.add(SampleEvent(monitor: "a", name: "a", at: at(0), status: .down), roundByTime: false).isEmpty)
        #expect(marked.add(SampleEvent(monitor: "b", name: "b", at: at(4), status: .down), roundByTime: false).isEmpty)
        #expect(marked.closeRound().map(\.notification.key) == ["groupedOutage"])
    }

    @Test("closing a round with nothing open decides nothing")
    func emptyRound() {
        let decider = Decider(policy: Policy(), channels: ["stdout"], monitors: [:], views: [:])
        #expect(!decider.roundOpen)
        #expect(decider.closeRound().isEmpty)
        _ = decider.add(SampleEvent(monitor: "a", name: "a", at: at(0), status: .up), roundByTime: false)
        #expect(decider.roundOpen)
        _ = decider.closeRound()
        #expect(!decider.roundOpen)
    }
}

@Suite("Decider: cooldowns per key and channel (seed 000 8.2)")
struct DeciderCooldownTests {
    @Test("a key is quiet for 60 s after it was told: down again at 59 s is dropped, at 60 s told")
    func boundary() {
        let dropped = DeciderRun()
        #expect(dropped.told(s("a", 0, .down)).map(\.key) == ["a"])
        // Recoveries have no cooldown.
        #expect(dropped.told(s("a", 10, .up)).map(\.key) == ["a.recovered"])
        // 59 s after the key's notification: 59 < 60, dropped (isitup drops it).
        #expect(dropped.told(s("a", 59, .down)).isEmpty)
        #expect(dropped.decider.views["stdout"]?.cooldowns["a"] == at(0), "a dropped notification starts no cooldown")
        // The dropped change counts as told: the recovery that follows is news.
        #expect(dropped.told(s("a", 70, .up)).map(\.key) == ["a.recovered"])

        let told = DeciderRun()
        told.round(s("a", 0, .down))
        told.round(s("a", 10, .up))
        // Exactly 60 s later the quiet time is over.
        #expect(told.told(s("a", 60, .down)).map(\.key) == ["a"])
        #expect(told.decider.views["stdout"]?.cooldowns["a"] == at(60))
    }

    @Test("--cooldown 5m: a second outage 4 minutes later is dropped")
    func longerCooldown() {
        let run = DeciderRun { $0.cooldownMs = 300_000 }
        run.round(s("a", 0, .down))
        run.round(s("a", 60, .up))
        #expect(run.told(s("a", 240, .down)).isEmpty, "240 s < 300 s")
    }

    @Test("keys are per event: a.degrading cooling down does not hold back a's outage")
    func keysPerEvent() {
        let run = DeciderRun()
        #expect(run.told(s("a", 0, .degraded)).map(\.key) == ["a.degrading"])
        let down = run.told(s("a", 10, .down))
        #expect(down.map(\.key) == ["a"])
        #expect(down.first?.monitors.first?.previousStatus == "degraded")
    }

    @Test("the group key and the monitors' keys are apart: a and b again together within 60 s is dropped, a alone is not")
    func groupKey() {
        let run = DeciderRun()
        #expect(run.told(s("a", 0, .down), s("b", 0, .down)).map(\.key) == ["groupedOutage"])
        #expect(run.told(s("a", 10, .up), s("b", 10, .up)).map(\.key) == ["groupedRecovery"])
        #expect(run.told(s("a", 20, .down), s("b", 20, .down)).isEmpty, "groupedOutage told at 0 s, 20 < 60")
        #expect(run.told(s("a", 30, .up), s("b", 30, .up)).map(\.key) == ["groupedRecovery"])
        // a alone: its own key, never told before.
        #expect(run.told(s("a", 40, .down), s("b", 40, .up)).map(\.key) == ["a"])
    }

    @Test("--cooldown-mode defer: the held-back change is told when the cooldown ends, if it still holds")
    func deferMode() {
        let run = DeciderRun { $0.deferHeldBack = true }
        run.round(s("a", 0, .down))
        run.round(s("a", 10, .up))
        #expect(run.told(s("a", 30, .down)).isEmpty, "held back: 30 < 60")
        #expect(run.told(s("a", 50, .down)).isEmpty, "still held back: 50 < 60")
        let later = run.told(s("a", 65, .down))
        #expect(later.map(\.key) == ["a"])
        #expect(later.first?.at == at(65))
        // It is told as a change from up, the status the channel was last told.
        #expect(later.first?.monitors.first?.previousStatus == "up")
        // A held-back change that no longer holds is never told.
        let gone = DeciderRun { $0.deferHeldBack = true }
        gone.round(s("b", 0, .down))
        gone.round(s("b", 10, .up))
        #expect(gone.told(s("b", 30, .down)).isEmpty)
        #expect(gone.told(s("b", 70, .up)).isEmpty, "the channel was last told up: nothing changed for it")
    }

    @Test("--repeat-interval 5m: an outage still open is told again as still down, under the monitor's key")
    func repeats() {
        let run = DeciderRun { $0.repeatIntervalMs = 300_000 }
        run.round(s("a", 0, .down))
        #expect(run.told(s("a", 120, .down)).isEmpty)
        let again = run.told(s("a", 300, .down))
        #expect(again.map(\.event) == [.stillDown])
        #expect(again.first?.key == "a")
        // Failed checks by then: 0, 120 and 300 s.
        #expect(again.first?.body == "A has been down for 5m, 3 failed checks")
        // The next repeat counts from this one: 300 + 300 = 600 s.
        #expect(run.told(s("a", 599, .down)).isEmpty)
        #expect(run.told(s("a", 600, .down)).map(\.event) == [.stillDown])
    }

    @Test("a maintenance window mutes a monitor; what still holds at its end is told then")
    func mutes() throws {
        let window = try MuteWindow.parse("a@2026-01-27T10:01:00Z/5m").get()
        let run = DeciderRun { $0.mutes = [window] }
        run.round(s("a", 0, .up))
        #expect(run.told(s("a", 60, .down)).isEmpty, "muted from 10:01")
        #expect(run.told(s("a", 359, .down)).isEmpty, "muted until 10:06, excluded")
        let down = run.told(s("a", 360, .down))
        #expect(down.map(\.key) == ["a"])
        #expect(down.first?.monitors.first?.previousStatus == "up")
        #expect(down.first?.monitors.first?.since == at(60))
    }
}

@Suite("Decider: anomaly episodes (detect-anomaly's, one degradation each)")
struct DeciderEpisodeTests {
    @Test("the onset makes the monitor degraded at once, whatever the threshold")
    func onset() {
        let run = DeciderRun { $0.failureThreshold = 3 }
        run.round(s("a", 0, .up))
        let told = run.told(s("a", 60, .degraded, episode: .onset))
        #expect(told.map(\.key) == ["a.degrading"])
        #expect(told.first?.monitors.first?.since == at(60))
    }

    @Test("the degraded samples inside an episode are no new degradation")
    func inside() {
        let run = DeciderRun()
        run.round(s("a", 0, .up))
        #expect(run.told(s("a", 60, .degraded, episode: .onset)).count == 1)
        for seconds in stride(from: Int64(120), through: 600, by: 60) {
            #expect(run.told(s("a", seconds, .degraded, episode: .ongoing)).isEmpty)
        }
    }

    @Test("an episode whose onset notify never saw is not told by its samples, even at threshold 1")
    func onsetNotSeen() {
        let run = DeciderRun()
        run.round(s("a", 0, .up))
        for seconds in stride(from: Int64(60), through: 300, by: 60) {
            #expect(run.told(s("a", seconds, .degraded, episode: .ongoing)).isEmpty)
        }
        #expect(run.decider.monitors["a"]?.confirmed == "up")
    }

    @Test("the sample that ends an episode recovers a degraded monitor at once, whatever --success-threshold")
    func end() {
        let run = DeciderRun { $0.successThreshold = 3 }
        run.round(s("a", 0, .up))
        run.round(s("a", 60, .degraded, episode: .onset))
        run.round(s("a", 120, .degraded, episode: .ongoing))
        let up = run.told(s("a", 180, .up, episode: .end))
        #expect(up.map(\.event) == [.recovered])
        #expect(up.first?.monitors.first?.since == at(60))
    }

    @Test("an episode's end does not recover a monitor that is down: the threshold holds")
    func endOnDown() {
        let run = DeciderRun { $0.successThreshold = 2 }
        run.round(s("a", 0, .down))
        #expect(run.told(s("a", 60, .up, episode: .end)).isEmpty)
        #expect(run.told(s("a", 120, .up)).map(\.event) == [.recovered])
    }
}

@Suite("round marks")
struct RoundMarkTests {
    @Test("a round ends at the round_end that leaves no marked round open")
    func nested() {
        var rounds = Rounds()
        #expect(rounds.byTime)
        // Marks begin where nothing marked was open: a round by time ends first.
        let first = rounds.begin("p1")
        #expect(first)
        #expect(!rounds.byTime)
        // A second probe's round meets the first.
        let second = rounds.begin("p2")
        #expect(!second)
        // p2 is still open when p1 ends.
        let endOne = rounds.end("p1")
        #expect(!endOne)
        let endTwo = rounds.end("p2")
        #expect(endTwo)
        #expect(rounds.byTime)
    }

    @Test("an end whose start was not seen ends the round; the input's end ends what is open")
    func edges() {
        var rounds = Rounds()
        let unseen = rounds.end("never-begun")
        #expect(unseen)
        _ = rounds.begin("r")
        let ended = rounds.inputEnded()
        #expect(ended)
        #expect(!rounds.marked)
        // Nothing marked was open.
        let again = rounds.inputEnded()
        #expect(!again)
    }
}
