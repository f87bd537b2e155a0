#!/usr/bin/env bash
# Regent against what a user would run instead, side by side: each round starts a fresh
# `regent dev` cluster (fsync and synchronous commit on) and runs every shape on it for each
# system in turn, the order alternating per round, each system in a database of its own.
#
#   bench/alternatives.sh                       # ROUNDS=2 DURATION=20, both shapes
#   ROUNDS=3 DURATION=15 bench/alternatives.sh job-queue
#
# Shapes (256 B payloads, 8 producers and 8 consumers, as issue 35's table):
#   job-queue  push 1, take 1, complete 1      (Regent: push 1, pop 1, ack 1)
#   batch      push 100, take up to 100, complete them
#
# Systems:
#   regent  `regent bench --scenario end-to-end` against the round's broker; its ledger must
#           be OK (every message delivered exactly as pushed). Guarantees: ordered partitions,
#           deduplication by transaction id, consumer groups, leases with a retry budget.
#   pgmq    pgmq 1.5 installed from its SQL (PGMQ_SQL, default ../shared/peers/pgmq/pgmq.sql;
#           skipped with a line saying so when absent), driven by pgbench: producers
#           `pgmq.send` / `pgmq.send_batch`, consumers `pgmq.read` with a 30 s visibility
#           timeout then `pgmq.delete` of what they read (three commits per message at
#           job-queue). Delivered = deleted; no ledger (pgbench keeps none). Guarantees: at-least-once with a visibility
#           timeout; no ordering across consumers, no deduplication, no consumer groups.
#   graphile-worker  graphile-worker (GRAPHILE_VERSION, default 0.18.0) installed from the npm
#           registry into GRAPHILE_DIR (default ~/.cache/regent-bench/graphile-worker-VERSION; skipped
#           with a line saying so when npm or the registry is unavailable). Producers are pgbench
#           calling `graphile_worker.add_job` / `add_jobs` (100 job specs); consumers are one
#           Node.js process running graphile-worker's runner (bench/graphile-worker.cjs) with 8
#           jobs at a time, each a no-op; at batch its local queue locks 100 jobs per fetch
#           (its batching; GRAPHILE_LOCAL_QUEUE sets another size, 0 none), at job-queue each
#           worker fetches one. Delivered = jobs completed; no
#           ledger. Guarantees: at-least-once with retries and a per-job lock; named queues
#           serialise their jobs, none used here; deduplication only by an explicit job key.
#
# Prints each run's delivered (and pushed) msg/s, then per shape Regent/peer per round and
# their median, beside the b=1 and b=100 pgbench INSERT ceilings measured on the same cluster.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-20}
ROUNDS=${ROUNDS:-2}
PORT=${PORT:-6691}
PGMQ_SQL=${PGMQ_SQL:-../shared/peers/pgmq/pgmq.sql}
shapes=("$@")
[ ${#shapes[@]} -gt 0 ] || shapes=(job-queue batch)

GRAPHILE_VERSION=${GRAPHILE_VERSION:-0.18.0}
GRAPHILE_DIR=${GRAPHILE_DIR:-$HOME/.cache/regent-bench/graphile-worker-$GRAPHILE_VERSION}

systems=(regent)
if [ -f "$PGMQ_SQL" ]; then
    systems+=(pgmq)
else
    echo "pgmq: skipped, $PGMQ_SQL not found (set PGMQ_SQL to pgmq's SQL-only install)"
fi
if [ -d "$GRAPHILE_DIR/node_modules/graphile-worker" ]; then
    systems+=(graphile)
elif command -v npm >/dev/null && command -v node >/dev/null &&
    timeout 300 npm install --prefix "$GRAPHILE_DIR" --no-audit --no-fund --loglevel=error \
        "graphile-worker@$GRAPHILE_VERSION" >/dev/null 2>&1; then
    systems+=(graphile)
else
    echo "graphile: skipped, graphile-worker@$GRAPHILE_VERSION could not be installed from the npm registry into $GRAPHILE_DIR"
fi

. bench/lib.sh
trap stop_dev EXIT
results="$work/results"
: >"$results"

declare -A regent_args=(
    [job-queue]="--push-batch 1 --pop-batch 1 --producers 8 --consumers 8"
    [batch]="--push-batch 100 --pop-batch 100 --producers 8 --consumers 8"
)
declare -A per_call=([job-queue]=1 [batch]=100)

run_regent() { # shape
    "$gen" bench --url "http://127.0.0.1:$PORT" --scenario end-to-end ${regent_args[$1]} \
        --duration "$DURATION" --json --quiet >"$work/regent-$1.json"
    python3 - "$work/regent-$1.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
led = r["ledger"]
ok = led is None or (led["lost"] == 0 and led["unknown"] == 0)
print(f'{r["delivery_rate"]:.0f} {r["push_rate"]:.0f} {"OK" if ok else "FAILED"}')
PY
}

run_pgmq() { # shape round
    pgmq_setup "pgmq_$2_${1//-/_}" "${per_call[$1]}"
    pgmq_load "$DURATION"
    # Sent: the queue's sequence; delivered: sent minus what is still in the queue.
    psql -At "$pgmq_url" -c "SELECT (SELECT last_value FROM pgmq.q_jobs_msg_id_seq) AS sent,
                               (SELECT count(*) FROM pgmq.q_jobs) AS left" -F ' ' |
        awk -v d="$DURATION" '{ printf "%.0f %.0f n/a\n", ($1 - $2) / d, $1 / d }'
}

run_graphile() { # shape round
    local db="gw_$2_${1//-/_}" n=${per_call[$1]} url queue=0
    PGOPTIONS=--client-min-messages=warning psql -q "$PG" -c "DROP DATABASE IF EXISTS $db" \
        -c "CREATE DATABASE $db"
    url=$(in_db "$db")
    node bench/graphile-worker.cjs "$GRAPHILE_DIR" migrate "$url"
    if [ "$n" -eq 1 ]; then
        echo "SELECT graphile_worker.add_job('job', '$peer_payload'::json);" >"$work/gw-send.sql"
    else
        queue=${GRAPHILE_LOCAL_QUEUE:-$n}
        echo "SELECT graphile_worker.add_jobs(array_fill(ROW('job', '$peer_payload'::json, NULL, NULL,
                NULL, NULL, NULL, NULL)::graphile_worker.job_spec, ARRAY[$n]));" | tr -s ' \n' ' ' \
            >"$work/gw-send.sql"
    fi
    "$pgbench" -n -c 8 -j 1 -T "$DURATION" -f "$work/gw-send.sql" "$url" >"$work/gw-send.txt" 2>&1 &
    local producers=$!
    node bench/graphile-worker.cjs "$GRAPHILE_DIR" work "$url" "$DURATION" 8 "$queue" \
        >"$work/gw-take.json"
    wait "$producers"
    local sent completed
    sent=$(awk '/actually processed/ { split($NF, a, "/"); print a[1] }' "$work/gw-send.txt")
    completed=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["done"])' "$work/gw-take.json")
    awk -v d="$DURATION" -v s="${sent:-0}" -v n="$n" -v k="$completed" \
        'BEGIN { printf "%.0f %.0f n/a\n", k / d, s * n / d }'
}

# run SYSTEM SHAPE ROUND: one run, printed as "delivered pushed ledger".
run() {
    case $1 in
        regent) run_regent "$2" ;;
        pgmq) run_pgmq "$2" "$3" ;;
        graphile) run_graphile "$2" "$3" ;;
    esac
}

ceiling() { # rows per transaction -> msg/s of pgbench's INSERT into a one-index table
    psql -q "$PG" -c "CREATE TABLE IF NOT EXISTS alt_ceiling (id bigserial PRIMARY KEY, payload jsonb NOT NULL)"
    python3 - "$1" "$peer_payload" >"$work/ceiling.sql" <<'PY'
import sys
n, p = int(sys.argv[1]), sys.argv[2]
print("INSERT INTO alt_ceiling (payload) VALUES " + ",".join(f"('{p}'::jsonb)" for _ in range(n)) + ";")
PY
    "$pgbench" -n -c 8 -j 1 -T "$DURATION" -f "$work/ceiling.sql" "$PG" |
        awk -v n="$1" '/^tps/ { printf "%.0f\n", $3 * n }'
    psql -q "$PG" -c "DROP TABLE alt_ceiling"
}

for round in $(seq 1 "$ROUNDS"); do
    [ "$round" -eq 1 ] || stop_dev
    start_dev "$PORT"
    order=("${systems[@]}")
    [ $((round % 2)) -eq 1 ] || order=($(printf '%s\n' "${systems[@]}" | tac))
    for shape in "${shapes[@]}"; do
        for sys in "${order[@]}"; do
            read -r out in ledger <<<"$(run "$sys" "$shape" "$round")"
            printf '%-7s round %s %-9s delivered %8s msg/s, pushed %8s msg/s, ledger %s\n' \
                "$sys" "$round" "$shape" "$out" "$in" "$ledger"
            echo "$round $shape $sys $out $in $ledger" >>"$results"
        done
    done
    if [ "$round" -eq 1 ]; then
        c1=$(ceiling 1)
        c100=$(ceiling 100)
        echo "ceilings on this cluster: pgbench one-row INSERT per commit $c1 msg/s; 100-row INSERT $c100 msg/s"
    fi
done

python3 - "$results" "${c1:-0}" "${c100:-0}" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
ceil = {"job-queue": float(sys.argv[2]), "batch": float(sys.argv[3])}
for shape in dict.fromkeys(r[1] for r in rows):
    got = {}
    for rnd, sh, system, out, _in, _led in rows:
        if sh == shape:
            got.setdefault(system, {})[rnd] = float(out)
    reg = got.get("regent", {})
    c = ceil.get(shape) or 0
    line = f"{shape}: Regent delivered median {statistics.median(reg.values()):.0f} msg/s"
    if c:
        line += f" ({statistics.median(reg.values()) / c:.2f}x of the pgbench ceiling {c:.0f})"
    for peer, vals in got.items():
        if peer == "regent":
            continue
        ratios = [reg[r] / vals[r] for r in vals if r in reg and vals[r] > 0]
        line += f"; Regent/{peer} per round " + ", ".join(f"{x:.2f}" for x in ratios)
        if ratios:
            line += f" (median {statistics.median(ratios):.2f})"
    print(line)
PY
