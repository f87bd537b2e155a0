#!/usr/bin/env bash
# Regent on one PostgreSQL and on Citus with one and with two workers, side by side on this
# machine: push and end-to-end messages per second, and the CPU seconds of the broker and of
# each PostgreSQL node (coordinator, workers) during each run. Every node shares this
# machine's cores, so the figures show Citus's overhead and the shape of scaling, not what
# more machines would add (docs/scaling.md says how to read them).
#
#   bench/citus.sh                      # ROUNDS=2, DURATION=20 s a run
#   ROUNDS=1 DURATION=10 bench/citus.sh push
#   BIN=/path/to/other/regent LAYOUTS=citus2 ROUNDS=1 bench/citus.sh   # one layout, another build
#
# Each round starts every layout on a fresh persistent cluster (fsync and synchronous commit
# on), in alternating order (one PostgreSQL, Citus 1, Citus 2, then the reverse), and runs
# the scenarios on it. Prints one line per run, then each Citus figure as a ratio to one
# PostgreSQL's in the same round.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-20}
ROUNDS=${ROUNDS:-2}
PORT=${PORT:-6691}
declare -A runs=(
    [push]="--scenario push --producers 16"
    [end-to-end]="--scenario end-to-end --producers 8 --pop-batch 1000"
)
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(push end-to-end)

scripts/citus >/dev/null || { scripts/citus | tail -1; exit 1; }
. bench/lib.sh

layout_pid=
stop_layout() {
    [ -n "$layout_pid" ] || return 0
    kill -INT "$layout_pid" 2>/dev/null || true
    wait "$layout_pid" 2>/dev/null || true
    layout_pid=
}
trap 'stop_layout; rm -rf "$work"/pg-*' EXIT

# start_layout NAME WORKERS: `regent dev` on a fresh cluster in $work/pg-NAME, on Citus with
# WORKERS workers unless 0.
start_layout() {
    local citus=()
    [ "$2" -eq 0 ] || citus=(--citus "$2")
    env -u JWT_ENABLED -u TENANT_LIMITS NO_COLOR=1 "$bin" dev --port "$PORT" \
        --data-dir "$work/pg-$1" "${citus[@]}" >"$work/$1.out" 2>"$work/$1.err" &
    layout_pid=$!
    wait_for "$work/$1.out" "serving on"
}

# CPU seconds so far: the broker, then each node (`cluster_cpu`, bench/lib.sh).
cpu() {
    cluster_cpu "$layout_pid" "$work/pg-$1"
}

echo "layout round scenario in_msg_s out_msg_s e2e_p50_ms e2e_p99_ms cpu_broker cpu_nodes ledger" \
    >"$work/results.txt"
for round in $(seq 1 "$ROUNDS"); do
    read -ra order <<<"${LAYOUTS:-single citus1 citus2}"
    [ $((round % 2)) -eq 1 ] || order=($(printf '%s\n' "${order[@]}" | tac))
    for name in "${order[@]}"; do
        workers=${name#citus}
        [ "$name" != single ] || workers=0
        rm -rf "$work/pg-$name"
        start_layout "$name" "$workers"
        for s in "${scenarios[@]}"; do
            before=$(cpu "$name")
            "$gen" bench --url "http://127.0.0.1:$PORT" ${runs[$s]} --duration "$DURATION" \
                --json --quiet >"$work/$name-$round-$s.json"
            after=$(cpu "$name")
            python3 - "$work/$name-$round-$s.json" "$name" "$round" "$s" "$before" "$after" \
                >>"$work/results.txt" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
b, a = [list(map(float, x.split())) for x in sys.argv[5:7]]
used = [f"{y - x:.1f}" for x, y in zip(b, a)]
led = r["ledger"]
ledger = "n/a" if led is None else ("OK" if led["lost"] == 0 and led["unknown"] == 0 else "FAILED")
el = r["end_to_end_latency"]
print(sys.argv[2], sys.argv[3], sys.argv[4], round(r["push_rate"]), round(r["delivery_rate"]),
      f'{el["p50_ms"]:.1f}', f'{el["p99_ms"]:.1f}', used[0], "/".join(used[1:]), ledger)
PY
            tail -1 "$work/results.txt"
        done
        stop_layout
        rm -rf "$work/pg-$name"
    done
done

python3 - "$work/results.txt" <<'PY'
import collections, sys
rows = [l.split() for l in open(sys.argv[1]).read().splitlines()[1:]]
by = {(r[0], r[1], r[2]): r for r in rows}
print("\nratios to one PostgreSQL in the same round (in msg/s; out msg/s):")
for (name, rnd, s), r in sorted(by.items()):
    if name == "single" or ("single", rnd, s) not in by:
        continue
    base = by[("single", rnd, s)]
    ratio = lambda i: float(r[i]) / float(base[i]) if float(base[i]) else float("nan")
    print(f"  {name} round {rnd} {s}: in {ratio(3):.2f}x, out {ratio(4):.2f}x")
PY
echo "results: $work/results.txt"
