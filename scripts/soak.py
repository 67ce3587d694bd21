#!/usr/bin/env python3
"""The parts of scripts/soak written in Python (scripts/soak sets up the stack, runs the faults
and calls these).

  fixture  the agents' targets: a local HTTP server whose answers flip on a schedule
  sample   every few seconds, the resident memory and open descriptors of every long-lived
           process of the served stacks, and the sizes of their state files
  report   the checks and the table; exits 1 when a check fails or a goal is missed
"""

import argparse
import http.server
import json
import os
import random
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import proctable  # noqa: E402


# --- The targets -------------------------------------------------------------------------
# /ok answers 200, /fail 503, /jitter 200 after 0 to 40 ms; /flip/PHASE answers 503 for the
# first half of every --period seconds, shifted by PHASE (0 to 1) of a period, 200 otherwise.
def fixture(args):
    started = time.time()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def answer(self, body):
            code = 200
            path = self.path.split("?")[0]
            if path == "/fail":
                code = 503
            elif path == "/jitter":
                time.sleep(random.random() * 0.04)
            elif path.startswith("/flip/"):
                phase = float(path[len("/flip/"):] or 0)
                position = ((time.time() - started) / args.period + phase) % 1
                code = 503 if position < 0.5 else 200
            elif path != "/ok":
                code = 404
            payload = b"soak fixture\n"
            self.send_response(code)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if body:
                self.wfile.write(payload)

        def do_GET(self):
            self.answer(True)

        def do_HEAD(self):
            self.answer(False)

        def log_message(self, *_):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(args.port_file + ".tmp", args.port_file)
    server.serve_forever()


# --- Sampling ----------------------------------------------------------------------------
def processes():
    """{pid: (ppid, command, starttime)} of every process now."""
    return {pid: (int(fields[1]), command.strip(), int(fields[19])) for pid, (fields, command) in proctable.read().items()}


def role(command):
    """What a process of a served stack is, or None for the short-lived (scripts/serve's own
    bash, sleeps, setpriv before it execs)."""
    if command.startswith("nginx: master"):
        return "nginx master"
    if command.startswith("nginx: worker"):
        return "nginx workers"
    words = command.split()
    if not words:
        return None
    tool = os.path.basename(words[0])
    if tool == "store-samples" and "serve" in words:
        return "api responder"
    if tool == "notify" and "serve" in words:
        return "devices responder"
    if tool == "store-samples" and "follow" in words:
        return "follow"
    if tool == "detect-anomaly":
        return "detect-anomaly"
    if tool == "notify":
        return "notify"
    return None


def status_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def size(path):
    if os.path.isdir(path):
        total = 0
        for folder, _, files in os.walk(path):
            for name in files:
                try:
                    total += os.path.getsize(os.path.join(folder, name))
                except OSError:
                    pass
        return total
    try:
        return os.path.getsize(path)
    except OSError:
        return None


def sample(args):
    """One JSON line each --interval: the time, and per (backend, role) the processes' pids,
    summed resident KiB and open descriptors; the state files' sizes. Every pid seen, with its
    start time, goes to --pids (for the check that none is left behind)."""
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    serves = dict(item.split("=", 1) for item in args.serve)
    files = [item.split("=", 1) for item in args.file]
    seen = set()
    out = open(args.out, "a")
    pids_out = open(args.pids, "a")
    while not stopping:
        t = time.time()
        procs = processes()
        roots = {int(pid): backend for backend, pid in serves.items()}
        try:
            with open(args.clickhouse_pid_file) as f:
                clickhouse = int(f.read().strip() or 0)
        except (OSError, ValueError):
            clickhouse = 0
        parts = {}
        for pid, (_, command, start) in procs.items():
            backend, ancestor = None, pid
            for _ in range(64):
                ancestor = procs.get(ancestor, (0,))[0]
                if ancestor in roots:
                    backend = roots[ancestor]
                    break
                if ancestor <= 1:
                    break
            what = role(command) if backend else None
            if pid == clickhouse:
                backend, what = "clickhouse", "clickhouse-server"
            if not what:
                continue
            try:
                rss = status_kb(pid)
                fds = len(os.listdir("/proc/%d/fd" % pid))
            except OSError:
                continue
            if (pid, start) not in seen:
                seen.add((pid, start))
                pids_out.write("%d %d %s\n" % (pid, start, command))
                pids_out.flush()
            entry = parts.setdefault("%s/%s" % (backend, what), {"pids": [], "rss_kb": 0, "fds": 0})
            entry["pids"].append(pid)
            entry["rss_kb"] += rss
            entry["fds"] += fds
        out.write(json.dumps({"t": t, "procs": parts, "files": {label: size(path) for label, path in files}}) + "\n")
        out.flush()
        while not stopping and time.time() < t + args.interval:
            time.sleep(0.2)


# --- The report --------------------------------------------------------------------------
def read_lines(path):
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        yield json.loads(line)
                    except ValueError:
                        pass
    except FileNotFoundError:
        return


def sample_keys(path):
    keys = []
    for record in read_lines(path):
        if record.get("type") == "sample":
            keys.append((record.get("monitor"), record.get("agent"), record.get("at")))
    return keys


def notification_key(record):
    """A notification by what it decides: its event, its monitor (or its key and monitors when
    grouped, or its place) and the time of the sample that decided it."""
    who = record.get("monitor") or record.get("place") or "%s %s" % (
        record.get("key"), ",".join(sorted(m if isinstance(m, str) else m.get("monitor", "?")
                                           for m in record.get("monitors") or [])))
    return (record.get("event"), who, record.get("at"))


def series(values):
    return {"first": values[0], "last": values[-1], "max": max(values)}


def report(args):
    problems, missed = [], []
    names = {"sqlite": "SQLite", "clickhouse": "ClickHouse"}
    backends = args.backends.split(",")
    work = args.work

    print()
    print("Faults (seconds from the start)")
    for fault in read_lines(os.path.join(work, "faults.ndjson")):
        ok = fault.get("ok", True)
        print("  %6.0f  %-30s %s%s" % (fault["t"], fault["fault"], fault.get("outcome", ""), "" if ok else "  FAILED"))
        if not ok:
            problems.append("fault %s: %s" % (fault["fault"], fault.get("outcome")))

    print()
    print("Samples: every sample the agents produced is stored exactly once, by (monitor, agent, at)")
    print("%-11s %9s %9s %9s %8s %8s %11s" % ("backend", "produced", "stored", "distinct", "missing", "extra", "duplicates"))
    for backend in backends:
        produced = []
        for name in sorted(os.listdir(work)):
            if name.startswith("produced-%s-" % backend):
                produced += sample_keys(os.path.join(work, name))
        stored = sample_keys(os.path.join(work, "export-%s.ndjson" % backend))
        p, s = set(produced), set(stored)
        missing, extra, duplicates = len(p - s), len(s - p), len(stored) - len(s)
        print("%-11s %9d %9d %9d %8d %8d %11d" % (names[backend], len(produced), len(stored), len(s), missing, extra, duplicates))
        if not produced:
            problems.append("%s: the agents produced no sample" % names[backend])
        if missing or extra or duplicates or len(produced) != len(p):
            problems.append("%s: %d missing, %d extra, %d stored twice, %d produced twice" % (
                names[backend], missing, extra, duplicates, len(produced) - len(p)))
    runs = list(read_lines(os.path.join(work, "agent-runs.ndjson")))
    statuses = {}
    for run in runs:
        statuses[str(run["status"])] = statuses.get(str(run["status"]), 0) + 1
    print("  agent runs: %d; exit statuses %s (0 delivered, 75 spooled for later)" % (
        len(runs), ", ".join("%s: %d" % kv for kv in sorted(statuses.items()))))
    for run in runs:
        if run["status"] not in (0, 75):
            problems.append("an agent run of %s ended with %s" % (run["agent"], run["status"]))
            break
    flushes = list(read_lines(os.path.join(work, "flush.ndjson")))
    for flush in flushes:
        if flush["status"] != 0:
            problems.append("the final delivery of %s's spool ended with %s" % (flush["agent"], flush["status"]))

    print()
    print("The follower's input: what store-samples follow passed on (teed by scripts/serve --follow-copy)")
    print("against what is stored, by (monitor, agent, at); again: passed on more than once (a follower")
    print("restarted from its cursor), which notify skips as already seen")
    print("%-11s %9s %9s %9s %8s %8s %8s %6s" % ("backend", "stored", "followed", "distinct", "missing", "extra", "again", "ticks"))
    for backend in backends:
        stored = set(sample_keys(os.path.join(work, "export-%s.ndjson" % backend)))
        stream = list(read_lines(os.path.join(work, "state-" + backend, "follow-copy.ndjson")))
        followed = [(r.get("monitor"), r.get("agent"), r.get("at")) for r in stream if r.get("type") == "sample"]
        ticks = sum(1 for r in stream if r.get("type") == "tick")
        f = set(followed)
        print("%-11s %9d %9d %9d %8d %8d %8d %6d" % (names[backend], len(stored), len(followed), len(f), len(stored - f),
                                                     len(f - stored), len(followed) - len(f), ticks))
        if not followed or stored - f or f - stored:
            problems.append("%s: the follower passed on %d of %d stored samples, and %d not stored" % (
                names[backend], len(stored & f), len(stored), len(f - stored)))

    def received(backend):
        got = []
        for entry in read_lines(os.path.join(work, "received.ndjson")):
            if entry.get("path") == "/hook/" + backend:
                try:
                    got.append(json.loads(entry["body"]))
                except ValueError:
                    got.append({"event": "unreadable"})
        return got

    def compare(got, want):
        """Compared by id: the same decision has the same id in every run (vitals-records(7))."""
        by_id = {r.get("id"): r for r in want}
        got_ids = [r.get("id") for r in got]
        g, w = set(got_ids), set(by_id)
        by_id.update({r.get("id"): r for r in got if r.get("id") not in by_id})
        return g, w, by_id, len(got_ids) - len(g)

    def listed(backend, what, ids, by_id, limit=8):
        for i in sorted(ids, key=lambda i: notification_key(by_id[i]))[:limit]:
            print("  %s %s: %s %s %s at %s" % ((names[backend], what, i) + notification_key(by_id[i])))
        if len(ids) > limit:
            print("  %s %s: %d more" % (names[backend], what, len(ids) - limit))

    print()
    print("Notifications: what the webhook received against a replay of the follower's input (detect-anomaly |")
    print("notify --dry-run, fresh state), by id (the same decision, the same id)")
    print("%-11s %9s %9s %9s %8s %11s %11s" % ("backend", "received", "expected", "matched", "missing", "unexpected", "delivered 2x"))
    for backend in backends:
        got = received(backend)
        want = [r for r in read_lines(os.path.join(work, "replay-stream-%s.ndjson" % backend)) if r.get("type") == "notification"]
        g, w, by_id, twice = compare(got, want)
        print("%-11s %9d %9d %9d %8d %11d %11d" % (names[backend], len(got), len(want), len(g & w), len(w - g), len(g - w), twice))
        events = {}
        for r in want:
            events[r.get("event")] = events.get(r.get("event"), 0) + 1
        print("  %s expected: %s" % (names[backend], ", ".join("%s %d" % kv for kv in sorted(events.items())) or "none"))
        listed(backend, "missing", w - g, by_id)
        listed(backend, "unexpected", g - w, by_id)
        seen = set()
        for r in got:
            if r.get("id") in seen:
                print("  %s delivered twice: %s (%s %s at %s)" % ((names[backend], r.get("id")) + notification_key(r)))
            seen.add(r.get("id"))
        if not want:
            problems.append("%s: the replay decides no notification (the flipping targets were not seen)" % names[backend])
        if w - g or g - w or len(want) != len(w) or twice:
            problems.append("%s: notifications differ from the replay (%d missing, %d unexpected, %d delivered twice)" % (
                names[backend], len(w - g), len(g - w), twice))

    print()
    print("For comparison, not a check: the store replayed afresh (store-samples follow --from start --once,")
    print("no ticks). It reads in stored order, the follower in the order batches arrived: a ClickHouse batch")
    print("whose insert was slow shows after later ones (store-samples(1), follow); and silence decided on")
    print("the follower's ticks is not in it")
    print("%-11s %9s %9s %8s %11s" % ("backend", "received", "replayed", "matched", "different"))
    for backend in backends:
        got = received(backend)
        want = [r for r in read_lines(os.path.join(work, "replay-%s.ndjson" % backend)) if r.get("type") == "notification"]
        g, w, by_id, _ = compare(got, want)
        print("%-11s %9d %9d %8d %11d" % (names[backend], len(got), len(want), len(g & w), len(g ^ w)))
        listed(backend, "only received", g - w, by_id, 4)
        listed(backend, "only replayed", w - g, by_id, 4)

    ticks = list(read_lines(os.path.join(work, "samples.ndjson")))
    print()
    if ticks:
        t0 = ticks[0]["t"]
        warm = [x for x in ticks if x["t"] - t0 >= args.warmup] or ticks[-1:]
        print("Resident memory (MB) and open descriptors of the long-lived processes, every %.0f s over %.0f s;" % (
            args.interval, ticks[-1]["t"] - t0))
        print("warm: the first sample %.0f s (the warm-up) after the start, or after the last restart when later;" % args.warmup)
        print("growth: last against warm (goal <= 10%)")
        print("%-32s %6s %6s %6s %6s %7s   %5s %5s %5s %5s %7s %8s" % (
            "process", "first", "warm", "last", "max", "growth", "fds", "warm", "last", "max", "growth", "restarts"))
        parts = sorted({p for x in ticks for p in x["procs"]})
        judged_apart = []
        for part in parts:
            have = [x for x in ticks if part in x["procs"]]
            # Warm: the first sample a warm-up after the start, or after the role's last restart
            # (new pids) when that came later: a process started afresh warms up again.
            restarted = t0
            starts = [0]
            for index, (before, now) in enumerate(zip(have, have[1:])):
                if set(now["procs"][part]["pids"]) - set(before["procs"][part]["pids"]):
                    restarted = now["t"]
                    starts.append(index + 1)
            after = [x for x in have if x["t"] - max(t0, restarted) >= args.warmup]
            if not after:
                # Restarted by the faults more often than a warm-up lasts (the responders, nginx's
                # workers, ClickHouse): judged over the longest stretch between restarts instead,
                # warm a shorter while (a fifth of the warm-up, at least 60 s) after it began.
                stretches = [have[a:b] for a, b in zip(starts, starts[1:] + [len(have)])]
                stretch = max(stretches, key=lambda run: run[-1]["t"] - run[0]["t"])
                short = max(60, args.warmup / 5)
                after = [x for x in stretch if x["t"] - stretch[0]["t"] >= short]
                if stretch[-1]["t"] - stretch[0]["t"] < 2 * short or not after:
                    print("%-32s restarted %.0f s before the end, and never ran %.0f s: not judged" % (
                        part, ticks[-1]["t"] - restarted, 2 * short))
                    continue
                judged_apart.append("%s: %.0f s from %.0f s after the start" % (
                    part, stretch[-1]["t"] - stretch[0]["t"], stretch[0]["t"] - t0))
                have = stretch
            rss = [x["procs"][part]["rss_kb"] / 1024 for x in have]
            fds = [x["procs"][part]["fds"] for x in have]
            w_rss = after[0]["procs"][part]["rss_kb"] / 1024
            w_fds = after[0]["procs"][part]["fds"]
            pid_sets = []
            for x in have:
                pids = tuple(sorted(x["procs"][part]["pids"]))
                if not pid_sets or pid_sets[-1] != pids:
                    pid_sets.append(pids)
            g_rss = rss[-1] / w_rss - 1 if w_rss else 0
            g_fds = fds[-1] / w_fds - 1 if w_fds else 0
            print("%-32s %6.1f %6.1f %6.1f %6.1f %6.0f%%   %5d %5d %5d %5d %6.0f%% %8d" % (
                part, rss[0], w_rss, rss[-1], max(rss), g_rss * 100, fds[0], w_fds, fds[-1], max(fds),
                g_fds * 100, len(pid_sets) - 1))
            if g_rss > 0.10:
                missed.append("%s: resident memory grew %.0f%% after warm-up (%.1f to %.1f MB)" % (part, g_rss * 100, w_rss, rss[-1]))
            if fds[-1] > w_fds + 2 and g_fds > 0.10:
                missed.append("%s: open descriptors grew from %d to %d after warm-up" % (part, w_fds, fds[-1]))
        print("  restarts: how often the set of pids changed (the faults' kill -9s, ClickHouse's restart, the reload's new workers)")
        if judged_apart:
            print("  restarted within a warm-up of the end, so judged over their longest stretch between restarts")
            print("  (first, warm and last of that stretch; warm %.0f s after it began):" % max(60, args.warmup / 5))
            for line in judged_apart:
                print("    " + line)
        print()
        print("State files (bytes): first seen, after warm-up, last, max")
        labels = sorted({label for x in ticks for label in x["files"]})
        for label in labels:
            values = [x["files"][label] for x in ticks if x["files"].get(label) is not None]
            after = [x["files"][label] for x in warm if x["files"].get(label) is not None]
            if not values:
                print("  %-34s never written" % label)
                continue
            w_value = after[0] if after else values[-1]
            print("  %-34s %9d %9d %9d %9d" % (label, values[0], w_value, values[-1], max(values)))
            if "spool" in label:
                if values[-1] > 0:
                    problems.append("%s holds %d bytes at the end (not delivered)" % (label, values[-1]))
            elif "clickhouse follow cursor" in label and ticks[-1]["t"] - t0 < 2 * 330:
                # On ClickHouse the cursor keeps the batches of the last 5 minutes (store-samples(1),
                # FOLLOW): it grows for 5 minutes, and a run this short shows no plateau.
                print("  %-34s (keeps 5 minutes of batches: bounded, not judged in a run this short)" % "")
            elif values[-1] > max(w_value * 1.1, w_value + 4096):
                missed.append("%s grew from %d to %d bytes after warm-up" % (label, w_value, values[-1]))

        print("  at the end, the stacks stopped: %s" % ", ".join(
            "%s %s %s" % (backend, name, size(os.path.join(work, "state-" + backend, name)))
            for backend in backends for name in ("notify.json", "follow.cursor", "follow-anomaly.json")))

    print()
    digests = list(read_lines(os.path.join(work, "digests.ndjson")))
    failed = [d for d in digests if d["status"] != 0 or not d["lines"]]
    print("Digests over store-samples export: %d runs, %d failed" % (len(digests), len(failed)))
    if not digests or failed:
        problems.append("digest: %d runs, %d failed" % (len(digests), len(failed)))

    left = []
    try:
        with open(os.path.join(work, "left.txt")) as f:
            left = [line.strip() for line in f if line.strip()]
    except FileNotFoundError:
        left = ["(not checked)"]
    print("Processes left behind: %s" % ("none" if not left else "; ".join(left)))
    if left:
        problems.append("processes left behind: %s" % "; ".join(left))

    print()
    advisory = " (a run under 10 minutes: not failing)" if args.goals_advisory else ""
    for text in missed:
        print("goal MISSED%s: %s" % (advisory, text))
    if not missed:
        print("goal met: memory, descriptors and state files flat after warm-up (growth <= 10%)")
    for text in problems:
        print("check FAILED: %s" % text)
    if not problems:
        print("checks passed: every sample stored once, the notifications the rules give, no process left behind")
    sys.exit(1 if problems or (missed and not args.goals_advisory) else 0)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="step", required=True)
    p = sub.add_parser("fixture")
    p.add_argument("--port-file", required=True)
    p.add_argument("--period", type=float, default=40)
    p = sub.add_parser("sample")
    p.add_argument("--out", required=True)
    p.add_argument("--pids", required=True)
    p.add_argument("--interval", type=float, default=3)
    p.add_argument("--serve", action="append", default=[], help="BACKEND=PID of a scripts/serve")
    p.add_argument("--clickhouse-pid-file", default="")
    p.add_argument("--file", action="append", default=[], help="LABEL=PATH of a state file or folder")
    p = sub.add_parser("report")
    p.add_argument("--work", required=True)
    p.add_argument("--backends", required=True)
    p.add_argument("--warmup", type=float, required=True)
    p.add_argument("--interval", type=float, default=3)
    p.add_argument("--goals-advisory", action="store_true", help="print a missed goal, fail nothing for it")
    args = parser.parse_args()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    globals()[args.step](args)


if __name__ == "__main__":
    main()
