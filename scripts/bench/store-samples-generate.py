#!/usr/bin/env python3
"""Writes TOTAL sample lines for store-samples' scaling bench, streaming (a line at a time, in
time order, as a fleet of probes would write them), to standard output.

10,000 monitors: "year" is checked once a minute for the 365 days before NOW (525,600 samples);
the other 9,999 (m0001 to m9999) every 15 minutes, going back as far as the rest of TOTAL
reaches, up to NOW. So the last day holds about the same samples at every size (the overview
reads the same), and a bigger store is a longer history. Statuses and latencies come from fixed
formulas: the same TOTAL always gives the same bytes.

usage: store-samples-generate.py TOTAL [NOW_MS]
"""
import sys

total = int(sys.argv[1])
now = int(sys.argv[2]) if len(sys.argv) > 2 else 1769472000000  # 2026-01-27T00:00:00Z
MINUTE, STEP, DAY = 60_000, 900_000, 86_400_000
OTHERS = 9_999
YEAR = 525_600
year_count = min(total, YEAR)
rest = total - year_count
steps = -(-rest // OTHERS)  # 15-minute rounds of the other monitors, the last one maybe partial
first_step = now - steps * STEP
year_start = now - 365 * DAY

import datetime
epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
def minute_text(ms):
    return (epoch + datetime.timedelta(milliseconds=ms)).strftime("%Y-%m-%dT%H:%M:")

out = sys.stdout
write = out.write
names = ["m%04d" % m for m in range(OTHERS + 1)]
written = 0
buffer = []
start = min(year_start, first_step)
for at in range(start, now, MINUTE):
    prefix = minute_text(at)
    if at >= year_start and written < total:
        minute = (at - year_start) // MINUTE
        status = "up" if minute % 97 else "down"
        buffer.append('{"type":"sample","monitor":"year","name":"Year","kind":"https","at":"%s00.000Z","status":"%s","latency_ms":%d.%02d,"message":"m"}\n'
                      % (prefix, status, 20 + minute * 7919 % 1000 // 100, minute * 7919 % 100))
        written += 1
    if at >= first_step and (at - first_step) % STEP == 0:
        step = (at - first_step) // STEP
        for m in range(1, OTHERS + 1):
            if written >= total:
                break
            roll = (m * 7919 + step * 104729) % 100
            ms = m * 6
            seconds, milli = divmod(ms, 1000)
            if roll < 95:
                status, message = "up", "HTTP 200"
            elif roll < 98:
                status, message = "degraded", "High latency"
            elif roll < 99:
                status, message = "down", "HTTP 503, expected 200-399"
            else:
                status, message = "error", "Request timeout after 5s"
            latency = "null" if status == "error" else "%d.%03d" % (20 + (m * 31 + step * 17) % 400, (m * 7 + step) % 1000)
            buffer.append('{"type":"sample","monitor":"%s","name":"Service %d","kind":"https","at":"%s%02d.%03dZ","status":"%s","latency_ms":%s,"message":"%s","tls_expiry_days":%d}\n'
                          % (names[m], m, prefix, seconds, milli, status, latency, message, 90 - step // 96 % 60))
            written += 1
    if len(buffer) >= 20_000:
        write("".join(buffer))
        buffer.clear()
write("".join(buffer))
out.flush()
if written != total:
    sys.exit("store-samples-generate: wrote %d of %d samples" % (written, total))
