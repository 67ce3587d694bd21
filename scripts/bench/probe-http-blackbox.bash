# shellcheck shell=bash
# Sourced by scripts/bench/probe-http --peer blackbox, once its private nginx answers on every
# address of ${addrs[@]} and port of ${ports[@]}; uses $dir, $bin, $n (the largest size), $nginx_pid,
# $blackbox, say and die, and sets $blackbox_pid for the script's cleanup. probe-http beside
# Prometheus' blackbox_exporter, driven as Prometheus drives it; see the script's --help.

sizes=(1000 "$n")
((n > 1000)) || sizes=("$n")
clock_ticks=$(getconf CLK_TCK)

# The same URLs for both sides, round-robin over the 16 destinations, unique paths: a plain list
# for probe-http's HEAD, targets naming GET for its GET, and the list the driver hands blackbox.
for size in "${sizes[@]}"; do
    awk -v n="$size" -v addrs="${addrs[*]}" -v ports="${ports[*]}" 'BEGIN {
        na = split(addrs, a, " "); np = split(ports, p, " ")
        for (i = 0; i < n; i++) printf "http://%s:%s/bench/%d\n", a[i % na + 1], p[int(i / na) % np + 1], i
    }' >"$dir/urls-$size"
    awk '{ printf "{\"url\":\"%s\",\"method\":\"GET\"}\n", $0 }' "$dir/urls-$size" >"$dir/get-$size.ndjson"
done

# blackbox_exporter with a GET module (Prometheus' usual http_2xx) and a HEAD one; a 5 s timeout,
# as probe-http's default.
cat >"$dir/blackbox.yml" <<'YAML'
modules:
  http_2xx:
    prober: http
    timeout: 5s
    http:
      method: GET
  http_head:
    prober: http
    timeout: 5s
    http:
      method: HEAD
YAML
blackbox_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$blackbox" --config.file="$dir/blackbox.yml" --web.listen-address="127.0.0.1:$blackbox_port" --log.level=warn \
    >"$dir/blackbox.log" 2>&1 &
blackbox_pid=$!
deadline=$((SECONDS + 10))
until curl -sf -o /dev/null --max-time 1 "http://127.0.0.1:$blackbox_port/-/healthy"; do
    kill -0 "$blackbox_pid" 2>/dev/null || die "blackbox_exporter ended: $(cat "$dir/blackbox.log")"
    ((SECONDS < deadline)) || die "blackbox_exporter did not answer within 10 s: $(cat "$dir/blackbox.log")"
    sleep 0.05   # poll interval, not a guess at start-up time
done
say "blackbox_exporter $("$blackbox" --version 2>&1 | head -n 1 | awk '{print $3}') on 127.0.0.1:$blackbox_port"

# Prometheus' side: CONCURRENCY requests in flight on kept connections, each GET /probe for the
# next target, with the scrape-timeout header Prometheus sends (10 s, its default). Prints the
# seconds from the first request to the last answer, the driver's own CPU seconds, and how many
# probes succeeded and failed (probe_success 1 or 0).
cat >"$dir/driver.py" <<'PY'
import asyncio, resource, sys, time, urllib.parse
port, module, path, concurrency = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
targets = iter([line.strip() for line in open(path) if line.strip()])
counts = {"ok": 0, "failed": 0}
async def answer(reader):
    head = await reader.readuntil(b"\r\n\r\n")
    fields = {}
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        fields[name.strip().lower()] = value.strip()
    if fields.get(b"transfer-encoding", b"").lower() == b"chunked":
        body = b""
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            chunk = await reader.readexactly(size + 2)
            if size == 0:
                return body
            body += chunk[:-2]
    return await reader.readexactly(int(fields.get(b"content-length", b"0")))
async def worker():
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    for target in targets:
        query = urllib.parse.urlencode({"target": target, "module": module})
        writer.write(("GET /probe?%s HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Prometheus-Scrape-Timeout-Seconds: 10\r\n\r\n" % query).encode())
        body = await answer(reader)
        counts["ok" if b"\nprobe_success 1" in b"\n" + body else "failed"] += 1
    writer.close()
async def main():
    await asyncio.gather(*(worker() for _ in range(concurrency)))
started = time.monotonic()
asyncio.run(main())
elapsed = time.monotonic() - started
usage = resource.getrusage(resource.RUSAGE_SELF)
print("%.3f %.3f %d %d" % (elapsed, usage.ru_utime + usage.ru_stime, counts["ok"], counts["failed"]))
PY

# CPU seconds used so far by the processes PIDS (utime + stime from /proc).
cpu_seconds() {
    local pid fields ticks=0
    for pid in "$@"; do
        read -r -a fields <"/proc/$pid/stat" || continue
        ticks=$((ticks + fields[13] + fields[14]))
    done
    awk -v t="$ticks" -v hz="$clock_ticks" 'BEGIN { printf "%.3f", t / hz }'
}
nginx_pids() { echo "$nginx_pid" $(pgrep -P "$nginx_pid" || true); }
minus() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }

# One run: "seconds prober_cpu nginx_cpu driver_cpu failed" for TOOL (probe-http or blackbox),
# METHOD (HEAD or GET) and SIZE.
one_run() {
    local tool=$1 method=$2 size=$3 nginx_before prober_before out up
    nginx_before=$(cpu_seconds $(nginx_pids))
    if [[ $tool == blackbox ]]; then
        prober_before=$(cpu_seconds "$blackbox_pid")
        out=$(python3 "$dir/driver.py" "$blackbox_port" "$([[ $method == HEAD ]] && echo http_head || echo http_2xx)" \
            "$dir/urls-$size" 64)
        read -r seconds driver ok failed <<<"$out"
        ((ok + failed == size)) || die "the driver got $ok + $failed answers of $size"
        echo "$seconds $(minus "$(cpu_seconds "$blackbox_pid")" "$prober_before") $(minus "$(cpu_seconds $(nginx_pids))" "$nginx_before") $driver $failed"
    else
        local input="$dir/urls-$size"
        [[ $method == GET ]] && input="$dir/get-$size.ndjson"
        /usr/bin/time -o "$dir/run.time" -f '%e %U %S' "$bin" -c 64 --summary <"$input" >"$dir/run.out" 2>"$dir/run.err" ||
            die "probe-http failed: $(tail -n 3 "$dir/run.err")"
        up=$(grep -c '"type":"sample".*"status":"up"' "$dir/run.out" || true)
        if [[ $method == GET ]] && ! grep -q '"method":"GET"' "$dir/run.out"; then die "probe-http did not probe with GET"; fi
        read -r seconds user system <"$dir/run.time"
        echo "$seconds $(awk -v u="$user" -v s="$system" 'BEGIN { printf "%.3f", u + s }') $(minus "$(cpu_seconds $(nginx_pids))" "$nginx_before") 0 $((size - up))"
    fi
}

# Three runs of each, in turn; the median of each column (failures: their sum over the three).
results="$dir/results"
: >"$results"
for size in "${sizes[@]}"; do
    for method in HEAD GET; do
        for round in 1 2 3; do
            for tool in probe-http blackbox; do
                say "$tool, $method, $size targets, run $round of 3"
                line=$(one_run "$tool" "$method" "$size") || exit 2   # one_run's die ends only its subshell
                echo "$size $method $tool $line" >>"$results"
            done
        done
    done
done

echo "probe-http:       $("$bin" --version)"
echo "blackbox_exporter: $("$blackbox" --version 2>&1 | head -n 1)"
echo "nginx:            $("$nginx" -v 2>&1)"
echo "nproc:            $(nproc); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
awk -v largest="$n" '
    function median(list,   k, v, i, j, t) {
        k = split(list, v, " ")
        for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
        return v[int((k + 1) / 2)]
    }
    {
        key = $1 " " $2 " " $3; if (!(key in seen)) { seen[key] = 1; order[++keys] = key }
        rate[key] = rate[key] " " $1 / $4
        prober[key] = prober[key] " " $5 * 1e6 / $1
        web[key] = web[key] " " $6 * 1e6 / $1
        driver[key] = driver[key] " " $7 * 1e6 / $1
        failed[key] += $8
    }
    END {
        printf "%7s %6s %-10s %10s %16s %15s %16s %15s\n", "targets", "method", "tool", "probes/s", "prober µs/probe", "nginx µs/probe",
            "driver µs/probe", "false timeouts"
        for (i = 1; i <= keys; i++) {
            key = order[i]; split(key, f, " ")
            r[key] = median(rate[key]); c[key] = median(prober[key])
            printf "%7d %6s %-10s %10.0f %16.1f %15.1f %16s %15d\n", f[1], f[2], f[3], r[key], c[key], median(web[key]),
                (f[3] == "blackbox" ? sprintf("%.1f", median(driver[key])) : "-"), failed[key]
        }
        print "(medians of three runs; false timeouts summed over the three: probes that failed although nginx answers at once;"
        print " the driver is the python3 client standing in for Prometheus; probe-http has none)"
        ok = 1
        print ""
        for (m = 1; m <= 2; m++) {
            method = m == 1 ? "HEAD" : "GET"
            ours = largest " " method " probe-http"; theirs = largest " " method " blackbox"
            speed = r[ours] / r[theirs]; cpu = c[ours] / c[theirs]
            printf "goal: %s at %d targets, probes/s >= 4x blackbox      %-6s (%.1fx)\n", method, largest, (speed >= 4 ? "met" : "MISSED"), speed
            printf "goal: %s at %d targets, CPU a probe <= 1/5 of blackbox %-6s (%.2f of it)\n", method, largest, (cpu <= 0.2 ? "met" : "MISSED"), cpu
            printf "goal: %s at %d targets, no false timeout            %-6s (%d)\n", method, largest, (failed[ours] == 0 ? "met" : "MISSED"), failed[ours]
            if (speed < 4 || cpu > 0.2 || failed[ours] != 0) ok = 0
        }
        exit ok ? 0 : 1
    }' "$results"
