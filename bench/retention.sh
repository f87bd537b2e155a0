#!/usr/bin/env bash
# Retention under load (issue 12): MESSAGES messages expire from one queue while producers
# push to another. Prints push latency before and during the purge, how long the purge took,
# and the tables' sizes before and after.
#
#   bench/retention.sh                     # MESSAGES=5000000 DURATION=20 INTERVAL=1000
#
# One `regent dev` broker on a persistent private cluster (fsync and synchronous commit on),
# RETENTION_INTERVAL=INTERVAL ms. The expiring queue is filled with batches of 1,000 over 100
# partitions; its retention is then cut to one second, so everything in it is due at once.
set -euo pipefail
cd "$(dirname "$0")/.."

MESSAGES=${MESSAGES:-5000000}
DURATION=${DURATION:-20}
INTERVAL=${INTERVAL:-1000}
PORT=${PORT:-6740}

. bench/lib.sh
export RETENTION_INTERVAL=$INTERVAL
trap stop_both EXIT
start_dev "$PORT"
url="http://127.0.0.1:$PORT"
psql=$(command -v psql || echo "$pgbin/psql")
sql() { "$psql" "$PG" -XAtq -c "$1"; }

configure() {
    python3 - "$url" "$1" "$2" <<'PY'
import json, sys, urllib.request
url, queue, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3])
body = json.dumps({"queue": queue, "options": {"retentionEnabled": True, "retentionSeconds": seconds}}).encode()
req = urllib.request.Request(f"{url}/api/v1/configure", body, {"content-type": "application/json"})
assert urllib.request.urlopen(req).status == 200
PY
}

sizes() {
    sql "SELECT 'segments ' || pg_size_pretty(pg_total_relation_size('segments'))
              || ', tx_index ' || pg_size_pretty(pg_total_relation_size('tx_index'))
              || ', segments rows ' || (SELECT count(*) FROM segments)
              || ', dead ' || coalesce((SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'segments'), 0)"
}

stored() {
    sql "SELECT coalesce(sum(s.end_offset - s.base_offset + 1), 0) FROM segments s
           JOIN partitions p ON p.id = s.partition_id
           JOIN queues q ON q.id = p.queue_id WHERE q.name = 'expiring'"
}

configure expiring 86400
echo "filling 'expiring' with $MESSAGES messages"
# One generator run, stopped once enough is stored (its transaction ids repeat from run to
# run: a second run would push duplicates only).
"$gen" bench --url "$url" --scenario push --queue expiring --producers 16 --push-batch 1000 \
    --partitions 100 --duration 3600 --quiet --json >/dev/null &
fill=$!
while [ "$(stored)" -lt "$MESSAGES" ]; do sleep 1; done
kill "$fill"
wait "$fill" 2>/dev/null || true
echo "stored: $(stored) messages; $(sizes)"

live="--scenario push --queue live --producers 16 --push-batch 100 --partitions 100 --json --quiet"
"$gen" bench --url "$url" $live --duration "$DURATION" >"$work/before.json"

configure expiring 1
start=$(date +%s.%N)
"$gen" bench --url "$url" $live --duration $((DURATION * 2)) >"$work/during.json" &
gen_pid=$!
while [ "$(stored)" -gt 0 ]; do sleep 0.2; done
end=$(date +%s.%N)
wait "$gen_pid"
echo "after the purge: $(sizes)"
sql "VACUUM segments" >/dev/null
sql "VACUUM partitions" >/dev/null
echo "after VACUUM: $(sizes)"

python3 - "$work" "$start" "$end" "$MESSAGES" <<'PY'
import json, os, sys
work, start, end, n = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
b = json.load(open(os.path.join(work, "before.json")))
d = json.load(open(os.path.join(work, "during.json")))
took = end - start
print(f"purge: {n} messages in {took:.1f} s ({n / took:,.0f} msg/s), retention interval included")
for name, j in (("before", b), ("during", d)):
    p = j["push_latency"]
    print(f"push {name:>6}: {j['push_rate']:,.0f} msg/s, p50 {p['p50_ms']:.1f} ms, p99 {p['p99_ms']:.1f} ms, max {p['max_ms']:.1f} ms, errors {j['errors']}")
print(f"during/before: rate {d['push_rate'] / b['push_rate']:.2f}, p99 {d['push_latency']['p99_ms'] / b['push_latency']['p99_ms']:.2f}")
PY
