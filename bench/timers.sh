#!/usr/bin/env bash
# Queen's timers: how late a timer reaches its consumer at RATE timers/s, first with no other
# timer pending, then with PENDING timers (due in a day) in the table (`regent bench
# --scenario timers`). The issue's figures: lateness p50/p99 at 1,000 timers/s, and with
# 1,000,000 timers pending.
#
#   bench/timers.sh                                   # RATE=1000 DURATION=60 PENDING=1000000
#   DURATION=5 PENDING=10000 bench/timers.sh          # a smoke run
#   PENDING_VIA=sql bench/timers.sh                   # the pending timers by one INSERT
#
# Each measurement runs on a fresh `regent dev` cluster (fsync and synchronous commit on):
# 4 producers schedule batches of 20 timers (`POST /api/v1/timers`), each due DELAY ms after
# the database's now(), into one partition (as Queen's timers land in `Default`); 2 consumers
# long-poll the queue (batch 500, acknowledged at delivery). Lateness is the time each pop
# answer arrived minus the timer's promised deliverAt: the generator's clock against the
# database's, one clock on one machine. The broker's own histogram
# (`regent_timer_lateness_seconds`: the fire's commit minus deliverAt, by bucket bounds) is
# printed beside it. The pending timers are loaded through the API before the measured window
# (1,000 per request, 4 at a time), and the load's length is printed: about two statements per
# timer, so 1,000,000 take about 20 minutes on 2 cores); with PENDING_VIA=sql they are written
# by one `INSERT … SELECT FROM generate_series` into `timers` instead (seconds; the rows are
# what a schedule writes, due a day later, in queue `timers-pending`), which measures the same
# table state. CPU of the broker and of PostgreSQL is counted over the
# measured window and its drain only. The JSON reports stay in the work directory it names.
set -euo pipefail
cd "$(dirname "$0")/.."

RATE=${RATE:-1000}
DURATION=${DURATION:-60}
PENDING=${PENDING:-1000000}
DELAY=${DELAY:-1000}
PENDING_VIA=${PENDING_VIA:-api}
PORT=${PORT:-6760}
ARGS="--scenario timers --rate $RATE --timer-delay-ms $DELAY --timer-batch 20 --producers 4
      --partitions 1 --consumers 2 --pop-batch 500 --drain-timeout 60"

. bench/lib.sh
trap stop_dev EXIT
url="http://127.0.0.1:$PORT"

# CPU seconds so far of the broker and of this cluster's PostgreSQL (`cluster_cpu`).
cpu() {
    cluster_cpu "$broker" "$work/pg" | awk '{ s = 0; for (i = 2; i <= NF; i++) s += $i; printf "%s %.2f\n", $1, s }'
}

for pending in 0 "$PENDING"; do
    name="pending-$pending"
    start_dev "$PORT"
    echo "timers at $RATE/s for $DURATION s, $pending pending (fresh cluster)"
    load=$pending
    if [ "$PENDING_VIA" = sql ] && [ "$pending" -gt 0 ]; then
        psql "$PG" -qc "INSERT INTO timers (tenant, queue, timer_key, txn, message_id, partition,
                                             payload, deliver_at)
                        SELECT 'default', 'timers-pending', 'p/' || g, 'pt-' || g,
                               gen_random_uuid(), 'Default', '{}',
                               now() + interval '1 day' + g * interval '1 ms'
                          FROM generate_series(1, $pending) g" -c "ANALYZE timers"
        load=0
    fi
    # shellcheck disable=SC2086
    "$gen" bench --url "$url" $ARGS --duration "$DURATION" --pending "$load" \
        --queue "timers-$pending" --pg-url "$PG" --json >"$work/$name.json" 2>"$work/$name.err" &
    pid=$!
    # CPU from the measured window's start (after the pending load) to the end.
    until grep -q measuring "$work/$name.err" || ! kill -0 "$pid" 2>/dev/null; do
        sleep 0.1
    done
    read -r b0 p0 <<<"$(cpu)"
    wait "$pid" || true
    read -r b1 p1 <<<"$(cpu)"
    echo "$b0 $b1 $p0 $p1" >"$work/$name.cpu"
    stop_dev
done

python3 - "$work" "$PENDING" "$RATE" "$DELAY" <<'PY'
import json, sys
work, pending, rate, delay = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
print(f"\ntimers at {rate}/s, due {delay} ms after scheduling; latencies in ms; late: pop answer "
      "minus deliverAt; broker: regent_timer_lateness_seconds (fire commit minus deliverAt), "
      "bucket upper bounds; CPU and commits per 1,000 timers over the window and its drain")
cols = ["pending", "load s", "sched/s", "late p50", "late p90", "late p99", "late max",
        "broker p50", "broker p99", "broker mean", "sched p50", "sched p99",
        "broker cpu", "pg cpu", "commits", "check"]
print("  ".join(f"{c:>11}" for c in cols))
for n in ("0", pending):
    try:
        r = json.load(open(f"{work}/pending-{n}.json"))
    except (OSError, ValueError):
        print(f"{n:>11}  no report: see {work}/pending-{n}.err")
        continue
    b0, b1, p0, p1 = map(float, open(f"{work}/pending-{n}.cpu").read().split())
    t = r["timers"]
    k = max(t["delivered"], 1) / 1000
    late, sched, b = t["lateness"], t["schedule_latency"], t.get("broker_lateness") or {}
    le = lambda v: "-" if not b else (f"<={v:g}" if v is not None else ">60000")
    ok = (t["missing"] == 0 and t["duplicates"] == 0 and t["unknown"] == 0 and t["early"] == 0)
    check = "OK" if ok else (f"FAILED missing {t['missing']} dup {t['duplicates']} "
                             f"unknown {t['unknown']} early {t['early']}")
    if r["errors"]:
        check += f" errors {r['errors']}: {r['first_error']}"
    cells = [f"{t['pending_at_start'] if t['pending_at_start'] is not None else n}",
             f"{t['pending_load_seconds']:.1f}", f"{t['schedule_rate']:.0f}",
             f"{late['p50_ms']:.1f}", f"{late['p90_ms']:.1f}", f"{late['p99_ms']:.1f}",
             f"{late['max_ms']:.1f}", le(b.get("p50_le_ms")), le(b.get("p99_le_ms")),
             f"{b['mean_ms']:.1f}" if b else "-", f"{sched['p50_ms']:.1f}",
             f"{sched['p99_ms']:.1f}", f"{(b1 - b0) / k:.2f} s", f"{(p1 - p0) / k:.2f} s",
             f"{(r['commits'] or 0) / k:.0f}"]
    print("  ".join(f"{c:>11}" for c in cells) + f"  {check}")
PY
