#!/usr/bin/env bash
# A resent push: every item a duplicate (a producer retrying whole batches after a lost
# answer). Per build and round: a fresh `regent dev` cluster (persistent, fsync on), one
# DURATION s push run (batch 1000, 16 producers, 100 partitions), then the same run again:
# the generator's transaction ids repeat, so every item of the second is a duplicate.
#
#   BASELINE=/path/to/old/regent bench/resend.sh     # ROUNDS=2 DURATION=10
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-2}
DURATION=${DURATION:-10}
PORT=${PORT:-6750}
cargo build --release --locked --quiet
gen=target/release/regent
builds=(this)
[ -n "${BASELINE:-}" ] && builds+=(baseline)
args="--url http://127.0.0.1:$PORT --scenario push --queue resend --producers 16 --push-batch 1000
      --partitions 100 --duration $DURATION --quiet --json"
rate() { python3 -c 'import json,sys; j=json.load(sys.stdin); print(f"{j[\"push_rate\"]:.0f} msg/s, p99 {j[\"push_latency\"][\"p99_ms\"]:.0f} ms")'; }
for round in $(seq 1 "$ROUNDS"); do
    order=("${builds[@]}")
    [ $((round % 2)) -eq 0 ] && [ ${#builds[@]} -eq 2 ] && order=(baseline this)
    for build in "${order[@]}"; do
        bin=$gen
        [ "$build" = baseline ] && bin=$BASELINE
        dir=$(mktemp -d /tmp/regent-resend-XXXXXX)
        chmod 755 "$dir"
        env -u JWT_ENABLED -u TENANT_LIMITS NO_COLOR=1 "$bin" dev --port "$PORT" --data-dir "$dir/pg" \
            >"$dir/out" 2>"$dir/err" &
        pid=$!
        for _ in $(seq 300); do grep -q "serving on" "$dir/out" 2>/dev/null && break; sleep 0.1; done
        first=$("$gen" bench $args | rate)
        again=$("$gen" bench $args | rate)
        echo "round $round $build: first $first; resent (all duplicates) $again; broker cpu $(ps -o cputime= -p $pid)"
        kill -INT "$pid"
        wait "$pid" || true
        rm -rf "$dir"
    done
done
