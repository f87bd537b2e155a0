#!/usr/bin/env bash
# Throughput with the xmin horizon held (issues 36 and 49): a session opens a transaction
# (`BEGIN; SELECT txid_current();`, then idles in it) before the load starts and ends it
# (`COMMIT`) after DURATION seconds of load, so VACUUM can remove no row version that dies
# meanwhile; the load then goes on for RECOVER seconds. SKIP LOCKED job queues that update or
# delete a row per message lose much of their dequeue rate this way, the longer the more.
#
# Each run is on a fresh `regent dev` cluster, in the shapes of bench/alternatives.sh (256 B
# payloads, 8 producers, 8 consumers; job-queue: push 1, pop 1, ack 1; batch: push 100, pop
# 100), free (no held horizon, DURATION seconds) and held (DURATION held, then RECOVER
# released), the order alternating per round, for each system:
#   regent  `regent bench --scenario end-to-end --interval INTERVAL` (the holder in the
#           broker's database); its ledger must be OK (every message pushed delivered).
#   pgmq    pgmq from PGMQ_SQL (default ../shared/peers/pgmq/pgmq.sql; skipped with a line
#           saying so when absent), driven as bench/alternatives.sh does (pgbench: send or
#           send_batch; read with a 30 s visibility timeout, then delete), in a database of
#           its own on the cluster, the holder in that database (a transaction holds back
#           only its own database's horizon). No ledger. Its cluster is restarted once
#           with pg_stat_statements loaded, which counts the rows pgmq.send and pgmq.delete
#           return: read at each interval's end, the messages sent and deleted in between,
#           exactly (counted as each statement ends, just before its commit); at the end,
#           sent - deleted must be the rows left in the queue ("counts OK").
#
# Prints per run the delivered msg/s in every interval of INTERVAL seconds (exact counts;
# after the held window the intervals of the recovery, marked `|`), pushed msg/s, e2e p99
# (Regent, the whole run) and the ledger; at the held window's end (before the release; in a
# free run at DURATION) n_live_tup, n_dead_tup, the heap and index sizes of the consumer
# path's tables (`cursors` and every table named cursor* or lease*, `partitions`,
# `segments`; pgmq's `q_jobs`) and the dead row versions of every table. Then per shape and
# system: the per-interval held/free ratios (held interval i against free interval i of the
# same round) with their minimum, median and the worst interval; held/free of the window's
# mean; how many seconds after the release the delivered rate was back to 0.9x the free run's
# median interval (the end of the first interval that was, so at INTERVAL's resolution); and
# Regent's median ratio beside pgmq's.
#
#   ROUNDS=1 DURATION=600 bench/bloat.sh            # issue 49's measure: ten minutes held
#   ROUNDS=1 DURATION=15 INTERVAL=5 RECOVER=10 bench/bloat.sh job-queue    # a quick check
#
# DURATION (default 600) must be a multiple of INTERVAL (default 60); RECOVER defaults to
# 120; ROUNDS to 2; shapes as arguments (default job-queue batch); SYSTEMS="regent pgmq".
# A round at the defaults takes about 1.5 h (per shape four runs of 10 to 12 minutes, and
# the drains). pgmq's batch producers outrun its consumers (its backlog grows by some 40,000
# messages a second here): its cluster reaches about 10 GB by the end of a ten-minute run
# (each run's cluster is deleted after it).
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-600}
INTERVAL=${INTERVAL:-60}
RECOVER=${RECOVER:-120}
ROUNDS=${ROUNDS:-2}
PORT=${PORT:-6693}
PGMQ_SQL=${PGMQ_SQL:-../shared/peers/pgmq/pgmq.sql}
read -r -a systems <<<"${SYSTEMS:-regent pgmq}"
shapes=("$@")
[ ${#shapes[@]} -gt 0 ] || shapes=(job-queue batch)

for v in DURATION INTERVAL RECOVER ROUNDS; do
    [[ ${!v} =~ ^[0-9]+$ ]] || { echo "$v must be a whole number of seconds" >&2; exit 2; }
done
[ "$INTERVAL" -gt 0 ] && [ $((DURATION % INTERVAL)) -eq 0 ] && [ "$DURATION" -gt 0 ] ||
    { echo "DURATION ($DURATION) must be a positive multiple of INTERVAL ($INTERVAL)" >&2; exit 2; }
if [[ " ${systems[*]} " == *" pgmq "* ]] && [ ! -f "$PGMQ_SQL" ]; then
    echo "pgmq: skipped, $PGMQ_SQL not found (set PGMQ_SQL to pgmq's SQL-only install)"
    read -r -a systems <<<"${systems[*]/pgmq/}"
fi

. bench/lib.sh

# What this script starts in the background, ended by pid on exit.
load= sampler= holder= hold_fd=
cleanup() {
    for p in $load $sampler $holder; do kill "$p" 2>/dev/null || true; done
    stop_dev
}
trap cleanup EXIT

declare -A regent_args=(
    [job-queue]="--push-batch 1 --pop-batch 1 --producers 8 --consumers 8"
    [batch]="--push-batch 100 --pop-batch 100 --producers 8 --consumers 8"
)
declare -A per_call=([job-queue]=1 [batch]=100)

now_ms() { date +%s%3N; }

# hold URL: a session holding the xmin horizon of URL's database, from when this returns
# until release; sets $holder (psql's pid) and $hold_fd (what it reads).
hold() {
    rm -f "$work/holder.fifo"
    mkfifo "$work/holder.fifo"
    PGAPPNAME=regent-bloat-holder psql -qX "$1" <"$work/holder.fifo" >"$work/holder.out" 2>&1 &
    holder=$!
    exec {hold_fd}>"$work/holder.fifo"
    echo "BEGIN; SELECT txid_current();" >&"$hold_fd"
    # Until its transaction has an id: from then on the horizon is held.
    for _ in $(seq 1 100); do
        [ "$(psql -AtqX "$1" -c "SELECT count(*) FROM pg_stat_activity
              WHERE application_name = 'regent-bloat-holder' AND backend_xid IS NOT NULL")" = 1 ] &&
            return 0
        sleep 0.1
    done
    echo "the holding session did not start: $(cat "$work/holder.out")" >&2
    return 1
}

# release: ends the holding transaction (COMMIT) and its session; sets $released_ms, the wall
# clock (Unix ms) when both were over. (`\q`, not the end of its input: the load's processes
# inherited the FIFO's writing end.)
release() {
    printf 'COMMIT;\n\\q\n' >&"$hold_fd"
    exec {hold_fd}>&-
    wait "$holder" || true
    released_ms=$(now_ms)
    holder=
}

# tables URL FILE: the consumer path's tables as "name live dead heap_bytes index_bytes", and
# a last line "all dead" with the dead row versions of every table of URL's database.
tables() {
    psql -AtqX -F ' ' "$1" -c "
        SELECT relname, n_live_tup, n_dead_tup, pg_relation_size(relid), pg_indexes_size(relid)
        FROM pg_stat_user_tables
        WHERE relname IN ('partitions', 'segments') OR relname LIKE 'cursor%'
           OR relname LIKE 'lease%' OR (schemaname = 'pgmq' AND relname LIKE 'q\_%')
        ORDER BY relname" \
        -c "SELECT 'all', 'dead', coalesce(sum(n_dead_tup), 0) FROM pg_stat_user_tables" >"$2"
}

# Each run leaves $work/SYSTEM-SHAPE-MODE-ROUND.json: its intervals ({start_s, seconds,
# pushed, delivered}), the release (seconds after the first interval's start; held runs),
# the ledger, e2e p99 and the tables; the load file is regent bench's JSON report or pgmq's
# samples.
record() { # system shape mode round load-file tables-file released_ms|""
    python3 - "$@" <<'PY'
import json, sys
system, shape, mode, rnd, load, tables, released = sys.argv[1:8]
out = {"system": system, "shape": shape, "mode": mode, "round": int(rnd),
       "ledger": "n/a", "e2e_p99_ms": None}
if system == "regent":
    r = json.load(open(load))
    iv = r.get("intervals") or []
    t0 = iv[0]["start_unix_ms"] / 1000 if iv else 0.0
    out["intervals"] = [{k: i[k] for k in ("start_s", "seconds", "pushed", "delivered")} for i in iv]
    led = r["ledger"]
    out["ledger"] = "OK" if led is None or (led["lost"] == 0 and led["unknown"] == 0) else "FAILED"
    out["e2e_p99_ms"] = r["end_to_end_latency"]["p99_ms"]
else:
    # Samples: time (Unix s), messages sent so far, messages deleted so far.
    points = [(float(t), int(a), int(b)) for t, a, b in
              (l.split() for l in open(load) if l.strip())]
    t0 = points[0][0]
    out["intervals"] = [{"start_s": a[0] - t0, "seconds": b[0] - a[0], "pushed": b[1] - a[1],
                         "delivered": b[2] - a[2]} for a, b in zip(points, points[1:])]
    sent, deleted, left = (int(x) for x in open(load.replace(".samples", ".check")).read().split())
    out["counts"] = "OK" if sent - deleted == left else f"FAILED ({sent} - {deleted} != {left})"
out["release_s"] = int(released) / 1000 - t0 if released else None
rows = [l.split() for l in open(tables) if l.strip()]
out["tables"] = [[r[0]] + [int(x) for x in r[1:]] for r in rows if r[0] != "all"]
out["dead_all"] = next((int(r[2]) for r in rows if r[0] == "all"), None)
json.dump(out, open(f"{load.rsplit('/', 1)[0]}/{system}-{shape}-{mode}-{rnd}.json", "w"))

# The run's lines.
rate = lambda i: i["delivered"] / i["seconds"]
held = [i for i in out["intervals"] if out["release_s"] is None
        or i["start_s"] + i["seconds"] <= out["release_s"] + 1e-3]
after = out["intervals"][len(held):]
secs = sum(i["seconds"] for i in held) or 1e-9
p99 = f', e2e p99 {out["e2e_p99_ms"]:.1f} ms' if out["e2e_p99_ms"] is not None else ""
check = (f'ledger {out["ledger"]}' if system == "regent"
         else f'no ledger; counts {out["counts"]} (sent - deleted = rows left)')
print(f'{system:6} {shape:9} {mode:4} round {rnd}: delivered {sum(i["delivered"] for i in held) / secs:7.0f} msg/s, '
      f'pushed {sum(i["pushed"] for i in held) / secs:7.0f}{p99}, {check}')
print("  delivered msg/s per interval: " + " ".join(f"{rate(i):.0f}" for i in held)
      + ("  | " + " ".join(f"{rate(i):.0f}" for i in after) if after else ""))
where = "at the held window's end, before the release" if mode == "held" else "at DURATION"
print(f"  tables {where}:")
for name, live, dead, heap, idx in out["tables"]:
    print(f"    {name:16} n_live_tup {live:9}  n_dead_tup {dead:9}  heap {heap / 2**20:8.1f} MiB"
          f"  indexes {idx / 2**20:8.1f} MiB")
print(f"    {'all tables':16} n_dead_tup {out['dead_all']}")
PY
}

run_regent() { # shape mode round
    local base="$work/regent-$1-$2-$3" seconds=$DURATION released=
    start_dev "$PORT"
    if [ "$2" = held ]; then
        hold "$PG"
        seconds=$((DURATION + RECOVER))
    fi
    # The job-queue shape's producers outrun its consumers (the backlog grows): the drain
    # gets the time to deliver the rest, so that the ledger's check is about loss.
    "$gen" bench --url "http://127.0.0.1:$PORT" --scenario end-to-end ${regent_args[$1]} \
        --duration "$seconds" --interval "$INTERVAL" --drain-timeout $((600 + 2 * seconds)) \
        --json >"$base.load" 2>"$base.err" &
    load=$!
    wait_for "$base.err" "measuring"
    sleep "$DURATION"
    tables "$PG" "$base.tables"
    if [ "$2" = held ]; then
        release
        released=$released_ms
    fi
    wait "$load" || echo "regent bench exited with status $? (its ledger below)"
    load=
    stop_dev
    record regent "$1" "$2" "$3" "$base.load" "$base.tables" "$released"
}

# The messages pgmq's producers sent and its consumers deleted so far (the rows their
# statements returned), with the time (Unix s) just before they were read.
pgmq_counts="SELECT extract(epoch FROM statement_timestamp()),
    coalesce(sum(rows) FILTER (WHERE query LIKE 'SELECT pgmq.send%'), 0),
    coalesce(sum(rows) FILTER (WHERE query LIKE 'SELECT pgmq.delete(%'), 0)
    FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"

run_pgmq() { # shape mode round
    local base="$work/pgmq-$1-$2-$3" seconds=$DURATION released= n=${per_call[$1]}
    start_dev "$PORT"
    psql -qX "$PG" -c "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'"
    kill -INT "$broker"
    wait "$broker" || true
    start_dev "$PORT"
    pgmq_setup pgmq_bloat "$n"
    psql -qX "$pgmq_url" -c "CREATE EXTENSION pg_stat_statements"
    if [ "$2" = held ]; then
        hold "$pgmq_url"
        seconds=$((DURATION + RECOVER))
    fi
    # Counts now (the load's start), then at every interval's end and at the load's.
    : >"$base.samples"
    python3 - "$pgmq_url" "$base.samples" "$INTERVAL" "$seconds" "$pgmq_counts" <<'PY' &
import subprocess, sys, time
url, out, every, total, query = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
def sample():
    r = subprocess.run(["psql", "-AtqX", "-F", " ", url, "-c", query],
                       capture_output=True, text=True, check=True)
    with open(out, "a") as f:
        f.write(r.stdout)
    return float(r.stdout.split()[0])
t0 = sample()
for k in range(1, -(-total // every) + 1):
    time.sleep(max(0.0, t0 + min(k * every, total) - time.time()))
    sample()
PY
    sampler=$!
    wait_for "$base.samples" .
    pgmq_load "$seconds" &
    load=$!
    # The held window's last interval is counted before the release.
    while [ "$(wc -l <"$base.samples")" -le $((DURATION / INTERVAL)) ]; do
        kill -0 "$sampler" 2>/dev/null || { echo "pgmq's sampler failed" >&2; exit 1; }
        sleep 0.05
    done
    tables "$pgmq_url" "$base.tables"
    if [ "$2" = held ]; then
        release
        released=$released_ms
    fi
    wait "$load"
    wait "$sampler"
    load= sampler=
    # The counts' check: what was sent and not deleted is what the queue holds.
    psql -AtqX -F ' ' "$pgmq_url" -c "SELECT s.sent, s.deleted, (SELECT count(*) FROM pgmq.q_jobs)
        FROM ($pgmq_counts) AS s(t, sent, deleted)" >"$base.check"
    stop_dev
    record pgmq "$1" "$2" "$3" "$base.samples" "$base.tables" "$released"
}

for round in $(seq 1 "$ROUNDS"); do
    if [ $((round % 2)) -eq 1 ]; then order=(free held); else order=(held free); fi
    for shape in "${shapes[@]}"; do
        for sys in "${systems[@]}"; do
            for mode in "${order[@]}"; do
                "run_$sys" "$shape" "$mode" "$round"
            done
        done
    done
done

python3 - "$work" <<'PY'
import glob, json, os, statistics, sys
runs = {}
for f in glob.glob(os.path.join(sys.argv[1], "*-*-*-*.json")):
    r = json.load(open(f))
    runs[(r["system"], r["shape"], r["mode"], r["round"])] = r
rate = lambda i: i["delivered"] / i["seconds"]
print()
for shape in dict.fromkeys(k[1] for k in runs):
    medians = {}
    for system in sorted({k[0] for k in runs}, key=lambda s: (s != "regent", s)):
        ratios, window, back, ledgers = [], [], [], []
        for (s, sh, mode, rnd), held in sorted(runs.items()):
            if (s, sh, mode) != (system, shape, "held") or (system, shape, "free", rnd) not in runs:
                continue
            free = runs[(system, shape, "free", rnd)]
            ledgers += [r.get("counts", r["ledger"]) for r in (held, free)]
            rel = held["release_s"]
            h = [i for i in held["intervals"] if i["start_s"] + i["seconds"] <= rel + 1e-3]
            after = held["intervals"][len(h):]
            f = free["intervals"]
            for a, b in zip(h, f):
                if rate(b) > 0:
                    ratios.append((rate(a) / rate(b), rnd, a["start_s"], a["start_s"] + a["seconds"],
                                   rate(a), rate(b)))
            sec = lambda xs: sum(i["seconds"] for i in xs) or 1e-9
            fm = sum(i["delivered"] for i in f) / sec(f)
            if fm > 0:
                window.append(sum(i["delivered"] for i in h) / sec(h) / fm)
            # Back: the end of the first interval after the release at 0.9x the free median
            # (0 when the held window's last interval already was).
            goal = 0.9 * statistics.median(rate(i) for i in f) if f else 0
            if h and rate(h[-1]) >= goal:
                back.append("0 s (not below 0.9x at the release)")
            else:
                ok = next((i for i in after if rate(i) >= goal), None)
                back.append(f'{ok["start_s"] + ok["seconds"] - rel:.1f} s' if ok else
                            f"not within {sum(i['seconds'] for i in after):.0f} s")
            if len(h) != len(f):
                print(f"note: {system} {shape} round {rnd}: {len(h)} held intervals, {len(f)} free")
        if not ratios:
            continue
        r = [x[0] for x in ratios]
        worst = min(ratios)
        medians[system] = statistics.median(r)
        print(f"{shape:9} {system:6} held/free per interval: min {min(r):.2f}, median {medians[system]:.2f}"
              f" ({len(r)} intervals); worst: round {worst[1]}, {worst[2]:.0f}-{worst[3]:.0f} s,"
              f" {worst[4]:.0f} against {worst[5]:.0f} msg/s")
        print(f"{shape:9} {system:6} held/free of the window per round {', '.join(f'{x:.2f}' for x in window)};"
              f" back to 0.9x free after the release: {', '.join(back)}; {'ledgers' if system == 'regent' else 'counts'} {', '.join(ledgers)}")
    if "regent" in medians and len(medians) > 1:
        print(f"{shape:9} median held/free: " + ", ".join(f"{s} {m:.2f}" for s, m in medians.items()))
PY
