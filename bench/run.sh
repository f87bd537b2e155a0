#!/usr/bin/env bash
# Side by side, in one run on one machine: the raw ceiling of a PostgreSQL for the naive
# one-row-per-message queue (pgbench, multi-row INSERT of B rows per transaction into a
# table with one index), and `regent bench` scenarios against a broker on the same
# PostgreSQL. fsync and synchronous_commit are on (a persistent --data-dir cluster).
#
#   bench/run.sh                 # every run below, DURATION seconds each (default 20)
#   DURATION=10 bench/run.sh push end-to-end
#
# Runs (name: regent bench arguments) are listed in `runs` below; `latency` derives its rate
# from `batch1` (10% of it; LATENCY_RATE=N pins it) and measures PostgreSQL's own commit
# latency beside it, at the same time (LATENCY_TRACE=MS also lists every push and delivery
# later than MS ms, with its wall-clock time, in the work directory's latency.slow, to line up
# with PostgreSQL's log).
# `job-queue` (one message per push, pop and ack) and `consume-b1` (its consumers alone, on a
# 30,000-message backlog: one pop and one ack per message) are printed as ratios to the b=1
# ceiling: pgbench's one-row INSERT of one distinct payload per transaction, $CLIENTS clients.
#
# Prints each result, then every figure as a ratio to the baseline. JSON reports are kept in
# the work directory it names.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-20}
PORT=${PORT:-6690}
B=${BATCH:-100}
CLIENTS=${CLIENTS:-8}
# Each run's arguments. Producer and consumer counts are the ones that saturate this broker:
# the baseline's client count is chosen the same way.
declare -A runs=(
    [push]="--scenario push --producers 16"
    [end-to-end]="--scenario end-to-end --producers 8 --pop-batch 1000"
    [end-to-end-b100]="--scenario end-to-end --producers 8 --consumers 8 --pop-batch 100"
    [pop-ack]="--scenario pop-ack --consumers 8 --pop-batch 1000 --prefill 1000000"
    [fan-out]="--scenario fan-out --groups 10 --producers 4 --consumers 1 --pop-batch 1000"
    [batch1]="--scenario push --push-batch 1 --producers 64"
    [job-queue]="--scenario end-to-end --push-batch 1 --pop-batch 1 --producers 8 --consumers 8"
    [consume-b1]="--scenario pop-ack --consumers 8 --pop-batch 1 --prefill 30000 --drain-timeout 120"
    [partitions-10]="--scenario end-to-end --producers 8 --pop-batch 1000 --partitions 10"
    [partitions-1000]="--scenario end-to-end --producers 8 --pop-batch 1000 --partitions 1000"
    [partitions-10000]="--scenario end-to-end --producers 8 --pop-batch 1000 --partitions 10000"
    [partitions-100000]="--scenario end-to-end --producers 8 --pop-batch 1000 --partitions 100000"
)
order=(push end-to-end end-to-end-b100 pop-ack fan-out batch1 job-queue consume-b1 latency
       partitions-10 partitions-1000 partitions-10000 partitions-100000)
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=("${order[@]}")

. bench/lib.sh
trap stop_dev EXIT
start_dev "$PORT"

# CPU seconds used so far by the broker process and by every PostgreSQL process.
cpu() {
    python3 - "$broker" <<'PY'
import os, sys
hz = os.sysconf("SC_CLK_TCK")
def secs(pid, children=False):
    # utime, stime (and, for the postmaster, the reaped backends' cutime, cstime).
    try:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12]) + (int(f[13]) + int(f[14]) if children else 0)) / hz
    except OSError:
        return 0.0
pg = 0.0
for p in os.listdir("/proc"):
    if p.isdigit():
        try:
            if open(f"/proc/{p}/comm").read().strip() in ("postgres", "postmaster"):
                # Backends that exited (pgbench's) live on in their parent's child times.
                pg += secs(p, children=True)
        except OSError:
            pass
print(f"{secs(sys.argv[1]):.2f} {pg:.2f}")
PY
}

psql -q "$PG" -c "CREATE TABLE IF NOT EXISTS bench_queue (id bigserial PRIMARY KEY, payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())"
# The baseline is what the issue describes: a multi-row INSERT ... VALUES of B distinct
# 256-byte JSON payloads, sent by the client and parsed by PostgreSQL, as a naive queue's
# producer would. The cheaper INSERT ... SELECT of one constant (no payload crosses the wire,
# one jsonb parse per transaction) is measured too and printed beside it for reference.
insert_sql() { # rows per transaction -> the pgbench script
    python3 - "$1" <<'PY'
import random, sys
random.seed(7)
b = int(sys.argv[1])
rows = []
for i in range(b):
    pad = "".join(random.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(225))
    rows.append(f"""('{{"t":{1700000000000000 + i},"pad":"{pad}"}}')""")
print("INSERT INTO bench_queue (payload) VALUES " + ",".join(rows) + ";")
PY
}
insert_sql "$B" >"$work/insert.sql"
pad=$(python3 -c "import random; random.seed(7); print(''.join(random.choice('abcdefghijklmnopqrstuvwxyz') for _ in range(225)))")
cat >"$work/insert-constant.sql" <<SQL
INSERT INTO bench_queue (payload) SELECT '{"t":1700000000000000,"pad":"$pad"}'::jsonb FROM generate_series(1, $B);
SQL
pgb() { # script, output file[, rows per transaction: B] -> "msg/s postgres-cpu-seconds"
    local p0 p1 tps
    read -r _ p0 <<<"$(cpu)"
    "$pgbench" -n -c "$CLIENTS" -j 2 -T "$DURATION" -f "$1" "$PG" >"$2" 2>&1
    read -r _ p1 <<<"$(cpu)"
    tps=$(grep -oP 'tps = \K[0-9.]+' "$2" | head -1)
    echo "$(python3 -c "print(round($tps * ${3:-$B}))") $(python3 -c "print(round($p1-$p0,1))")"
}
read -r constant constant_cpu <<<"$(pgb "$work/insert-constant.sql" "$work/pgbench-constant.txt")"
read -r baseline baseline_cpu <<<"$(pgb "$work/insert.sql" "$work/pgbench.txt")"
echo "baseline: pgbench INSERT ... VALUES of $B distinct rows per transaction, $CLIENTS clients: $baseline msg/s, postgres cpu $baseline_cpu s"
echo "  (for reference, INSERT ... SELECT of one constant $B times: $constant msg/s, postgres cpu $constant_cpu s)"

# The b=1 ceiling, measured only for the runs compared with it.
ceiling1=
if [[ " ${scenarios[*]} " == *" job-queue "* || " ${scenarios[*]} " == *" consume-b1 "* ]]; then
    insert_sql 1 >"$work/insert1.sql"
    read -r ceiling1 ceiling1_cpu <<<"$(pgb "$work/insert1.sql" "$work/pgbench-1.txt" 1)"
    echo "b=1 ceiling: pgbench one-row INSERT per transaction, $CLIENTS clients: $ceiling1 msg/s, postgres cpu $ceiling1_cpu s"
fi
# The baseline's table is gigabytes by now, and its insert-triggered autovacuum would scan and
# dirty all of it through every broker run after it: disk writes the broker did not cause,
# which stall the WAL flushes its commits wait on. Measured, not needed: emptied.
psql -q "$PG" -c "TRUNCATE bench_queue"

for s in "${scenarios[@]}"; do
    args=${runs[$s]:-}
    commit_probe=
    if [ "$s" = latency ]; then
        # 10% of the batch-1 push rate (measured now if batch1 was not run), 8 producers, and
        # consumers parked on long-polls. PostgreSQL's own commit latency is measured beside it,
        # at the same time on the same disk: pgbench's one-row INSERT at a tenth of that rate
        # (per-transaction log, percentiles computed after the run). Measured before or after
        # instead, it missed the stalls the run itself met (checkpoint and writeback flushes).
        if [ ! -f "$work/batch1.json" ]; then
            "$gen" bench --url "http://127.0.0.1:$PORT" ${runs[batch1]} --duration "$DURATION" \
                --json --quiet >"$work/batch1.json"
        fi
        rate=$(python3 -c "import json; print(max(10, round(json.load(open('$work/batch1.json'))['push_rate'] / 10)))")
        # LATENCY_RATE pins it, so that an A/B compares two builds at one rate (each build's
        # own batch1 would otherwise drive each at its own).
        rate=${LATENCY_RATE:-$rate}
        args="--scenario end-to-end --push-batch 1 --producers 8 --consumers 8 --rate $rate"
        # LATENCY_TRACE=MS: every push and delivery later than MS, stamped, in $work/latency.slow.
        [ -z "${LATENCY_TRACE:-}" ] || args="$args --trace-slower-than $LATENCY_TRACE"
        probe_rate=$(( rate / 10 > 20 ? rate / 10 : 20 ))
        psql -q "$PG" -c "CREATE TABLE IF NOT EXISTS bench_commit (id bigserial PRIMARY KEY, at timestamptz DEFAULT now())"
        echo "INSERT INTO bench_commit DEFAULT VALUES;" >"$work/commit.sql"
        rm -f "$work"/commitlog.*
        (cd "$work" && exec "$pgbench" -n -c 8 -j 2 -T "$DURATION" -R "$probe_rate" -l --log-prefix=commitlog \
            -f "$work/commit.sql" "$PG" >"$work/pgbench-commit.txt" 2>&1) &
        commit_probe=$!
    fi
    [ -n "$args" ] || { echo "unknown run: $s"; exit 2; }
    read -r b0 p0 <<<"$(cpu)"
    "$gen" bench --url "http://127.0.0.1:$PORT" $args --duration "$DURATION" \
        --pg-url "$PG" --json --quiet ${BENCH_ARGS:-} >"$work/$s.json" 2> >(tee -a "$work/$s.slow" | grep -v '^slow ' >&2)
    # REPORTS (bench/ab.sh): keep each report and the baseline beside it.
    if [ -n "${REPORTS:-}" ]; then
        cp "$work/$s.json" "$REPORTS/$s.json"
        echo "$baseline" >"$REPORTS/baseline"
    fi
    read -r b1 p1 <<<"$(cpu)"
    if [ -n "$commit_probe" ]; then
        wait "$commit_probe"
        python3 - "$work" "$probe_rate" <<'PY'
import glob, sys
lat = sorted(int(l.split()[2]) for f in glob.glob(f"{sys.argv[1]}/commitlog.*") for l in open(f))
pct = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] / 1000
print(f"   latency: PostgreSQL's own commit beside it (pgbench one-row INSERT at {sys.argv[2]}/s): "
      f"p50 {pct(0.5):.2f} ms, p99 {pct(0.99):.2f} ms, p99.9 {pct(0.999):.2f} ms")
PY
    fi
    base=$baseline
    [ "$s" = job-queue ] || [ "$s" = consume-b1 ] && base=$ceiling1
    python3 - "$work/$s.json" "$base" "$b0" "$b1" "$p0" "$p1" "$broker" "$s" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
base = float(sys.argv[2])
b0, b1, p0, p1 = map(float, sys.argv[3:7])
def rss_mb():
    # Current resident set of the broker, and its peak so far.
    try:
        st = dict(l.split(":", 1) for l in open(f"/proc/{sys.argv[7]}/status"))
        return f'{int(st["VmRSS"].split()[0]) // 1024} (peak {int(st["VmHWM"].split()[0]) // 1024})'
    except OSError:
        return "?"
led = r["ledger"]
ledger = "n/a" if led is None else ("OK" if led["lost"] == 0 and led["unknown"] == 0 else f"FAILED {led}")
pl, el = r["push_latency"], r["end_to_end_latency"]
per_commit = f' ({r["pushed"] / r["commits"]:.1f} msg/commit)' if r.get("commits") else ""
print(f'{sys.argv[8]:>17}: in {r["push_rate"]:>8.0f} msg/s ({r["push_rate"]/base:.2f}x), '
      f'out {r["delivery_rate"]:>8.0f} msg/s ({r["delivery_rate"]/base:.2f}x), '
      f'push p50/p99 {pl["p50_ms"]:.1f}/{pl["p99_ms"]:.1f} ms, '
      f'e2e p50/p99/max {el["p50_ms"]:.1f}/{el["p99_ms"]:.1f}/{el["max_ms"]:.0f} ms, '
      f'commits/s {r["commit_rate"] or 0:.0f}{per_commit}, cpu broker {b1-b0:.1f} s postgres {p1-p0:.1f} s, '
      f'generator {r["generator_cores"]:.2f} cores, errors {r["errors"]}, ledger {ledger}, rss {rss_mb()} MB')
PY
done

# Storage: table plus index bytes per stored message, beyond the payload itself.
psql -q "$PG" -c "VACUUM ANALYZE" >/dev/null 2>&1 || true
psql -At "$PG" <<'SQL'
WITH m AS (SELECT coalesce(sum(end_offset - base_offset + 1), 0) AS n FROM segments),
     p AS (SELECT coalesce(sum(octet_length(frames)), 0) AS frame_bytes FROM segments),
     sz AS (SELECT sum(pg_total_relation_size(t)) AS total, t::text AS name
              FROM unnest(ARRAY['segments', 'tx_index', 'cursors', 'partitions']::regclass[]) t
             GROUP BY t)
SELECT format('storage: %s messages; per message: %s B in segments (frames %s B), %s B in tx_index; '
              || 'frame overhead beyond the payload about %s B; tx_index holds %s live entries '
              || '(the deduplication window''s; the purge clock deletes older ones, and their '
              || 'space is reused, not returned)',
              m.n,
              round((SELECT total FROM sz WHERE name = 'segments') / greatest(m.n, 1)),
              round(p.frame_bytes / greatest(m.n, 1)),
              round((SELECT total FROM sz WHERE name = 'tx_index') / greatest(m.n, 1)),
              round(p.frame_bytes / greatest(m.n, 1)) - 256,
              (SELECT count(*) FROM tx_index))
  FROM m, p;
SQL
