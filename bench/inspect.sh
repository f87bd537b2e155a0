#!/usr/bin/env bash
# The inspection routes at scale (issue 13): one queue of PARTITIONS partitions holding
# MESSAGES messages, two consumer groups with cursors on every partition, a few hundred dead
# letters; then each read route of the operating surface, timed ROUNDS times (median and
# worst, curl's total time on localhost).
#
#   bench/inspect.sh              # PARTITIONS=100000 MESSAGES=10000000 ROUNDS=5
#
# One `regent dev` broker on a persistent private cluster (fsync on).
set -euo pipefail
cd "$(dirname "$0")/.."

PARTITIONS=${PARTITIONS:-100000}
MESSAGES=${MESSAGES:-10000000}
ROUNDS=${ROUNDS:-5}
# Each push goes to one partition: MESSAGES/BATCH pushes spread over PARTITIONS.
BATCH=${BATCH:-100}
PORT=${PORT:-6750}

. bench/lib.sh
trap stop_both EXIT
start_dev "$PORT"
url="http://127.0.0.1:$PORT"
psql=$(command -v psql || echo "$pgbin/psql")
sql() { "$psql" "$PG" -XAtq -c "$1"; }
stored() { sql "SELECT coalesce(sum(end_offset - base_offset + 1), 0) FROM segments"; }

echo "filling 'big': $MESSAGES messages over $PARTITIONS partitions"
start=$(date +%s)
"$gen" bench --url "$url" --scenario push --queue big --producers 16 --push-batch "$BATCH" \
    --partitions "$PARTITIONS" --duration 7200 --quiet --json >/dev/null &
fill=$!
while [ "$(stored)" -lt "$MESSAGES" ]; do sleep 2; done
kill "$fill"
wait "$fill" 2>/dev/null || true
echo "stored $(stored) messages in $(( $(date +%s) - start )) s;" \
     "segments $(sql "SELECT pg_size_pretty(pg_total_relation_size('segments'))")"

# Two groups with a cursor on every partition (a pop's sweep gives them), one with a batch
# acked and one batch dead-lettered per round.
python3 - "$url" <<'PY'
import json, sys, urllib.request
url = sys.argv[1]
def call(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url + path, data, {"content-type": "application/json"}, method=method)
    return json.load(urllib.request.urlopen(req, timeout=120))
for group in ("audit", "billing"):
    for i in range(200):
        v = call("GET", f"/api/v1/pop/queue/big?wait=false&batch=10&consumerGroup={group}")
        msgs = v.get("messages", [])
        if not msgs:
            continue
        status = "dlq" if i % 2 else "completed"
        acks = [{"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                 "leaseId": m["leaseId"], "status": status, "error": "bench"} for m in msgs]
        call("POST", "/api/v1/ack/batch", {"consumerGroup": group, "acknowledgments": acks})
v = call("GET", "/api/v1/pop/queue/big?wait=false&batch=1&consumerGroup=probe&autoAck=true")
m = v["messages"][0]
open("/tmp/regent-inspect-message", "w").write(f"{m['partitionId']}/{m['transactionId']}")
PY
sleep 6  # one series flush
one=$(cat /tmp/regent-inspect-message)
# The stats rounds (every STATS_INTERVAL_MS, 10 s): what one costs at this size, forced.
for _ in 1 2 3; do
    curl -s -X POST "$url/api/v1/stats/refresh" | python3 -c 'import json, sys
v = json.load(sys.stdin)
print("stats round: %.0f ms over %d queues" % (v["tookMs"], v["queues"]))'
done
echo "cursors: $(sql "SELECT count(*) FROM cursors"); dead letters: $(sql "SELECT count(*) FROM dead_letters")"

routes=(
    /api/v1/resources/overview
    /api/v1/resources/queues
    "/api/v1/resources/queues/big"
    "/api/v1/resources/queues/big?offset=84000"
    "/api/v1/resources/queues/big/depth"
    "/api/v1/resources/queues/big/depth?group=audit"
    /api/v1/resources/namespaces
    /api/v1/resources/tasks
    "/api/v1/resources/partitions?queue=big"
    "/api/v1/resources/partitions?queue=big&offset=99000"
    "/api/v1/messages?queue=big"
    "/api/v1/messages?queue=big&status=dead_letter"
    "/api/v1/messages/$one"
    /api/v1/dlq
    "/api/v1/dlq?queue=big&consumerGroup=billing"
    /api/v1/status
    /api/v1/status/queues
    /api/v1/status/queues/big
    /api/v1/status/queues/big/messages
    /api/v1/status/analytics
    /api/v1/analytics/queue-ops
    /api/v1/analytics/queue-lag
    /api/v1/analytics/retention
    /api/v1/analytics/queue-parked-replicas
    /api/v1/analytics/system-metrics
    /api/v1/analytics/worker-metrics
    /api/v1/analytics/postgres-stats
    /api/v1/status/buffers
    /api/v1/metrics/queues
    /api/v1/consumer-groups
    /api/v1/consumer-groups/audit
    "/api/v1/consumer-groups/audit?offset=84000"
    "/api/v1/consumer-groups/lagging?minLagSeconds=1"
    /api/v1/traces/names
)
printf '%-52s %10s %10s %10s\n' route median_ms worst_ms bytes
for r in "${routes[@]}"; do
    times=()
    for _ in $(seq 1 "$ROUNDS"); do
        times+=("$(curl -s -o /tmp/regent-inspect-body -w '%{time_total}' "$url$r")")
    done
    bytes=$(wc -c </tmp/regent-inspect-body)
    python3 - "$r" "$bytes" "${times[@]}" <<'PY'
import statistics, sys
r, size, ts = sys.argv[1], sys.argv[2], [float(t) * 1000 for t in sys.argv[3:]]
print(f"{r[:52]:<52} {statistics.median(ts):10.1f} {max(ts):10.1f} {size:>10}")
PY
done
