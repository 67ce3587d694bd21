import FixtureServer
import Foundation
import Testing
import VitalsKit

/// Issue 15, OnlineTracker (seed 001) items of store-samples: each test is named after the
/// item and checks the seed's own numbers, decoded with the client's models.
@Suite("store-samples seed fidelity", .hangGuard(minutes: 3))
struct StoreSamplesFidelityTests {
    let scratch: ScratchDirectory
    var db: String { scratch.path("vitals.db") }

    init() throws {
        scratch = try ScratchDirectory()
    }

    func store(_ lines: [String], _ arguments: [String] = []) throws -> RunResult {
        try run("store-samples", ["--db", db, "--now", testNow] + arguments, stdin: lines.joined(separator: "\n") + "\n")
    }

    func query(_ arguments: [String]) throws -> RunResult {
        try run("store-samples", ["--db", db, "--now", testNow] + arguments)
    }

    // Seed 001: GET /api/monitors lists the server's own monitor with "agent_id": null, and
    // agents_total counts "registered monitoring agents" (GET /api/agents). The machine that
    // probes and stores is no agent: probe-http | store-samples without --agent shows none.
    @Test("the probing machine is not an agent: agents_total 0, no /api/agents entry, agent_id null; --agent names one")
    func probingMachineIsNotAnAgent() throws {
        let server = try FixtureServer()
        let targets = try scratch.write("targets.ndjson", #"{"id":"dns","name":"Google DNS","url":"\#(server.baseURL)/ok"}"# + "\n")
        let piped = try shell("probe-http '\(targets)' | store-samples --db '\(db)' --quiet")
        #expect(piped.status == 0, "\(piped.stderr)")
        let overview = try decode(OTStatusOverview.self, try run("store-samples", ["--db", db, "overview"]).stdout)
        #expect(overview.agentsTotal == 0)
        #expect(overview.totalMonitors == 1)
        #expect(try decode([OTAgent].self, try run("store-samples", ["--db", db, "agents"]).stdout).isEmpty)
        let monitors = try decode([OTMonitor].self, try run("store-samples", ["--db", db, "monitors"]).stdout)
        #expect(monitors.count == 1 && monitors.first?.agentId == nil)
        // An agent named on the command line is one.
        let office = try shell("probe-http --agent office '\(targets)' | store-samples --db '\(db)' --quiet")
        #expect(office.status == 0, "\(office.stderr)")
        #expect(try decode(OTStatusOverview.self, try run("store-samples", ["--db", db, "overview"]).stdout).agentsTotal == 1)
        #expect(try decode([OTAgent].self, try run("store-samples", ["--db", db, "agents"]).stdout).map(\.id) == ["office"])
        // The monitor is now seen from two places, this machine and office: it belongs to neither
        // (agent_id null, not whichever reported last), and its own view lists both.
        #expect(try decode([OTMonitor].self, try run("store-samples", ["--db", db, "monitors"]).stdout).first?.agentId == nil)
        let detail = try run("store-samples", ["--db", db, "monitor", "dns"]).stdout
        #expect(
            detail.contains(#""places":[{"agent":null,"status":"up","#) && detail.contains(#"{"agent":"office","status":"up","#),
            "\(detail)")
    }

    // Seed 001, MonitorConfig: `let timeoutSeconds: Int?`, `let httpOkThresholdMs: Int?`; the app
    // decodes GET /api/monitors into [Monitor], so one fraction fails the whole list.
    @Test("a fractional timeout or threshold: the monitor list decodes with the app's models, the exact value in a field of its own")
    func fractionalConfigDecodes() throws {
        let server = try FixtureServer()
        let targets = try scratch.write(
            "targets.ndjson",
            """
            {"id":"dns","name":"Google DNS","url":"\(server.baseURL)/ok","http_ok_threshold_ms":80.5}
            {"id":"web","name":"Web","url":"\(server.baseURL)/ok","timeout_seconds":3}
            """)
        let piped = try shell("probe-http -t 1500ms '\(targets)' | store-samples --db '\(db)' --quiet")
        #expect(piped.status == 0, "\(piped.stderr)")
        let listed = try run("store-samples", ["--db", db, "monitors"])
        let monitors = try decode([OTMonitor].self, listed.stdout)
        let dns = try #require(monitors.first { $0.name == "Google DNS" })
        // 1.5 s to the nearest whole second is 2; 80.5 ms to the nearest whole millisecond is 81.
        #expect(dns.config?.timeoutSeconds == 2 && dns.config?.httpOkThresholdMs == 81)
        #expect(monitors.first { $0.name == "Web" }?.config?.timeoutSeconds == 3, "a whole number stays as it is")
        // The exact values, beside them.
        let raw = try #require(
            try JSONParser.parse(listed.stdout).arrayValue?.compactMap(\.objectValue).first { $0.string("name") == "Google DNS" })
        let config = try #require(raw["config"]?.objectValue)
        #expect(config["timeout_ms"] == .number("1500") || config["timeout_ms"] == .integer(1500), "\(config)")
        #expect(config["http_ok_threshold_ms_exact"]?.doubleValue == 80.5, "\(config)")
        #expect(config["timeout_seconds"]?.intValue == 2)
        // One monitor, as GET /api/monitors/{id} answers it, decodes too.
        let one = try decode(OTMonitor.self, try run("store-samples", ["--db", db, "monitor", String(dns.id)]).stdout)
        #expect(one.config?.timeoutSeconds == 2)
    }

    @Test("uptime counts only up: the seed's degraded bucket at 75.0; overall is the mean of the monitors")
    func uptimeCountsOnlyUp() throws {
        // The seed's history example: the 10:15 bucket is degraded at 75.0, so of its four
        // checks three were up and one degraded; a degraded check is not uptime.
        // Monitor "web": one up check, 100.0. The overall figure is the mean of the monitors'
        // figures, (75.0 + 100.0) / 2 = 87.5, not the pooled 4 of 5 checks (80.0).
        let input = [
            sample("api", minute: 15), sample("api", minute: 18), sample("api", minute: 21),
            sample("api", minute: 24, status: "degraded", latency: 180),
            sample("web", minute: 20),
        ]
        #expect(try store(input).status == 0)
        let history = try decode([OTStatusHistoryPoint].self, try query(["history", "api", "--since", "3h"]).stdout)
        #expect(history.count == 1)
        #expect(history.first?.timestamp == "2026-01-27T10:15:00Z")
        #expect(history.first?.status == .degraded)
        #expect(history.first?.uptimePercent == 75.0)
        let overview = try decode(OTStatusOverview.self, try query(["overview"]).stdout)
        #expect(overview.monitors.first { $0.name == "API" }?.uptime24h == 75.0)
        #expect(overview.monitors.first { $0.name == "WEB" }?.uptime24h == 100.0)
        #expect(overview.overallUptime24h == 87.5)
        let stats = try query(["stats", "--since", "24h"]).records()
        let perMonitor = stats.first?["monitors"]?.arrayValue ?? []
        #expect(perMonitor.first?.objectValue?["uptime_percent"]?.doubleValue == 75.0)
    }

    @Test("monitor list order: down, then degraded, then up, then by name; --sort id keeps the id order")
    func monitorListOrder() throws {
        // The app groups its list: down first, then degraded, then up.
        let input = [
            sample("zeta", minute: 1),
            sample("alpha", minute: 2),
            sample("mid", minute: 3, status: "degraded"),
            sample("bad", minute: 4, status: "down"),
            sample("err", minute: 5, status: "error", latency: nil),
        ]
        #expect(try store(input).status == 0)
        let monitors = try decode([OTMonitor].self, try query(["monitors"]).stdout)
        #expect(monitors.map(\.name) == ["BAD", "ERR", "MID", "ALPHA", "ZETA"])
        let overview = try decode(OTStatusOverview.self, try query(["overview"]).stdout)
        #expect(overview.monitors.map(\.name) == ["BAD", "ERR", "MID", "ALPHA", "ZETA"])
        let byID = try decode([OTMonitor].self, try query(["monitors", "--sort", "id"]).stdout)
        #expect(byID.map(\.id) == [1, 2, 3, 4, 5])
    }

    @Test("empty 15-minute buckets inside the requested hours are left out: the app's chart draws a gap")
    func emptyBucketsAreLeftOut() throws {
        // Checks at 10:05 and 10:50: the 10:15 and 10:30 buckets hold none and are absent,
        // so the client's timeline, which draws one bar per point, shows the gap.
        #expect(try store([sample("api", minute: 5), sample("api", minute: 50)]).status == 0)
        let history = try decode([OTStatusHistoryPoint].self, try query(["history", "api", "--since", "3h"]).stdout)
        #expect(history.map(\.timestamp) == ["2026-01-27T10:00:00Z", "2026-01-27T10:45:00Z"])
    }

    @Test("clearing history: all, one monitor, or before a time, as isitup's and Online Now's clear history")
    func clearingHistory() throws {
        // Three samples each of api and web at 10:00, 10:30 and 11:00.
        let input = [0, 30, 60].flatMap { [sample("api", minute: $0), sample("web", minute: $0)] }
        #expect(try store(input).status == 0)
        // Before 10:30: the two 10:00 samples go.
        let early = try query(["clear", "--until", "2026-01-27T10:30:00Z"]).records()
        #expect(early.first?.string("type") == "cleared" && early.first?.int("samples") == 2)
        #expect(early.first?.string("before") == "2026-01-27T10:30:00.000Z")
        // One monitor: web's two remaining samples; api's stay.
        #expect(try query(["clear", "--monitor", "web"]).records().first?.int("samples") == 2)
        #expect(
            try sqlite(db, "SELECT group_concat(m.monitor || '@' || s.at) FROM samples s JOIN monitors m ON m.id = s.monitor_id")
                == "api@1769509800000,api@1769511600000")
        // All: nothing left; the monitors stay, with no latest status.
        #expect(try query(["clear", "--all"]).records().first?.int("samples") == 2)
        #expect(try sqlite(db, "SELECT count(*) FROM samples") == "0")
        let monitors = try decode([OTMonitor].self, try query(["monitors", "--sort", "id"]).stdout)
        #expect(monitors.map(\.name) == ["API", "WEB"] && monitors.allSatisfy { $0.latestStatus == nil })
        // Saying nothing is a usage error, not a wipe; an unknown monitor is exit 2.
        #expect(try query(["clear"]).status == 64)
        #expect(try query(["clear", "--all", "--monitor", "api"]).status == 64)
        #expect(try query(["clear", "--monitor", "nope"]).status == 2)
    }

    @Test("agents that report from elsewhere start pending: stored, not counted until approved; rejected ones refused")
    func remoteAgentsStartPending() throws {
        func checks(_ monitor: String) throws -> Int {
            try decode(OTResultsPage.self, try query(["results", monitor]).stdout).total
        }
        // OnlineTracker: an agent that registers from another machine is pending until approved.
        let tokyo = #","agent":"tokyo","agent_name":"Tokyo office""#
        #expect(try store([sample("edge", minute: 1, extra: tokyo), sample("edge", minute: 2, extra: tokyo)], ["--remote"]).status == 0)
        #expect(
            try sqlite(db, "SELECT count(*) || ' ' || sum(origin) || ' ' || sum(held) FROM samples") == "2 2 2",
            "stored, from elsewhere, held")
        var overview = try decode(OTStatusOverview.self, try query(["overview"]).stdout)
        #expect(overview.agentsTotal == 1 && overview.agentsPending == 1)
        #expect(overview.monitors.first { $0.name == "EDGE" }?.status == .unknown, "no counted sample yet")
        #expect(try checks("edge") == 0)
        #expect(try query(["history", "edge"]).stdout == "[]\n")
        let agents = try decode([OTAgent].self, try query(["agents"]).stdout)
        #expect(agents.first?.id == "tokyo" && agents.first?.name == "Tokyo office" && agents.first?.status == .pending)
        // The user's own command line counts at once, whatever the sample's agent field says.
        #expect(try store([sample("mine", minute: 3, extra: tokyo)]).status == 0)
        #expect(try checks("mine") == 1)
        // Approving the agent counts what it had sent.
        #expect(try query(["agents", "approve", "tokyo"]).status == 0)
        #expect(try checks("edge") == 2)
        overview = try decode(OTStatusOverview.self, try query(["overview"]).stdout)
        #expect(overview.agentsPending == 0 && overview.monitors.first { $0.name == "EDGE" }?.status == .up)
        // A rejected agent's samples are refused with a clear error; nothing of them is stored.
        #expect(try store([sample("bad", minute: 4, extra: #","agent":"evil""#)], ["--remote"]).status == 0)
        #expect(try query(["agents", "reject", "evil"]).status == 0)
        let refused = try store([sample("bad", minute: 5, extra: #","agent":"evil""#)], ["--remote"])
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("agent 'evil' is rejected: its samples are refused"))
        #expect(try sqlite(db, "SELECT count(*) FROM samples WHERE agent = 'evil'") == "1")
        // --auto-approve and a list of approved agents let new agents count at once.
        #expect(try store([sample("paris1", minute: 6, extra: #","agent":"paris""#)], ["--remote", "--auto-approve"]).status == 0)
        #expect(try checks("paris1") == 1)
        #expect(
            try store([sample("berlin1", minute: 7, extra: #","agent":"berlin""#)], ["--remote", "--approve-agents", "berlin,oslo"]).status
                == 0)
        #expect(try checks("berlin1") == 1)
        let statuses = try decode([OTAgent].self, try query(["agents"]).stdout).map { "\($0.id)=\($0.status)" }
        #expect(statuses == ["tokyo=approved", "evil=rejected", "paris=approved", "berlin=approved", "oslo=approved"])
        // A sample from elsewhere must say which agent sent it.
        let anonymous = try store([sample("x", minute: 8)], ["--remote"])
        #expect(anonymous.status == 2 && anonymous.stderr.contains("must name its 'agent'"))
        #expect(try query(["--auto-approve"]).status == 64)
    }

    @Test("check_interval, config and enabled are real in the views: the latest of each per monitor")
    func checkIntervalConfigAndEnabled() throws {
        // The seed's Google DNS monitor: a ping every 60 s with ping_count 5, ok under 80 ms,
        // degraded under 200 ms; a later sample says 30 s and disabled.
        let config = #","config":{"ping_count":5,"ping_ok_threshold_ms":80,"ping_degraded_threshold_ms":200}"#
        let input = [
            sample("dns", minute: 1, extra: #","check_interval":60,"enabled":true"# + config),
            sample("dns", minute: 2, extra: #","check_interval":30,"enabled":false"#),
            sample("web", minute: 3),
        ]
        #expect(try store(input).status == 0)
        let monitors = try decode([OTMonitor].self, try query(["monitors", "--sort", "id"]).stdout)
        let dns = monitors[0]
        #expect(dns.checkInterval == 30)
        #expect(dns.enabled == false)
        #expect(dns.config?.pingCount == 5 && dns.config?.pingOkThresholdMs == 80 && dns.config?.pingDegradedThresholdMs == 200)
        // A monitor whose samples say nothing: the seed's default interval, enabled, no config.
        #expect(monitors[1].checkInterval == 60 && monitors[1].enabled && monitors[1].config == nil)
        let single = try decode(OTMonitor.self, try query(["monitor", "dns"]).stdout)
        #expect(single.config?.pingCount == 5)
        // Values of the wrong type are bad lines, reported in the reader's words; the rest is stored.
        let bad = try store([
            sample("dns", minute: 4, extra: #","config":5"#), sample("dns", minute: 5, extra: #","enabled":"yes""#),
            sample("dns", minute: 6),
        ])
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("<stdin>:1: sample 'config' is 5; expected an object or null"))
        #expect(bad.stderr.contains("<stdin>:2: sample 'enabled' is \"yes\"; expected true, false or null"))
        #expect(try sqlite(db, "SELECT count(*) FROM samples") == "4")
    }
}
