#!/usr/bin/env bash
# A noisy neighbour (issue 36): tenant A pushes and pops as fast as it can (batch 1000, 8
# producers and 8 consumers, many connections) while tenant B runs the job-queue shape at a
# modest fixed rate (RATE_B msg/s open loop, 2 producers and 2 consumers, batch 1). B's end to
# end latency beside A against B alone, on one broker with authentication on (each tenant
# from its own token), on a private cluster (fsync and synchronous commit on). Per round, B
# alone and B beside A, the order alternating; A starts 3 s before B's run and stops after it.
# Prints B's p50 / p99 / max both ways, their ratios, and what A moved meanwhile. Extra
# settings for the broker come from the environment (BROKER_ENV="DB_POOL_SIZE=40 ..."); A_RATE
# holds A to that many messages a second (open loop; 0, the default: as fast as it can), as a
# tenant kept under its limits would be. CLIENT_NICE runs both load generators at that niceness (in
# production a tenant's clients run on machines of their own; here they share the two cores
# with the broker and PostgreSQL). A_BROKER=own serves A from a broker of its own on the same
# database, which tells the broker's share of B's wait from PostgreSQL's. WAITS=1 samples
# `pg_stat_activity` every 20 ms during B's runs and prints the wait events seen.
# (`regent bench` fails the script if a ledger loses a message.)
#
#   bench/neighbour.sh                        # DURATION=20 ROUNDS=2 RATE_B=100
#   RATE_B=200 ROUNDS=3 bench/neighbour.sh
#   A_RATE=30000 bench/neighbour.sh
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-20}
ROUNDS=${ROUNDS:-2}
RATE_B=${RATE_B:-100}
A_RATE=${A_RATE:-0}
CLIENT_NICE=${CLIENT_NICE:-0}
A_BROKER=${A_BROKER:-shared}
WAITS=${WAITS:-0}
PORT=${PORT:-6720}

. bench/lib.sh
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    stop_dev
}
trap cleanup EXIT
# `regent dev` owns the private cluster; the measured broker shares it, with tokens.
start_dev "$PORT"
SECRET=bench-secret
# shellcheck disable=SC2086
env -u TENANT_LIMITS NO_COLOR=1 DATABASE_URL="$PG" PORT=$((PORT + 1)) JWT_ENABLED=true \
    JWT_SECRET=$SECRET ${BROKER_ENV:-} "$bin" serve >"$work/broker.out" 2>"$work/broker.err" &
pids+=($!)
wait_for "$work/broker.out" "serving on"
url="http://127.0.0.1:$((PORT + 1))"
a_url=$url
if [ "$A_BROKER" = own ]; then
    # shellcheck disable=SC2086
    env -u TENANT_LIMITS NO_COLOR=1 DATABASE_URL="$PG" PORT=$((PORT + 2)) JWT_ENABLED=true \
        JWT_SECRET=$SECRET ${BROKER_ENV:-} "$bin" serve >"$work/broker-a.out" 2>"$work/broker-a.err" &
    pids+=($!)
    wait_for "$work/broker-a.out" "serving on"
    a_url="http://127.0.0.1:$((PORT + 2))"
fi
TA=$("$bin" token --secret $SECRET --tenant tenant-a --role admin --expires-in 86400)
TB=$("$bin" token --secret $SECRET --tenant tenant-b --role admin --expires-in 86400)

# The wait events of PostgreSQL's active backends, sampled every 50 ms by one psql session.
waits_sql="SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') FROM pg_stat_activity
            WHERE state = 'active' AND pid <> pg_backend_pid() \\watch 0.05"
b_run() { # name
    local w=
    if [ "$WAITS" = 1 ]; then
        psql "$PG" -Atq <<<"$waits_sql" >"$work/waits-$1.txt" 2>/dev/null &
        w=$!
    fi
    nice -n "$CLIENT_NICE" "$bin" bench --url "$url" --token "$TB" --scenario end-to-end --push-batch 1 --pop-batch 1 \
        --producers 2 --consumers 2 --partitions 10 --rate "$RATE_B" --duration "$DURATION" \
        --queue "b-$1" --json --quiet >"$work/b-$1.json"
    if [ -n "$w" ]; then kill "$w"; wait "$w" 2>/dev/null || true; fi
}
beside_a() { # name
    nice -n "$CLIENT_NICE" "$bin" bench --url "$a_url" --token "$TA" --scenario end-to-end --push-batch 1000 \
        --pop-batch 1000 --producers 8 --consumers 8 --duration $((DURATION + 5)) \
        --rate "$A_RATE" --queue "a-$1" --json --quiet >"$work/a-$1.json" &
    local a=$!
    sleep 3
    b_run "$1"
    wait "$a"
}

for round in $(seq 1 "$ROUNDS"); do
    runs=(alone beside)
    [ $((round % 2)) -eq 0 ] && runs=(beside alone)
    for r in "${runs[@]}"; do
        case $r in
            alone) b_run "alone-$round" ;;
            beside) beside_a "beside-$round" ;;
        esac
    done
    python3 - "$work" "$round" "$WAITS" <<'PY'
import collections, json, sys
work, rnd, waits = sys.argv[1:]
alone = json.load(open(f"{work}/b-alone-{rnd}.json"))
beside = json.load(open(f"{work}/b-beside-{rnd}.json"))
a = json.load(open(f"{work}/a-beside-{rnd}.json"))
for name, r in (("B alone", alone), ("B beside A", beside), ("A", a)):
    assert r["errors"] == 0, f"{name}: {r['errors']} errors: {r['first_error']}"
def lat(r):
    e, p = r["end_to_end_latency"], r["push_latency"]
    return (f"p50 {e['p50_ms']:7.1f}  p99 {e['p99_ms']:7.1f}  max {e['max_ms']:7.1f} ms;"
            f"  push p99 {p['p99_ms']:6.1f} ms")
print(f"round {rnd}  B alone      {alone['delivery_rate']:7.0f} msg/s  {lat(alone)}")
print(f"round {rnd}  B beside A   {beside['delivery_rate']:7.0f} msg/s  {lat(beside)}")
ea, eb = alone["end_to_end_latency"], beside["end_to_end_latency"]
print(f"round {rnd}  B beside / alone: p50 {eb['p50_ms'] / ea['p50_ms']:.2f}x  "
      f"p99 {eb['p99_ms'] / ea['p99_ms']:.2f}x;  A meanwhile: in {a['push_rate']:.0f}, "
      f"out {a['delivery_rate']:.0f} msg/s")
if waits == "1":
    for run in ("alone", "beside"):
        seen = collections.Counter(open(f"{work}/waits-{run}-{rnd}.txt").read().split())
        top = ", ".join(f"{k} {v}" for k, v in seen.most_common(8))
        print(f"round {rnd}  waits, B {run}: {top}")
PY
done
