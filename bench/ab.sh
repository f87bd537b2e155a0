#!/usr/bin/env bash
# This build against another, side by side on one machine: `bench/run.sh` (some of its runs)
# for each build in turn, each on a fresh `regent dev` cluster, the order alternating per
# round so neither build always gets the warmer machine. The load generator is this tree's
# `regent bench` for both.
#
#   BASELINE=/path/to/old/regent bench/ab.sh                  # push and end-to-end, 3 rounds
#   BASELINE=... ROUNDS=2 DURATION=10 bench/ab.sh push        # fewer
#
# Prints every run's figures, then per run the ratio this/baseline of each round and their
# median. The reports stay in the work directory it names.
set -euo pipefail
cd "$(dirname "$0")/.."

: "${BASELINE:?BASELINE must name the regent binary to compare with}"
ROUNDS=${ROUNDS:-3}
runs=("$@")
[ ${#runs[@]} -gt 0 ] || runs=(push end-to-end)
cargo build --release --locked --quiet
this=$(pwd)/target/release/regent
# The same file twice measures nothing: a baseline built into this tree's target/ leaves
# target/release/regent the baseline's (docs/benchmarking.md).
if cmp -s "$this" "$BASELINE"; then
    echo "ab: $this and $BASELINE are the same build: build the baseline in a target directory of its own" >&2
    exit 2
fi
out=$(mktemp -d /tmp/regent-ab-XXXXXX)
echo "reports: $out"

for round in $(seq 1 "$ROUNDS"); do
    if [ $((round % 2)) -eq 1 ]; then order=(this baseline); else order=(baseline this); fi
    for build in "${order[@]}"; do
        bin=$this
        [ "$build" = baseline ] && bin=$BASELINE
        dir="$out/$round-$build"
        mkdir -p "$dir"
        echo "== round $round: $build"
        BIN=$bin REPORTS=$dir bench/run.sh "${runs[@]}"
    done
done

python3 - "$out" "$ROUNDS" "${runs[@]}" <<'PY'
import json, os, statistics, sys
out, rounds, runs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def report(r, build, run):
    return json.load(open(os.path.join(out, f"{r}-{build}", f"{run}.json")))
figures = [("in msg/s", lambda j: j["push_rate"]), ("out msg/s", lambda j: j["delivery_rate"]),
           ("push p50 ms", lambda j: j["push_latency"]["p50_ms"]),
           ("push p99 ms", lambda j: j["push_latency"]["p99_ms"]),
           ("e2e p50 ms", lambda j: j["end_to_end_latency"]["p50_ms"]),
           ("e2e p99 ms", lambda j: j["end_to_end_latency"]["p99_ms"])]
print("\nthis / baseline, per round (odd rounds: this first), and the median:")
for run in runs:
    for name, f in figures:
        ratios = []
        for r in range(1, rounds + 1):
            a, b = f(report(r, "this", run)), f(report(r, "baseline", run))
            if b:
                ratios.append(a / b)
        if ratios:
            cells = " ".join(f"{x:.2f}" for x in ratios)
            print(f"{run:>12} {name:<12} {cells}   median {statistics.median(ratios):.2f}")
PY

