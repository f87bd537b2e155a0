#!/usr/bin/env bash
# Queen Streams on one PostgreSQL: a tumbling 1 s window summed per partition over 20
# partitions, run as the Python SDK runs it (`regent bench --scenario streams`: per popped
# partition one state read and one `/streams/v1/cycle`), beside the same pops, acks and sink
# pushes through `/api/v1/transaction` with the windows in memory (`--scenario streams-tx`):
# what a cycle costs against a plain transaction.
#
#   bench/streams.sh                         # ROUNDS=3 DURATION=20 RATE=2000 CONSUMERS=4
#   DURATION=5 ROUNDS=1 bench/streams.sh     # a smoke run
#
# Each round runs both modes, the order alternating per round, in three shapes:
#   drain   the consumers alone on a backlog of PREFILL messages (DURATION x 30,000 by
#           default) pushed before the measured window: steps/s and CPU per step with the same
#           pops and batches in both modes, the cycle's cost against the transaction's
#   max     closed loop: 4 producers pushing batches of 100, waiting while more than 10,000
#           messages are not yet committed by a step (`--max-backlog`): the pipeline's maximum
#           with its producers on the same machine
#   steady  open loop at RATE msg/s, one producer per partition pushing one message at a
#           time: the window latency at a steady rate, both modes carrying the same load
# Consumers: CONSUMERS, each popping 200 messages over up to 4 partitions (the SDK's
# defaults). One `regent dev` broker on a fresh persistent cluster (fsync and synchronous
# commit on), a fresh queue per run. Prints every run, then per shape the medians and
# streams / tx. The JSON reports stay in the work directory it names.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-20}
RATE=${RATE:-2000}
PREFILL=${PREFILL:-$((DURATION * 30000))}
CONSUMERS=${CONSUMERS:-4}
PORT=${PORT:-6750}
COMMON="--partitions 20 --consumers $CONSUMERS --pop-batch 200 --pop-partitions 4 --drain-timeout 60"
declare -A shapes=(
    [drain]="$COMMON --producers 0 --prefill $PREFILL --push-batch 100"
    [max]="$COMMON --producers 4 --push-batch 100 --max-backlog 10000"
    [steady]="$COMMON --producers 20 --push-batch 1 --rate $RATE"
)

. bench/lib.sh
trap stop_dev EXIT
start_dev "$PORT"
url="http://127.0.0.1:$PORT"

# CPU seconds so far of the broker and of this cluster's PostgreSQL, its nodes summed
# (`cluster_cpu`, bench/lib.sh).
cpu() {
    cluster_cpu "$broker" "$work/pg" | awk '{ s = 0; for (i = 2; i <= NF; i++) s += $i; printf "%s %.2f\n", $1, s }'
}

for round in $(seq 1 "$ROUNDS"); do
    if [ $((round % 2)) -eq 1 ]; then order=(streams streams-tx); else order=(streams-tx streams); fi
    for shape in drain max steady; do
        for mode in "${order[@]}"; do
            name="$shape-$mode-$round"
            echo "round $round: $shape $mode"
            # shellcheck disable=SC2086
            "$gen" bench --url "$url" --scenario "$mode" ${shapes[$shape]} --duration "$DURATION" \
                --queue "$name" --pg-url "$PG" --json >"$work/$name.json" 2>"$work/$name.err" &
            pid=$!
            # CPU from the measured window's start (after any prefill) to the end.
            until grep -q measuring "$work/$name.err" || ! kill -0 "$pid" 2>/dev/null; do
                sleep 0.05
            done
            read -r b0 p0 <<<"$(cpu)"
            wait "$pid" || true
            read -r b1 p1 <<<"$(cpu)"
            echo "$b0 $b1 $p0 $p1" >"$work/$name.cpu"
        done
    done
done

python3 - "$work" "$ROUNDS" "$RATE" <<'PY'
import json, statistics, sys
work, rounds, rate = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def figures(name):
    r = json.load(open(f"{work}/{name}.json"))
    b0, b1, p0, p1 = map(float, open(f"{work}/{name}.cpu").read().split())
    s, led = r["streams"], r["ledger"]
    steps = max(s["cycles_total"], 1)
    msgs = max(led["delivered_unique"], 1)
    win = led.get("windows") or {}
    ok = (led["lost"] == 0 and led["unknown"] == 0 and led["duplicates"] == 0 and win
          and not (win["wrong_sum"] or win["missing"] or win["duplicates"] or win["unknown"]))
    return {
        "in": r["push_rate"], "src": r["delivery_rate"], "steps": s["cycle_rate"],
        "msg/step": s["messages_per_cycle"], "windows": s["window_rate"],
        "commits": s["commits_per_cycle"] or 0,
        "broker": (b1 - b0) / steps * 1e6, "pg": (p1 - p0) / steps * 1e6,
        "broker/msg": (b1 - b0) / msgs * 1e6, "pg/msg": (p1 - p0) / msgs * 1e6,
        "step50": s["step_latency"]["p50_ms"], "step99": s["step_latency"]["p99_ms"],
        "win50": s["window_latency"]["p50_ms"], "win99": s["window_latency"]["p99_ms"],
        # On a backlog, windows closed as fast as the prefill had pushed them.
        **({k: float("nan") for k in ("windows", "win50", "win99")} if name.startswith("drain") else {}),
        "ledger": "OK" if ok else f"FAILED {led}", "errors": r["errors"],
        "first_error": r["first_error"],
    }
cols = [("in", "in msg/s", "{:>9.0f}"), ("src", "src msg/s", "{:>9.0f}"),
        ("steps", "steps/s", "{:>8.0f}"), ("msg/step", "msg/step", "{:>8.1f}"),
        ("windows", "windows/s", "{:>9.1f}"), ("commits", "commits/step", "{:>12.2f}"),
        ("broker", "broker us/step", "{:>14.0f}"), ("pg", "pg us/step", "{:>10.0f}"),
        ("broker/msg", "broker us/msg", "{:>13.1f}"), ("pg/msg", "pg us/msg", "{:>9.1f}"),
        ("step50", "step p50", "{:>8.1f}"), ("step99", "step p99", "{:>8.1f}"),
        ("win50", "window p50", "{:>10.1f}"), ("win99", "window p99", "{:>10.1f}")]
print()
print("steps: a state read and a cycle (streams) or a transaction (streams-tx); commits and CPU "
      "per step and per source message count the whole run (pushes and pops too); latencies in "
      "ms; window: from a window's end to the answer of the step that emitted it")
for shape in ("drain", "max", "steady"):
    label = {"drain": "drain (consumers alone on a backlog; no window figures: its windows are the prefill's)",
             "max": "max (closed loop)", "steady": f"steady ({rate} msg/s)"}[shape]
    print(f"\n{label}")
    print(f"{'mode':<11} {'round':<5} " + " ".join(f"{h:>{len(f.format(0))}}" for _, h, f in cols)
          + "  ledger")
    med = {}
    for mode in ("streams", "streams-tx"):
        runs = [figures(f"{shape}-{mode}-{r}") for r in range(1, rounds + 1)]
        for r, f in enumerate(runs, 1):
            cells = " ".join(fmt.format(f[k]) for k, _, fmt in cols)
            err = f" errors {f['errors']}: {f['first_error']}" if f["errors"] else ""
            print(f"{mode:<11} {r:<5} {cells}  {f['ledger']}{err}")
        med[mode] = {k: statistics.median(f[k] for f in runs) for k, _, _ in cols}
    ratio = lambda k: med["streams"][k] / med["streams-tx"][k] if med["streams-tx"][k] else float("nan")
    cells = " ".join(f"{ratio(k):>{len(fmt.format(0))}.2f}" for k, _, fmt in cols)
    print(f"{'streams/tx':<11} {'med':<5} {cells}")
PY
