#!/usr/bin/env bash
# Cross-broker wakeups: how soon a message pushed through broker A reaches a consumer
# long-polling on broker B over the same PostgreSQL, and what the peer notifications cost the
# push path. One private cluster (persistent, fsync and synchronous commit on); A is
# `regent dev` owning it, B is `regent serve` on the same database.
#
# For each setting of PEER_WAKEUPS (true, false; both brokers restarted with it, the order
# alternating per round so the database's growth favours neither):
#   same   open-loop end to end at a low rate, producers and consumers on A: the control,
#          in-process wakeups only
#   cross  the same with consumers on B (`regent bench --pop-url`): without peer wakeups a
#          parked pop on B only sees the message at its next timer recheck
#   push   a saturating closed-loop push through A, for the cost of notifying peers
# Each latency run's partitions exist before it starts (see `warm`). Prints e2e p50 / p99 /
# max per setting and placement, and push msg/s with the true/false ratio per round. A
# broker that does not know PEER_WAKEUPS ignores it: both settings then measure the
# timer-bound latency, which at 20 msg/s is about 50 / 100 ms p50 / p99, not a second: a
# consumer parks again after every message and is rarely parked past its first recheck.
# (`regent bench` fails the script if a ledger loses a message.)
#
#   bench/peers.sh                        # DURATION=20 SAT_DURATION=10 ROUNDS=2 RATE=20
#   KEEP=1 bench/peers.sh                 # keep the work directory (JSON reports, logs)
#   WARM=0 bench/peers.sh                 # no warm-up: partitions are created during the run,
#                                         # so B must also learn of them (from A's notes, or
#                                         # its sweep a second later without them)
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-20}
SAT_DURATION=${SAT_DURATION:-10}
ROUNDS=${ROUNDS:-2}
RATE=${RATE:-20}
PORT=${PORT:-6710}
PARTITIONS=4
# Few messages, few partitions, more consumers than producers: consumers are parked when a
# message arrives, so the latency is the wakeup's, not queueing behind other work.
LATENCY="--scenario end-to-end --rate $RATE --push-batch 1 --pop-batch 1 --producers 1
    --consumers 2 --partitions $PARTITIONS --duration $DURATION"
SATURATE=${SATURATE:-"--scenario push --producers 16 --duration $SAT_DURATION"}

. bench/lib.sh
trap stop_both EXIT

a_url="http://127.0.0.1:$PORT"
b_url="http://127.0.0.1:$((PORT + 1))"

# start_brokers SETTING: A (`regent dev`, restarting the cluster on its data directory,
# which keeps its data) and then B on A's cluster, both with PEER_WAKEUPS=SETTING.
start_brokers() {
    export PEER_WAKEUPS=$1
    start_dev "$PORT"
    start_serve "$bin" $((PORT + 1)) b
}

# warm QUEUE: creates the queue's partitions through A before a latency run, with one
# message each, consumed there at once by the group the generator will use (`bench-g0`,
# autoAck) so its ledger never sees them. Why: B's pops find partitions another broker
# created only at their discovery sweep, at most once a second (`wakeup::Sweeps`), so each
# partition's first message could wait up to a second on B whatever the wakeups do; with 4
# partitions and 400 samples that is 1% of them, exactly the p99.
warm() {
    python3 - "$a_url" "$1" "$PARTITIONS" <<'PY'
import json, sys, time, urllib.request
url, queue, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
items = [{"queue": queue, "partition": f"p{i}", "transactionId": f"warm-{i}", "payload": {}}
         for i in range(n)]
req = urllib.request.Request(f"{url}/api/v1/push", json.dumps({"items": items}).encode(),
                             {"content-type": "application/json"})
assert urllib.request.urlopen(req).status == 201
got = 0
for _ in range(50):
    with urllib.request.urlopen(f"{url}/api/v1/pop/queue/{queue}?batch={n}&partitions={n}"
                                f"&autoAck=true&consumerGroup=bench-g0&wait=false") as r:
        got += len(json.load(r).get("messages", []))
    if got == n:
        break
    time.sleep(0.1)
assert got == n, f"warm-up of {queue}: {got} of {n} messages consumed"
PY
}

# B first: it is a client of A's cluster. A's cluster stays on disk for the next setting.
stop_brokers() {
    stop_serve
    kill -INT "$broker" 2>/dev/null || true
    wait "$broker" 2>/dev/null || true
}

for round in $(seq 1 "$ROUNDS"); do
    settings=(true false)
    placements=(same cross)
    if [ $((round % 2)) -eq 0 ]; then
        settings=(false true)
        placements=(cross same)
    fi
    for s in "${settings[@]}"; do
        start_brokers "$s"
        echo "round $round, PEER_WAKEUPS=$s: A $a_url (cluster $PG), B $b_url"
        for p in "${placements[@]}"; do
            pop=()
            [ "$p" = cross ] && pop=(--pop-url "$b_url")
            [ "${WARM:-1}" = 0 ] || warm "peers-$p-$s-$round"
            # shellcheck disable=SC2086
            "$bin" bench --url "$a_url" "${pop[@]}" $LATENCY --queue "peers-$p-$s-$round" \
                --json --quiet >"$work/$p-$s-$round.json"
        done
        # shellcheck disable=SC2086
        "$bin" bench --url "$a_url" $SATURATE --queue "peers-push-$s-$round" \
            --json --quiet >"$work/push-$s-$round.json"
        stop_brokers
    done
done

python3 - "$work" "$ROUNDS" "$RATE" "$SATURATE" <<'PY'
import json, sys
work, rounds, rate, saturate = sys.argv[1], int(sys.argv[2]), sys.argv[3], " ".join(sys.argv[4].split())
def load(name):
    r = json.load(open(f"{work}/{name}.json"))
    assert r["errors"] == 0, f"{name}: {r['errors']} errors: {r['first_error']}"
    return r
def cell(r):
    e = r["end_to_end_latency"]
    return f"{e['p50_ms']:7.1f} / {e['p99_ms']:7.1f} / {e['max_ms']:7.1f} ({e['count']})"
print()
print(f"end-to-end latency, ms: p50 / p99 / max (samples); {rate} msg/s open loop, "
      "producers on A, consumers on A (same) or B (cross)")
print(f"{'PEER_WAKEUPS':<13} {'round':<6} {'same broker':<34} {'cross broker':<34}")
for s in ("true", "false"):
    for rnd in range(1, rounds + 1):
        same, cross = load(f"same-{s}-{rnd}"), load(f"cross-{s}-{rnd}")
        print(f"{s:<13} {rnd:<6} {cell(same):<34} {cell(cross):<34}")
print()
print(f"push throughput through A, msg/s ({saturate})")
print(f"{'round':<6} {'true':>10} {'false':>10} {'true/false':>11}")
for rnd in range(1, rounds + 1):
    on, off = (load(f"push-{s}-{rnd}")["push_rate"] for s in ("true", "false"))
    print(f"{rnd:<6} {on:>10,.0f} {off:>10,.0f} {on / off:>11.2f}")
PY
