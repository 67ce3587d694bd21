# The scaling table of scripts/bench/store-samples --scale (sourced by it: $store, $work,
# $sizes, measure, median_of, start_clickhouse, free_port and verdict come from there).
# Sets scale_status: 0 when every goal judged was met, 1 when one was missed.

now_ms=1769472000000 now=2026-01-27T00:00:00Z   # the generator's NOW
day_since=2026-01-26T00:00:00Z
generate=$(dirname "$0")/store-samples-generate.py

# The servers: one, and a pair of shards (the same <remote_servers> in both configs).
start_clickhouse single "$(free_port)" "$(free_port)"
single_http=$ch_http single_tcp=$ch_tcp
shard_ports=("$(free_port)" "$(free_port)" "$(free_port)" "$(free_port)")
cluster_xml="<remote_servers><vitals_pair>
  <shard><replica><host>127.0.0.1</host><port>${shard_ports[1]}</port></replica></shard>
  <shard><replica><host>127.0.0.1</host><port>${shard_ports[3]}</port></replica></shard>
</vitals_pair></remote_servers>"
start_clickhouse shard1 "${shard_ports[0]}" "${shard_ports[1]}" "$cluster_xml"
start_clickhouse shard2 "${shard_ports[2]}" "${shard_ports[3]}" "$cluster_xml"
single_pid=${clickhouse_pids[0]}

# Each backend: its --db, the servers holding its tables (tcp ports), and how to empty it.
IFS=, read -r -a backend_names <<<"$backends"
declare -A backend_label=([sqlite]="SQLite" [clickhouse]="ClickHouse, one server" [cluster]="ClickHouse, two shards")
backend_db() {
    case $1 in
        sqlite) echo "$work/scale.db" ;;
        clickhouse) echo "clickhouse://127.0.0.1:$single_http/vitals" ;;
        cluster) echo "clickhouse://127.0.0.1:${shard_ports[0]}/vitals?cluster=vitals_pair&shards=127.0.0.1:${shard_ports[0]},127.0.0.1:${shard_ports[2]}" ;;
    esac
}
backend_tcp() {
    case $1 in
        clickhouse) echo "$single_tcp" ;;
        cluster) echo "${shard_ports[1]} ${shard_ports[3]}" ;;
    esac
}
drop_backend() {
    local port
    case $1 in
        sqlite) rm -f "$work/scale.db" "$work/scale.db-wal" "$work/scale.db-shm" "$work/scale.db.tokens" ;;
        *) for port in $(backend_tcp "$1"); do clickhouse-client --port "$port" --query 'DROP DATABASE IF EXISTS vitals'; done ;;
    esac
}
# Bytes the store takes on disk: the SQLite file after a checkpoint, or every active part of
# the store's database on its servers, once their merges are done (two minutes at most).
disk_bytes() {
    local port total=0 bytes i
    case $1 in
        sqlite)
            sqlite3 "$work/scale.db" 'PRAGMA wal_checkpoint(TRUNCATE)' >/dev/null
            stat -c %s "$work/scale.db" ;;
        *)
            for port in $(backend_tcp "$1"); do
                for ((i = 0; i < 120; i++)); do
                    [[ $(clickhouse-client --port "$port" --query "SELECT count() FROM system.merges WHERE database = 'vitals'") == 0 ]] && break
                    sleep 1
                done
                bytes=$(clickhouse-client --port "$port" --query "SELECT sum(bytes_on_disk) FROM system.parts WHERE active AND database = 'vitals'")
                total=$((total + bytes))
            done
            echo "$total" ;;
    esac
}
# A query's median wall time (ms) of three runs, and the median of its peak memory (KB).
query_figures() {  # query_figures NAME COMMAND...: sets q_ms[NAME] and q_kb[NAME]
    local name=$1 i; shift
    q_ms[$name]=$(median_of 3 "$@")
    for ((i = 0; i < 3; i++)); do measure "$work/q.time" "$@" >/dev/null; awk '{print $4}' "$work/q.time"; done | sort -n >"$work/q.kb"
    q_kb[$name]=$(sed -n 2p "$work/q.kb")
}
# What the generator wrote into the day before NOW (its own arithmetic, apart from the stores).
day_expected() {
    python3 - "$1" <<'PY'
import sys
total = int(sys.argv[1]); year = min(total, 525600); rest = total - year
steps = -(-rest // 9999)
# The year monitor: its last 1,440 minutes, when it reaches them.
count = max(0, year - (525600 - 1440))
# The others: the rounds of the last 96 (the last one, at NOW - 15 min, maybe partial).
for step in range(max(0, steps - 96), steps):
    count += min(9999, rest - step * 9999)
print(count)
PY
}

declare -A fig
declare -A q_ms q_kb
scale_status=0
scale_start=$(date +%s)
IFS=, read -r -a size_list <<<"$sizes"
for millions in "${size_list[@]}"; do
    size=$((millions * 1000000))
    echo "bench: generating $size samples for 10,000 monitors" >&2
    python3 "$generate" "$size" "$now_ms" >"$work/scale.ndjson"
    file_bytes=$(stat -c %s "$work/scale.ndjson")
    expected_day=$(day_expected "$size")
    for backend in "${backend_names[@]}"; do
        db=$(backend_db "$backend")
        drop_backend "$backend"
        echo "bench: $size samples into ${backend_label[$backend]}" >&2
        measure "$work/ingest.time" "$store" --db "$db" --quiet --keep 0 "$work/scale.ndjson"
        read -r seconds _ _ ingest_kb <"$work/ingest.time"
        # Checked before anything is timed: every sample stored once, and the answers whole.
        case $backend in
            sqlite) stored=$(sqlite3 "$work/scale.db" 'SELECT count(*) FROM samples') ;;
            *) stored=$(clickhouse-client --port "$(backend_tcp "$backend" | cut -d' ' -f1)" --query 'SELECT count() FROM vitals.samples') ;;
        esac
        [[ $stored == "$size" ]] || { echo "bench: ${backend_label[$backend]} holds $stored of $size samples" >&2; exit 1; }
        bytes=$(disk_bytes "$backend")
        overview_monitors=$("$store" --db "$db" --now "$now" overview | python3 -c 'import json,sys; print(json.load(sys.stdin)["total_monitors"])')
        buckets=$("$store" --db "$db" --now "$now" history year --since 8760h --ndjson | wc -l)
        items=$("$store" --db "$db" --now "$now" results year --since 8760h --page 1000 | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))')
        day_lines=$("$store" --db "$db" export --since "$day_since" --until "$now" | wc -l)
        ((overview_monitors == 10000)) || { echo "bench: the overview counts $overview_monitors monitors, not 10,000" >&2; exit 1; }
        # A year from 2025-01-27T00:00Z, one a minute: 35,040 full 15-minute buckets; page 1,000 of 21,024 is full.
        ((buckets == 35040)) || { echo "bench: history gave $buckets buckets, not 35,040" >&2; exit 1; }
        ((items == 25)) || { echo "bench: results page 1000 has $items items, not 25" >&2; exit 1; }
        ((day_lines == expected_day)) || { echo "bench: the day's export has $day_lines samples, not $expected_day" >&2; exit 1; }
        # Every backend answers the same bytes as the first of the run (SQLite, unless --backends leaves it out).
        for view in "overview" "history year --since 8760h" "results year --since 8760h --page 1000" "metrics"; do
            # shellcheck disable=SC2086
            "$store" --db "$db" --now "$now" $view >"$work/answer-$backend"
            if [[ $backend == "${backend_names[0]}" ]]; then
                cp "$work/answer-$backend" "$work/reference-${view%% *}"
            elif ! cmp -s "$work/answer-$backend" "$work/reference-${view%% *}"; then
                echo "bench: ${backend_label[$backend]} answers '$view' otherwise than SQLite" >&2; exit 1
            fi
        done
        query_figures overview "$store" --db "$db" --now "$now" overview
        query_figures history "$store" --db "$db" --now "$now" history year --since 8760h
        query_figures results "$store" --db "$db" --now "$now" results year --since 8760h --page 1000
        query_figures export "$store" --db "$db" export --since "$day_since" --until "$now"
        # A scrape after the first (on SQLite the first one counts every sample into check_counts).
        query_figures metrics "$store" --db "$db" metrics
        key="$millions $backend"
        fig[$key]="$seconds $ingest_kb $bytes ${q_ms[overview]} ${q_kb[overview]} ${q_ms[history]} ${q_kb[history]} ${q_ms[results]} ${q_kb[results]} ${q_ms[export]} ${q_kb[export]} ${q_ms[metrics]} ${q_kb[metrics]}"
        echo "bench: $key: $(printf '%s ' ${fig[$key]})" >&2
        drop_backend "$backend"
    done
    rm -f "$work/scale.ndjson"
done
scale_seconds=$(( $(date +%s) - scale_start ))

# --- The table --------------------------------------------------------------------------------
echo "store-samples: $("$store" --version)"
echo "clickhouse-server: $(clickhouse-client --port "$single_tcp" --query 'SELECT version()'), sqlite3: $(sqlite3 --version | cut -d' ' -f1), nproc: $(nproc)"
echo "10,000 monitors; ingest once per size, each query the median of three runs (ms, and peak MB of store-samples)"
echo
printf '%-8s %-24s %10s %8s %8s %10s %10s %10s %10s %10s\n' "samples" "backend" "ingest/s" "MB" "B/sample" "overview" "history" "results" "day export" "metrics"
for millions in "${size_list[@]}"; do
    for backend in "${backend_names[@]}"; do
        read -r seconds ingest_kb bytes o_ms o_kb h_ms h_kb r_ms r_kb e_ms e_kb m_ms m_kb <<<"${fig[$millions $backend]}"
        size=$((millions * 1000000))
        printf '%-8s %-24s %10.0f %8.1f %8.1f %5d %4.0f %5d %4.0f %5d %4.0f %5d %4.0f %5d %4.0f\n' "${millions}M" "${backend_label[$backend]}" \
            "$(echo "$size / $seconds" | bc -l)" "$(echo "$ingest_kb / 1000" | bc -l)" "$(echo "$bytes / $size" | bc -l)" \
            "$o_ms" "$(echo "$o_kb / 1000" | bc -l)" "$h_ms" "$(echo "$h_kb / 1000" | bc -l)" \
            "$r_ms" "$(echo "$r_kb / 1000" | bc -l)" "$e_ms" "$(echo "$e_kb / 1000" | bc -l)" "$m_ms" "$(echo "$m_kb / 1000" | bc -l)"
    done
done
echo "(MB after ingest/s is the ingest's peak memory; each query column is ms then peak MB)"
for pid in "${clickhouse_pids[@]}"; do
    printf 'clickhouse-server %s: peak memory %.0f MB over the run\n' "$pid" "$(awk '/VmHWM/ {print $2 / 1000}' "/proc/$pid/status")"
done
echo "wall time of the scaling run: ${scale_seconds} s"
echo

if [[ ! ,$sizes, =~ ,50, ]]; then
    echo "goals are judged at 50M samples (--sizes without 50: not judged)"
else
    for backend in clickhouse cluster; do
        [[ -n ${fig[50 $backend]:-} ]] || { echo "goal at 50M: ${backend_label[$backend]}: not run (--backends)"; scale_status=1; continue; }
        read -r _ _ bytes o_ms _ h_ms _ <<<"${fig[50 $backend]}"
        per_sample=$(echo "$bytes / 50000000" | bc -l)
        overview_ok=$(( o_ms <= 200 )); bytes_ok=$(echo "$per_sample <= 40" | bc)
        printf 'goal at 50M: %-24s overview of 10,000 <= 200 ms  %-8s (%d ms)\n' "${backend_label[$backend]}" "$(verdict "$overview_ok")" "$o_ms"
        printf 'goal at 50M: %-24s <= 40 bytes per sample        %-8s (%.1f)\n' "${backend_label[$backend]}" "$(verdict "$bytes_ok")" "$per_sample"
        [[ $overview_ok$bytes_ok == 11 ]] || scale_status=1
    done
    for backend in sqlite clickhouse cluster; do
        [[ -n ${fig[50 $backend]:-} ]] || { echo "goal at 50M: ${backend_label[$backend]}: not run (--backends)"; scale_status=1; continue; }
        read -r _ _ _ _ _ h_ms _ <<<"${fig[50 $backend]}"
        history_ok=$(( h_ms <= 150 ))
        printf 'goal at 50M: %-24s year history <= 150 ms        %-8s (%d ms)\n' "${backend_label[$backend]}" "$(verdict "$history_ok")" "$h_ms"
        ((history_ok)) || scale_status=1
    done
fi
((scale_status == 0)) || echo "bench: a goal was missed" >&2
