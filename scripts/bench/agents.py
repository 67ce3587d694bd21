#!/usr/bin/env python3
"""The timed parts of scripts/bench/agents (which sets up the servers and calls these in turn).

Each step appends one JSON line to the results file; `report` reads them all, prints the
table and the goals, and exits 1 when a goal is missed or a check fails.

  receive  a webhook receiver: the time each POST arrived, and its body, one JSON line each
  live     10 agents, one run a minute each (agent i at second 6*i), MINUTES minutes
  spool    the agents' runs of an outage (nothing listens): each exits 75, its batch spooled
  deliver  the 10 agents (or curl, posting the same spool files) deliver at once
  floor    the same batches ingested by store-samples on this machine, one process a batch
  rss      the peak memory of store-samples --version
  report   the table
"""

import argparse
import http.server
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import proctable  # noqa: E402

AGENTS = 10
MONITORS = 1000
SPACING = 6  # seconds between the agents' runs in a minute


def agent_name(index):
    return "agent%d" % index


def stamp(ms):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + ".%03dZ" % (ms % 1000)


# --- The statuses ------------------------------------------------------------------------
# POSTs are numbered in the order they are made, p = 10 * minute + agent. From the second
# minute on, every even POST p0 starts an episode of one monitor, m((p0 / 2) mod 1,000): the
# agents of POSTs p0 .. p0 + 10 see it down, every other sample of it is up. With ten fresh
# places and a majority of six (vitals(7), PLACES), its consensus is
#   degraded (partial) at p0        one place fails
#   down               at p0 + 5    six fail
#   degraded (partial) at p0 + 15   five fail (the agents of p0 + 11 .. p0 + 15 see it up again)
#   up (recovered)     at p0 + 20   none fail
# so each POST makes two notifications, one monitor each (an even POST: a degraded and a
# recovery; an odd one: a down and a degraded), never two of a kind in one round (which notify
# would group), and no cooldown holds any back (notify's 60 s per key and channel: the two
# degraded of an episode are 90 s apart).
EPISODE = 11
FIRST_EPISODE = AGENTS  # the first minute only makes every place known


def episode_monitor(p0):
    return "m%04d" % ((p0 // 2) % MONITORS)


def failing(post):
    """The monitors the agent of POST `post` sees down."""
    return {episode_monitor(p0) for p0 in range(max(FIRST_EPISODE, post - EPISODE + 1), post + 1) if p0 % 2 == 0}


def expected_notifications(posts):
    """(event, monitor, post) of every notification POSTs 0 .. posts - 1 should make."""
    out = []
    for p0 in range(FIRST_EPISODE, posts, 2):
        monitor = episode_monitor(p0)
        for offset, event in ((0, "degraded"), (5, "down"), (15, "degraded"), (20, "recovered")):
            if p0 + offset < posts:
                out.append((event, monitor, p0 + offset))
    return out


def batch(agent, post, at_ms, round_id):
    """An agent's run: a round of 1,000 samples, as probe-http --agent writes one."""
    at = stamp(at_ms)
    down = failing(post)
    name = agent_name(agent)
    lines = ['{"type":"round_start","round":"%s","tool":"probe-http","at":"%s"}' % (round_id, at)]
    for m in range(MONITORS):
        monitor = "m%04d" % m
        latency = 20 + m % 80
        if monitor in down:
            result = '"status":"down","reason":"http_status","message":"HTTP 503, expected 200-399","code":503'
        else:
            result = '"status":"up","reason":null,"message":"HTTP 200 in %dms","code":200' % latency
        lines.append(
            '{"type":"sample","monitor":"%s","name":"Monitor %d","kind":"https","target":"https://%s.example/health",'
            '"at":"%s","method":"HEAD","agent":"%s",%s,"latency_ms":%d,"check_interval":60}'
            % (monitor, m, monitor, at, name, result, latency)
        )
    lines.append(
        '{"type":"round_end","round":"%s","tool":"probe-http","at":"%s","started_at":"%s","samples":%d}'
        % (round_id, at, at, MONITORS)
    )
    return ("\n".join(lines) + "\n").encode()


# --- Processes ---------------------------------------------------------------------------
RUNNING = set()  # the pids of the processes started and not yet ended


def stop(signum, _frame):
    """A stop of the bench stops what this step started too."""
    for pid in list(RUNNING):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    os._exit(128 + signum)


class Run:
    """One process, started now, waited for by a thread of its own: its end time and rusage."""

    def __init__(self, argv, stdin, stderr, env=None, stdout=os.devnull):
        self.argv = argv
        self.started = time.time()
        self.pid = os.posix_spawn(
            argv[0],
            argv,
            env if env is not None else os.environ,
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, stdin, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_OPEN, 1, stdout, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600),
                (os.POSIX_SPAWN_OPEN, 2, stderr, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600),
            ],
        )
        RUNNING.add(self.pid)
        self.ended = None
        self.status = None
        self.usage = None
        self.thread = threading.Thread(target=self._wait, daemon=True)
        self.thread.start()

    def _wait(self):
        _, status, usage = os.wait4(self.pid, 0)
        self.ended = time.time()
        RUNNING.discard(self.pid)
        self.status = os.waitstatus_to_exitcode(status)
        self.usage = usage

    def join(self):
        self.thread.join()
        return self

    def cpu(self):
        return self.usage.ru_utime + self.usage.ru_stime

    def peak_mb(self):
        return self.usage.ru_maxrss / 1024  # KiB on Linux


def agent_argv(args, agent):
    url = "https://127.0.0.1:%d/?token_file=%s&cacert=%s" % (
        args.port, os.path.join(args.agents, agent_name(agent) + ".token"), args.cacert)
    return [os.path.join(args.bin, "store-samples"), "--db", url, "--spool",
            os.path.join(args.agents, "spool-" + agent_name(agent)), "-q"]


TICK = os.sysconf("SC_CLK_TCK")


def server_cpu(root, extra):
    """CPU seconds so far of each process under `root` (scripts/serve) and of `extra` (a
    ClickHouse server), by pid: {pid: (part, seconds)}."""
    table = proctable.read()
    parents = {pid: int(fields[1]) for pid, (fields, _) in table.items()}
    commands = {pid: (command, (int(fields[11]) + int(fields[12])) / TICK) for pid, (fields, command) in table.items()}
    out = {}
    for pid, (command, seconds) in commands.items():
        ancestor, inside = pid, False
        while ancestor > 1:
            ancestor = parents.get(ancestor, 0)
            if ancestor == root:
                inside = True
                break
        if pid in extra:
            out[pid] = ("clickhouse-server", seconds)
        elif inside:
            out[pid] = (part_of(command), seconds)
    return out


def part_of(command):
    if command.startswith("nginx"):
        return "nginx"
    if "store-samples serve" in command:
        return "store-samples serve"
    if "notify" in command and " serve" in command:
        return "notify serve"
    if "store-samples follow" in command:
        return "follow"
    if "detect-anomaly" in command:
        return "detect-anomaly"
    if "/notify " in command:
        return "notify"
    return "other"


def cpu_between(before, after):
    parts = {}
    for pid, (part, seconds) in after.items():
        start = before.get(pid, (part, 0.0))[1]
        parts[part] = parts.get(part, 0.0) + seconds - start
    return parts


def sleep_until(t):
    while True:
        left = t - time.time()
        if left <= 0:
            return
        time.sleep(min(left, 0.5))


def received(log, path):
    """The notifications the receiver logged for `path`: (time received, record)."""
    out = []
    try:
        with open(log) as f:
            for line in f:
                entry = json.loads(line)
                if entry["path"] == path:
                    out.append((entry["t"], json.loads(entry["body"])))
    except FileNotFoundError:
        pass
    return out


def append(results, record):
    with open(results, "a") as f:
        f.write(json.dumps(record) + "\n")


# --- Steps -------------------------------------------------------------------------------
def receive(args):
    log = open(args.log, "a")
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            now = time.time()
            with lock:
                log.write(json.dumps({"t": now, "path": self.path, "body": body.decode(errors="replace")}) + "\n")
                log.flush()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *_):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(args.port_file + ".tmp", args.port_file)
    server.serve_forever()


def live(args):
    """Agent i runs at second 6 * i of each minute, on that minute's 1,000 samples."""
    posts = AGENTS * args.minutes
    expected = expected_notifications(posts)
    inputs = os.path.join(args.work, "inputs")
    os.makedirs(inputs, exist_ok=True)
    clickhouse = {args.clickhouse_pid} if args.clickhouse_pid else set()
    start = time.time() + 1
    before = server_cpu(args.serve_pid, clickhouse)
    runs = []
    for minute in range(args.minutes):
        for agent in range(AGENTS):
            post = minute * AGENTS + agent
            sleep_until(start + minute * 60 + agent * SPACING)
            at_ms = int(time.time() * 1000)
            path = os.path.join(inputs, "%04d.ndjson" % post)
            with open(path, "wb") as f:
                f.write(batch(agent, post, at_ms, "%016x-%d" % (0xbe0c4 + agent, minute + 1)))
            runs.append((post, agent, minute, stamp(at_ms),
                         Run(agent_argv(args, agent), path, os.path.join(args.work, "agents.log"))))
        print("bench: %s, minute %d of %d" % (args.backend, minute + 1, args.minutes), file=sys.stderr)
    for run in runs:
        run[4].join()
    last_end = max(run[4].ended for run in runs)
    # The follower's last notifications: wait for them (or for what must have come by now).
    deadline = last_end + args.settle
    while time.time() < deadline and len(received(args.log, args.path)) < len(expected):
        time.sleep(0.1)
    after = server_cpu(args.serve_pid, clickhouse)
    window = time.time() - start

    by_at = {at: (post, run) for post, _, _, at, run in runs}
    delays, unexpected, matched = [], [], set()
    # An episode's monitor is told degraded twice (on the way down and on the way up): each
    # notification is matched by its event, monitor and POST, once.
    want = set(expected)
    for t, record in received(args.log, args.path):
        post, run = by_at.get(record.get("at"), (None, None))
        if run is None:
            unexpected.append(record.get("title"))
            continue
        delays.append(t - run.ended)
        key = (record.get("event"), record.get("monitor"), post)
        if key in want and key not in matched:
            matched.add(key)
        else:
            unexpected.append("%s %s at POST %d" % (key[0], key[1], post))
    append(args.results, {
        "step": "live", "backend": args.backend, "minutes": args.minutes, "posts": posts,
        "samples": posts * MONITORS, "statuses": {str(s): sum(1 for r in runs if r[4].status == s)
                                                   for s in {r[4].status for r in runs}},
        "expected": len(expected), "received": len(delays), "matched": len(matched),
        "unexpected": unexpected[:10], "delays": delays, "window_s": window,
        "cpu": cpu_between(before, after),
        "agent_seconds": [r[4].ended - r[4].started for r in runs],
        "agent_cpu": [r[4].cpu() for r in runs], "agent_peak_mb": [r[4].peak_mb() for r in runs],
    })


def spool(args):
    """The outage: OUTAGE minutes' runs of every agent, backdated a minute apart, while nothing
    listens on the server's port; each run spools its batch and exits 75."""
    now_ms = int(time.time() * 1000) - args.outage * 60000
    inputs = os.path.join(args.work, "outage-inputs")
    os.makedirs(inputs, exist_ok=True)
    runs = []
    for minute in range(args.outage):
        round_runs = []
        for agent in range(AGENTS):
            post = minute * AGENTS + agent
            at_ms = now_ms + minute * 60000 + agent * SPACING * 1000
            path = os.path.join(inputs, "%04d.ndjson" % post)
            with open(path, "wb") as f:
                f.write(batch(agent, post, at_ms, "%016x-%d" % (0x5900 + agent, minute + 1)))
            # --wait 1ms: a cron run would try for 10 s before it exits 75, with the same spool after.
            round_runs.append(Run(agent_argv(args, agent) + ["--wait", "1ms"], path, os.path.join(args.work, "spool.log")))
        runs += [run.join() for run in round_runs]
    if any(run.status != 75 for run in runs):
        sys.exit("bench: an agent run with the server away did not exit 75 (spooled); see %s/spool.log" % args.work)
    append(args.results, {
        "step": "spool", "backend": args.backend, "runs": len(runs),
        "statuses": {str(s): sum(1 for r in runs if r.status == s) for s in {r.status for r in runs}},
        "agent_seconds": [r.ended - r.started for r in runs], "agent_peak_mb": [r.peak_mb() for r in runs],
    })


def deliver(args):
    """Every agent delivers its spool at once (store-samples with no input), or, as the peer, one
    curl an agent posts the same spool files in the same order on one connection."""
    clickhouse = {args.clickhouse_pid} if args.clickhouse_pid else set()
    configs = []
    if args.who == "curl":
        for agent in range(AGENTS):
            folder = os.path.join(args.agents, "spool-" + agent_name(agent), "127.0.0.1_%d" % args.port)
            files = sorted(f for f in os.listdir(folder) if f.endswith(".ndjson"))
            with open(os.path.join(args.agents, agent_name(agent) + ".token")) as f:
                token = f.readline().strip()
            config = os.path.join(args.work, "curl-%s.conf" % agent_name(agent))
            with open(config, "w") as f:
                os.fchmod(f.fileno(), 0o600)
                for n, name in enumerate(files):
                    if n:
                        f.write("next\n")
                    f.write('url = "https://127.0.0.1:%d/api/samples"\ncacert = "%s"\nsilent\n'
                            'header = "Authorization: Bearer %s"\nheader = "Content-Type: application/x-ndjson"\n'
                            'data-binary = "@%s"\noutput = "/dev/null"\nwrite-out = "%%{http_code}\\n"\n'
                            % (args.port, args.cacert, token, os.path.join(folder, name)))
            configs.append(config)
    before = server_cpu(args.serve_pid, clickhouse)
    started = time.time()
    runs = []
    for agent in range(AGENTS):
        if args.who == "curl":
            runs.append(Run([shutil.which("curl"), "-K", configs[agent]], os.devnull,
                            os.path.join(args.work, "deliver.log"), stdout=os.path.join(args.work, "curl-codes.txt")))
        else:
            runs.append(Run(agent_argv(args, agent), os.devnull, os.path.join(args.work, "deliver.log")))
    for run in runs:
        run.join()
    delivered = max(run.ended for run in runs) - started
    after = server_cpu(args.serve_pid, clickhouse)
    codes = []
    if args.who == "curl":
        with open(os.path.join(args.work, "curl-codes.txt")) as f:
            codes = [line.strip() for line in f if line.strip()]
        os.remove(os.path.join(args.work, "curl-codes.txt"))
    # How long the follower took to pass on every batch (notify's round_ends).
    follower = None
    deadline = time.time() + args.settle
    while time.time() < deadline:
        try:
            with open(args.notifications) as f:
                ends = sum(1 for line in f if '"type":"round_end"' in line)
        except FileNotFoundError:
            ends = 0
        if ends >= args.batches:
            follower = time.time() - started
            break
        time.sleep(0.05)
    append(args.results, {
        "step": "deliver", "backend": args.backend, "who": args.who, "seconds": delivered,
        "statuses": {str(s): sum(1 for r in runs if r.status == s) for s in {r.status for r in runs}},
        "codes": {c: codes.count(c) for c in set(codes)}, "follower_s": follower,
        "cpu": cpu_between(before, after), "agent_peak_mb": [r.peak_mb() for r in runs],
        "stored": None,
    })


def stored(args):
    """Adds the store's count to the last deliver line of the results (or live line)."""
    with open(args.results) as f:
        lines = [json.loads(line) for line in f]
    lines[-1]["stored"] = args.count
    with open(args.results, "w") as f:
        f.writelines(json.dumps(line) + "\n" for line in lines)


def floor(args):
    """The same batches stored by one store-samples process on the server's machine, in order:
    it commits at each batch's round_end, so each batch is one transaction, as a POST is."""
    clickhouse = {args.clickhouse_pid} if args.clickhouse_pid else set()
    files = sorted(os.listdir(args.inputs))
    joined = os.path.join(args.work, "floor.ndjson")
    with open(joined, "wb") as out:
        for name in files:
            with open(os.path.join(args.inputs, name), "rb") as f:
                out.write(f.read())
    before = server_cpu(-1, clickhouse)
    run = Run([os.path.join(args.bin, "store-samples"), "--db", args.db, "--remote", "--auto-approve", "-q"],
              joined, os.path.join(args.work, "floor.log")).join()
    if run.status != 0:
        sys.exit("bench: store-samples --remote of the live batches ended with %d; see floor.log" % run.status)
    clickhouse_cpu = sum(cpu_between(before, server_cpu(-1, clickhouse)).values())
    os.remove(joined)
    append(args.results, {"step": "floor", "backend": args.backend, "batches": len(files), "cpu": run.cpu(),
                          "clickhouse_cpu": clickhouse_cpu, "seconds": run.ended - run.started})


def rss(args):
    peaks = []
    for _ in range(3):
        run = Run([os.path.join(args.bin, "store-samples"), "--version"], os.devnull, os.devnull).join()
        peaks.append(run.peak_mb())
    append(args.results, {"step": "rss", "peak_mb": peaks})


# --- The table ---------------------------------------------------------------------------
def percentile(values, fraction):
    """The nearest-rank percentile."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, -(-int(round(fraction * 1000)) * len(ordered) // 1000))
    return ordered[min(rank, len(ordered)) - 1]


def report(args):
    with open(args.results) as f:
        results = [json.loads(line) for line in f]
    missed = []
    checks = []

    def goal(text, ok):
        print("goal %-8s %s" % ("met:" if ok else "MISSED:", text))
        if not ok:
            missed.append(text)

    names = {"sqlite": "SQLite", "clickhouse": "ClickHouse"}
    floors = {r["backend"]: r for r in results if r["step"] == "floor"}
    lives = [r for r in results if r["step"] == "live"]
    print()
    if lives:
        print("Live: 10 agents x 1,000 monitors, a run a minute each (agent i at second 6i), %d minutes "
              "(the first without episodes)" % lives[0]["minutes"])
        print("%-11s %8s %12s %8s %8s %8s %12s %13s %10s %7s %7s" % (
            "backend", "samples", "notified", "p50 s", "p99 s", "max s", "delay floor",
            "CPU s/min", "CPU ms/1k", "floor", "x floor"))
        for r in lives:
            d = r["delays"]
            cpu = sum(r["cpu"].values())
            per_k = cpu * 1000 / (r["samples"] / 1000)
            fl = floors.get(r["backend"])
            floor_k = ((fl["cpu"] + fl["clickhouse_cpu"]) * 1000 / (r["samples"] / 1000)) if fl else float("nan")
            print("%-11s %8s %6d of %-3d %8.3f %8.3f %8.3f %12s %13.1f %10.1f %7.1f %7.1f" % (
                names[r["backend"]], "{:,}".format(r["samples"]), r["received"], r["expected"],
                statistics.median(d) if d else float("nan"), percentile(d, 0.99), max(d) if d else float("nan"),
                "0.1 poll" if r["backend"] == "sqlite" else "2.5 lag+poll",
                cpu * 60 / r["window_s"], per_k, floor_k, per_k / floor_k if fl else float("nan")))
        for r in lives:
            parts = ", ".join("%s %.2f" % (k, v) for k, v in sorted(r["cpu"].items(), key=lambda kv: -kv[1]))
            print("  %s server CPU s over %.0f s: %s" % (names[r["backend"]], r["window_s"], parts))
            print("  %s agent runs, start to end: median %.3f s, max %.3f s; CPU median %.3f s" % (
                names[r["backend"]], statistics.median(r["agent_seconds"]), max(r["agent_seconds"]),
                statistics.median(r["agent_cpu"])))
            if r["matched"] != r["expected"] or r["received"] != r["expected"] or r["unexpected"]:
                checks.append("%s: %d notifications as worked out of %d expected, %d received; unexpected: %s" % (
                    names[r["backend"]], r["matched"], r["expected"], r["received"], r["unexpected"]))
            if r["statuses"] != {"0": r["posts"]}:
                checks.append("%s: agent exit statuses %s" % (names[r["backend"]], r["statuses"]))
            if r.get("stored") != r["samples"]:
                checks.append("%s: %s samples stored of %d sent" % (names[r["backend"]], r.get("stored"), r["samples"]))
        print("  delay: the webhook's receipt of a notification minus the end of the agent run whose POST made it")
        print("  (the run ends just after its 2xx); floor: the follower's poll (SQLite) or lag and poll (ClickHouse).")
        print("  server CPU: nginx, both responders and the follower's three processes (and clickhouse-server),")
        print("  in CPU seconds a minute of the run, and per 1,000 samples stored; floor: one store-samples --remote")
        print("  process storing the same batches on the server's machine, a transaction each as a POST (on")
        print("  ClickHouse with clickhouse-server's CPU): what storing costs without HTTP, FastCGI and the follower.")

    delivers = [r for r in results if r["step"] == "deliver"]
    spools = [r for r in results if r["step"] == "spool"]
    catchup = {}
    if delivers:
        batches = spools[0]["runs"]
        samples = batches * MONITORS
        runs = len([r for r in delivers if r["who"] == "agents" and r["backend"] == delivers[0]["backend"]])
        print()
        print("Catch-up after a %d-minute outage: %d spooled batches, %s samples, delivered by the 10 agents at once,"
              % (batches // AGENTS, batches, "{:,}".format(samples)))
        print("beside the peer: 10 curl processes posting the same spool files, in order, one connection each;")
        print("the median of %d run%s, taken in turn, each on a fresh store." % (runs, "" if runs == 1 else "s"))
        print("%-11s %9s %10s %8s %9s %10s %8s %8s %10s" % (
            "backend", "agents s", "samples/s", "CPU s", "curl s", "samples/s", "CPU s", "x curl", "follower s"))
        for backend in [b for b in ("sqlite", "clickhouse") if any(r["backend"] == b for r in delivers)]:
            row = {}
            for who in ("agents", "curl"):
                rs = [r for r in delivers if r["backend"] == backend and r["who"] == who]
                for r in rs:
                    if r.get("stored") != samples:
                        checks.append("%s catch-up (%s): %s samples stored of %d" % (names[backend], who, r.get("stored"), samples))
                    if who == "agents" and r["statuses"] != {"0": AGENTS}:
                        checks.append("%s catch-up: agent exit statuses %s" % (names[backend], r["statuses"]))
                    if who == "curl" and r["codes"] != {"200": batches}:
                        checks.append("%s catch-up (curl): answers %s" % (names[backend], r["codes"]))
                row[who] = statistics.median(r["seconds"] for r in rs) if rs else float("nan")
                row[who + " cpu"] = statistics.median(sum(r["cpu"].values()) for r in rs) if rs else float("nan")
                if who == "agents":
                    follower = [r["follower_s"] for r in rs]
                    row["follower"] = "%.1f" % statistics.median(follower) if None not in follower else "not all"
            catchup[backend] = samples / row["agents"]
            print("%-11s %9.2f %10s %8.2f %9.2f %10s %8.2f %8.2f %10s" % (
                names[backend], row["agents"], "{:,.0f}".format(samples / row["agents"]), row["agents cpu"], row["curl"],
                "{:,.0f}".format(samples / row["curl"]), row["curl cpu"], row["curl"] / row["agents"], row["follower"]))
        print("  agents s: from starting the 10 agents (store-samples with no input) to the last one's end; curl s,")
        print("  the same for the peer; CPU s: the server's (as above) meanwhile; x curl: the agents' rate over curl's;")
        print("  follower s: from the agents' start until the follower's notify had passed on every batch (round_end).")

    rsses = [r for r in results if r["step"] == "rss"]
    memory = {}
    print()
    print("%-44s %8s %8s %8s" % ("agent peak memory (MB, maximum resident)", "median", "max", "runs"))
    sqlite_live = [r for r in lives if r["backend"] == "sqlite"] or lives
    if sqlite_live:
        peaks = [p for r in sqlite_live for p in r["agent_peak_mb"]]
        memory["send"] = statistics.median(peaks)
        print("%-44s %8.1f %8.1f %8d" % ("sending a minute's 1,000 samples (live)", memory["send"], max(peaks), len(peaks)))
    if spools:
        peaks = [p for r in spools for p in r["agent_peak_mb"]]
        print("%-44s %8.1f %8.1f %8d" % ("spooling 1,000 samples (server away)", statistics.median(peaks), max(peaks), len(peaks)))
    agent_delivers = [r for r in delivers if r["who"] == "agents" and r["backend"] == "sqlite"] or \
        [r for r in delivers if r["who"] == "agents"]
    if agent_delivers:
        per_run = [max(r["agent_peak_mb"]) for r in agent_delivers]
        peaks = [p for r in agent_delivers for p in r["agent_peak_mb"]]
        memory["catchup"] = statistics.median(per_run)
        print("%-44s %8.1f %8.1f %8d" % ("catching up %d batches (largest agent a run)" % (spools[0]["runs"] // AGENTS),
                                          memory["catchup"], max(peaks), len(per_run)))
    if rsses:
        peaks = rsses[-1]["peak_mb"]
        print("%-44s %8.1f %8.1f %8d" % ("floor: store-samples --version", statistics.median(peaks), max(peaks), len(peaks)))

    print()
    sqlite = [r for r in lives if r["backend"] == "sqlite"]
    if sqlite:
        d = sqlite[0]["delays"]
        goal("SQLite: median delay <= 1 s (%.3f s)" % statistics.median(d), bool(d) and statistics.median(d) <= 1)
        goal("SQLite: p99 delay <= 2 s (%.3f s)" % percentile(d, 0.99), bool(d) and percentile(d, 0.99) <= 2)
    for backend, rate in catchup.items():
        if rate is not None:
            goal("%s: catch-up >= 20,000 samples/s (%.0f)" % (names[backend], rate), rate >= 20000)
    for what, value in memory.items():
        goal("agent memory <= 32 MB, %s (%.1f MB)" % ("sending" if what == "send" else "catching up", value), value <= 32)
    for check in checks:
        print("check FAILED: %s" % check)
    sys.exit(1 if missed or checks else 0)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="step", required=True)
    p = sub.add_parser("receive")
    p.add_argument("--port-file", required=True)
    p.add_argument("--log", required=True)
    for name in ("live", "spool", "deliver"):
        p = sub.add_parser(name)
        p.add_argument("--backend", required=True)
        p.add_argument("--bin", required=True)
        p.add_argument("--agents", required=True, help="the folder of the agents' tokens and spools")
        p.add_argument("--cacert", required=True)
        p.add_argument("--port", type=int, required=True)
        p.add_argument("--work", required=True)
        p.add_argument("--results", required=True)
        p.add_argument("--serve-pid", type=int, default=-1)
        p.add_argument("--clickhouse-pid", type=int)
        p.add_argument("--settle", type=float, default=20)
        if name == "live":
            p.add_argument("--minutes", type=int, required=True)
            p.add_argument("--log", required=True)
            p.add_argument("--path", required=True)
        if name == "spool":
            p.add_argument("--outage", type=int, required=True)
        if name == "deliver":
            p.add_argument("--who", choices=("agents", "curl"), required=True)
            p.add_argument("--notifications", required=True)
            p.add_argument("--batches", type=int, required=True)
    p = sub.add_parser("stored")
    p.add_argument("--results", required=True)
    p.add_argument("--count", type=int, required=True)
    p = sub.add_parser("floor")
    p.add_argument("--backend", required=True)
    p.add_argument("--bin", required=True)
    p.add_argument("--db", required=True)
    p.add_argument("--inputs", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--results", required=True)
    p.add_argument("--clickhouse-pid", type=int)
    p = sub.add_parser("rss")
    p.add_argument("--bin", required=True)
    p.add_argument("--results", required=True)
    p = sub.add_parser("report")
    p.add_argument("--results", required=True)
    p = sub.add_parser("expect")
    p.add_argument("--posts", type=int, required=True)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if args.step == "expect":
        for event in expected_notifications(args.posts):
            print(*event)
        return
    globals()[args.step](args)


if __name__ == "__main__":
    main()
