#!/usr/bin/env bash
# The broker's resident set around bursts of large pushes (issue 15): per build, a fresh
# `regent dev` cluster; the resident set at rest, then for each burst its peak and what is
# left 1, 5 and 10 s after the last answer. A push is ITEMS items (default 100,000, about
# 12 MB: under the 16 MiB body limit) with fresh transaction ids, so every item is stored.
#
#   bench/memory.sh                                  # this tree's release build
#   BASELINE=/path/to/old/regent bench/memory.sh     # both, alternating, ROUNDS=2
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-1}
ITEMS=${ITEMS:-100000}
PORT=${PORT:-6760}
cargo build --release --locked --quiet
builds=(this)
[ -n "${BASELINE:-}" ] && builds+=(baseline)

dir=$(mktemp -d /tmp/regent-memory-XXXXXX)
chmod 755 "$dir"
trap 'kill -INT $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
pid=

# body FILE TAG: a push of ITEMS items whose transaction ids start with TAG.
body() {
    python3 - "$1" "$2" "$ITEMS" <<'EOF'
import json, sys
path, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
pad = "x" * 24
items = [{"queue": "memory", "partition": f"p{i % 100}", "transactionId": f"{tag}-{i}",
          "payload": {"n": i, "pad": pad}} for i in range(n)]
with open(path, "w") as f:
    json.dump({"items": items}, f)
EOF
}

rss() { awk '/^VmRSS/ { printf "%d", $2 / 1024 }' "/proc/$pid/status"; }
hwm() { awk '/^VmHWM/ { printf "%d", $2 / 1024 }' "/proc/$pid/status"; }

# burst NAME COUNT PARALLEL: COUNT pushes, PARALLEL at a time; prints peak and settled.
burst() {
    local name=$1 count=$2 parallel=$3 i peak=0 r
    for i in $(seq 1 "$count"); do body "$dir/b$i.json" "$name-$RANDOM-$i"; done
    local start
    start=$(rss)
    (
        for i in $(seq 1 "$count"); do
            curl -sSf -o /dev/null -H 'content-type: application/json' \
                --data-binary "@$dir/b$i.json" "http://127.0.0.1:$PORT/api/v1/push" &
            if [ $((i % parallel)) -eq 0 ]; then wait; fi
        done
        wait
    ) &
    local load=$!
    while kill -0 "$load" 2>/dev/null; do
        r=$(rss)
        [ "$r" -gt "$peak" ] && peak=$r
        sleep 0.05
    done
    wait "$load"
    local after1 after5 after10
    sleep 1
    after1=$(rss)
    sleep 4
    after5=$(rss)
    sleep 5
    after10=$(rss)
    echo "  $name: $count x $ITEMS items, $parallel at a time: before $start MB, peak $peak MB, after 1 s $after1 MB, 5 s $after5 MB, 10 s $after10 MB"
}

for round in $(seq 1 "$ROUNDS"); do
    order=("${builds[@]}")
    [ $((round % 2)) -eq 0 ] && [ ${#builds[@]} -eq 2 ] && order=(baseline this)
    for build in "${order[@]}"; do
        bin=target/release/regent
        [ "$build" = baseline ] && bin=$BASELINE
        env -u JWT_ENABLED -u TENANT_LIMITS NO_COLOR=1 "$bin" dev --port "$PORT" \
            --data-dir "$dir/pg" >"$dir/out" 2>"$dir/err" &
        pid=$!
        for _ in $(seq 300); do grep -q "serving on" "$dir/out" 2>/dev/null && break; sleep 0.1; done
        sleep 2
        echo "round $round $build: at rest $(rss) MB"
        burst one 1 1
        burst sequential 3 1
        burst concurrent 4 4
        echo "  high-water mark $(hwm) MB"
        kill -INT "$pid"
        wait "$pid" || true
        pid=
        rm -rf "$dir/pg"
    done
done
