#!/usr/bin/env bash
# What authentication and per-tenant limits cost on the hot paths, side by side in one run:
# three brokers on one PostgreSQL (a persistent cluster, fsync and synchronous commit on),
#   off     authentication off (tenant `default`)
#   auth    JWT_ENABLED=true, HS256, a tenant from the token
#   limits  auth plus TENANT_LIMITS on every tenant, set high enough never to refuse, so the
#           bucket and the stored-message reservation run on every request
# and the same `regent bench` runs against each (a queue of its own per run: the generator's
# transaction ids repeat, so a reused queue would measure duplicates), in alternating order per round so the
# database's growth does not favour one of them. Prints msg/s per run and each as a ratio
# to `off` in the same round. (`regent bench` itself fails the script if a ledger loses a
# message.)
#
#   bench/security.sh                    # DURATION=15 ROUNDS=2
#   DURATION=10 ROUNDS=3 bench/security.sh push    # some runs only
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-15}
ROUNDS=${ROUNDS:-2}
PORT=${PORT:-6700}
declare -A runs=(
    [batch1]="--scenario push --push-batch 1 --producers 64"
    [push]="--scenario push --producers 16"
    [end-to-end]="--scenario end-to-end --producers 8 --pop-batch 1000"
)
order=(batch1 push end-to-end)
[ $# -gt 0 ] && order=("$@")

. bench/lib.sh
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    stop_dev
}
trap cleanup EXIT
# The `off` broker owns the private cluster; the others share it through DATABASE_URL.
start_dev "$PORT"

SECRET=bench-secret
LIMITS='{"*": {"rate": 1000000000, "burst": 1000000000, "maxMessages": 1000000000000}}'
start() { # name port extra-env...
    local name=$1 port=$2
    shift 2
    env -u TENANT_LIMITS NO_COLOR=1 DATABASE_URL="$PG" PORT="$port" JWT_ENABLED=true \
        JWT_SECRET=$SECRET "$@" "$bin" serve >"$work/$name.out" 2>"$work/$name.err" &
    pids+=($!)
    wait_for "$work/$name.out" "serving on"
}
start auth $((PORT + 1))
start limits $((PORT + 2)) TENANT_LIMITS="$LIMITS"
TOKEN=$("$bin" token --secret $SECRET --tenant bench --role admin --expires-in 86400)
declare -A port=([off]=$PORT [auth]=$((PORT + 1)) [limits]=$((PORT + 2)))

for round in $(seq 1 "$ROUNDS"); do
    brokers=(off auth limits)
    [ $((round % 2)) -eq 0 ] && brokers=(limits auth off)
    for s in "${order[@]}"; do
        for b in "${brokers[@]}"; do
            token=()
            [ "$b" != off ] && token=(--token "$TOKEN")
            # shellcheck disable=SC2086
            "$bin" bench --url "http://127.0.0.1:${port[$b]}" ${runs[$s]} --duration "$DURATION" \
                --queue "sec-$s-$b-$round" "${token[@]}" --json --quiet >"$work/$s-$b-$round.json"
        done
        python3 - "$work" "$s" "$round" <<'PY'
import json, sys
work, s, rnd = sys.argv[1:]
rate = {}
for b in ("off", "auth", "limits"):
    r = json.load(open(f"{work}/{s}-{b}-{rnd}.json"))
    rate[b] = r["delivery_rate"] if r["delivered"] else r["push_rate"]
    assert r["errors"] == 0, f"{b}: {r['errors']} errors"
print(f"round {rnd} {s:<11} " + "  ".join(
    f"{b} {rate[b]:>8.0f} msg/s ({rate[b] / rate['off']:.2f}x)" for b in rate))
PY
    done
done
