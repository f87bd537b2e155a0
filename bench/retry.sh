#!/usr/bin/env bash
# Retries: how soon a nacked message reaches a consumer parked on a long-poll, and what
# acknowledging costs. With BASELINE set to another build of regent (one made from an
# earlier commit, say), both run side by side on one private cluster (persistent, fsync and
# synchronous commit on), the order alternating per round; without it, this build alone.
#
#   retry    open loop at RATE msg/s, batch 1, more consumers than producers, so consumers
#            are parked when a message arrives; every NACK_EVERY-th batch a consumer takes is
#            nacked (`regent bench --nack-every`) and its latency counted at the redelivery;
#            the consumer that nacked backs off for BACKOFF ms (`--nack-backoff`) before it
#            pops again, so the retry is for the other, parked consumers to take
#   pop-ack  closed loop: consumers drain a pre-filled backlog with explicit acks, no nacks:
#            the cost of the ack path
#
#   BASELINE=/tmp/regent-old bench/retry.sh     # ROUNDS=2 DURATION=40 RATE=5 NACK_EVERY=5
#                                               # BACKOFF=1000 CONSUMERS=8
#
# Each broker under test is `regent serve` on the cluster of an idle `regent dev`, both with
# PEER_WAKEUPS=false (a lone broker's wakeups only). Prints e2e p50 / p90 / p99 / max and pop-ack
# msg/s per build and round, and this build's ratio to the baseline.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-2}
DURATION=${DURATION:-40}
RATE=${RATE:-5}
CONSUMERS=${CONSUMERS:-8}
NACK_EVERY=${NACK_EVERY:-5}
BACKOFF=${BACKOFF:-1000}
PORT=${PORT:-6730}
# Eight consumers for a load one could carry: while one backs off the others are idle, so
# the latency is the redelivery's, not queueing (with four, each asleep a quarter of the
# time, the tail is queueing). Without a wakeup the retry waits for the first parked pop's
# timer recheck: the more consumers, the sooner one of them rechecks.
RETRY="--scenario end-to-end --rate $RATE --push-batch 1 --pop-batch 1 --producers 1
    --consumers $CONSUMERS --partitions 4 --nack-every $NACK_EVERY --nack-backoff $BACKOFF --duration $DURATION"
POP_ACK="--scenario pop-ack --consumers 8 --pop-batch 100 --prefill 200000"

. bench/lib.sh
export PEER_WAKEUPS=false
trap stop_both EXIT
start_dev "$PORT"
url="http://127.0.0.1:$((PORT + 1))"

# configure QUEUE: a retry budget no run exhausts, so no message nacked again and again is
# dead-lettered (the ledger would count it lost).
configure() {
    python3 - "$url" "$1" <<'PY'
import json, sys, urllib.request
url, queue = sys.argv[1], sys.argv[2]
body = json.dumps({"queue": queue, "options": {"retryLimit": 1000000}}).encode()
req = urllib.request.Request(f"{url}/api/v1/configure", body, {"content-type": "application/json"})
assert urllib.request.urlopen(req).status == 200
PY
}

builds=(this)
declare -A binary=([this]="$bin")
if [ -n "${BASELINE:-}" ]; then
    builds+=(baseline)
    binary[baseline]=$BASELINE
fi

for round in $(seq 1 "$ROUNDS"); do
    order=("${builds[@]}")
    if [ $((round % 2)) -eq 0 ] && [ ${#builds[@]} -eq 2 ]; then order=(baseline this); fi
    for b in "${order[@]}"; do
        start_serve "${binary[$b]}" $((PORT + 1)) "$b"
        echo "round $round: $b (${binary[$b]})"
        configure "retry-$b-$round"
        # shellcheck disable=SC2086
        "$bin" bench --url "$url" $RETRY --queue "retry-$b-$round" --json --quiet \
            >"$work/retry-$b-$round.json"
        # shellcheck disable=SC2086
        "$bin" bench --url "$url" $POP_ACK --queue "pop-ack-$b-$round" --json --quiet \
            >"$work/pop-ack-$b-$round.json"
        stop_serve
    done
done

python3 - "$work" "$ROUNDS" "$RATE" "$NACK_EVERY" "$BACKOFF" "${builds[@]}" <<'PY'
import json, sys
work, rounds, rate, every, backoff = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
builds = sys.argv[6:]
def load(name):
    r = json.load(open(f"{work}/{name}.json"))
    assert r["errors"] == 0, f"{name}: {r['errors']} errors: {r['first_error']}"
    return r
print()
print(f"end-to-end latency with every {every}th batch nacked and its consumer backing off "
      f"{backoff} ms, ms: p50 / p90 / p99 / max (samples); {rate} msg/s open loop; "
      "and pop-ack msg/s")
print(f"{'build':<9} {'round':<6} {'latency':<46} {'pop-ack':>9}")
for b in builds:
    for rnd in range(1, rounds + 1):
        e = load(f"retry-{b}-{rnd}")["end_to_end_latency"]
        cell = (f"{e['p50_ms']:7.1f} / {e['p90_ms']:7.1f} / {e['p99_ms']:7.1f} / "
                f"{e['max_ms']:7.1f} ({e['count']})")
        pa = load(f"pop-ack-{b}-{rnd}")["delivery_rate"]
        print(f"{b:<9} {rnd:<6} {cell:<46} {pa:>9,.0f}")
if len(builds) == 2:
    print()
    print(f"{'round':<6} {'p99 this/baseline':>18} {'pop-ack this/baseline':>22}")
    for rnd in range(1, rounds + 1):
        p99 = [load(f"retry-{b}-{rnd}")["end_to_end_latency"]["p99_ms"] for b in builds]
        pa = [load(f"pop-ack-{b}-{rnd}")["delivery_rate"] for b in builds]
        print(f"{rnd:<6} {p99[0] / p99[1]:>18.2f} {pa[0] / pa[1]:>22.2f}")
PY
