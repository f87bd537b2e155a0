#!/usr/bin/env bash
# Throughput with the xmin horizon held (issue 36): a session keeps a transaction open
# (`BEGIN; SELECT txid_current();`, then waits) for the whole run, so VACUUM can remove no
# row version that dies meanwhile. SKIP LOCKED job queues that update or delete a row per
# message are reported to lose about a third of their dequeue rate this way; Regent appends
# segments and moves one cursor row per partition and group, so it should lose little. Each
# run on a fresh `regent dev` cluster, the shapes of bench/alternatives.sh (256 B payloads,
# 8 producers, 8 consumers), with and without the held horizon, the order alternating per
# round; prints delivered msg/s, e2e p99 and the dead row versions left at the end, and the
# ratio held/free per round.
#
#   ROUNDS=2 DURATION=45 bench/bloat.sh
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-45}
ROUNDS=${ROUNDS:-2}
PORT=${PORT:-6693}
. bench/lib.sh
trap stop_dev EXIT

declare -A shapes=(
    [job-queue]="--push-batch 1 --pop-batch 1 --producers 8 --consumers 8"
    [batch]="--push-batch 100 --pop-batch 100 --producers 8 --consumers 8"
)

run() { # shape held|free round
    local report="$work/$1-$2-$3.json" holder=
    start_dev "$PORT"
    if [ "$2" = held ]; then
        psql -q "$PG" -c "BEGIN; SELECT txid_current(); SELECT pg_sleep($DURATION + 120); COMMIT" \
            >/dev/null 2>&1 &
        holder=$!
        # Until its transaction has an id: from then on the horizon is held.
        for _ in $(seq 1 50); do
            [ "$(psql -Atq "$PG" -c "SELECT count(*) FROM pg_stat_activity WHERE backend_xid IS NOT NULL AND query LIKE '%pg_sleep%'")" = 1 ] && break
            sleep 0.1
        done
    fi
    # The job-queue shape's producers outrun its consumers (the backlog grows): the drain
    # gets the time to deliver the rest, so that the ledger's check is about loss.
    "$gen" bench --url "http://127.0.0.1:$PORT" --scenario end-to-end ${shapes[$1]} \
        --duration "$DURATION" --drain-timeout 600 --json --quiet >"$report"
    local dead
    dead=$(psql -Atq "$PG" -c "SELECT coalesce(sum(n_dead_tup), 0) FROM pg_stat_user_tables")
    [ -z "$holder" ] || kill "$holder" 2>/dev/null || true
    stop_dev
    python3 - "$report" "$1" "$2" "$3" "$dead" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
led = r["ledger"]
ok = led is None or (led["lost"] == 0 and led["unknown"] == 0)
print(f'{sys.argv[2]:9} {sys.argv[3]:4} round {sys.argv[4]}: delivered {r["delivery_rate"]:8.0f} msg/s, '
      f'pushed {r["push_rate"]:8.0f}, e2e p99 {r["end_to_end_latency"]["p99_ms"]:8.1f} ms, '
      f'dead row versions {sys.argv[5]}, ledger {"OK" if ok else "FAILED"}')
PY
}

for round in $(seq 1 "$ROUNDS"); do
    if [ $((round % 2)) -eq 1 ]; then order=(free held); else order=(held free); fi
    for shape in job-queue batch; do
        for held in "${order[@]}"; do
            run "$shape" "$held" "$round"
        done
    done
done

python3 - "$work" "$ROUNDS" <<'PY'
import json, os, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
for shape in ("job-queue", "batch"):
    for name, f in (("delivered", lambda r: r["delivery_rate"]),
                    ("e2e p99", lambda r: r["end_to_end_latency"]["p99_ms"])):
        ratios = []
        for n in range(1, rounds + 1):
            held = json.load(open(os.path.join(work, f"{shape}-held-{n}.json")))
            free = json.load(open(os.path.join(work, f"{shape}-free-{n}.json")))
            if f(free):
                ratios.append(f(held) / f(free))
        print(f"{shape:9} {name:9} held/free per round {', '.join(f'{x:.2f}' for x in ratios)}"
              f" (median {statistics.median(ratios):.2f})")
PY
