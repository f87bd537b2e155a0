#!/usr/bin/env bash
# A soak (issues 15 and 36): MINUTES (120) of mixed load on one broker and its own PostgreSQL (fsync
# and synchronous commit on), in SEGMENT-second stretches, each with fresh queue names so
# every stretch's ledger stands alone:
#   - batch-1 pushes at 300 msg/s fanned out to 3 consumer groups, every 97th ack a nack;
#   - batch-100 pushes at 3,000 msg/s, one group, every 1,000th ack a nack;
#   - a transaction pipeline (bench/soak-pipeline.py): pop, then ack and push forward in one
#     /api/v1/transaction;
#   - retention on with a short window (retentionSeconds 120, completedRetentionSeconds 60,
#     a pass every 10 s).
# In the middle of the second stretch (KILL_AT) the broker is SIGKILLed and restarted; in the
# middle of the fourth (PG_RESTART_AT), PostgreSQL is restarted (`pg_ctl restart -m fast`); in
# the middle of the sixth (CUT_AT), the broker's link to PostgreSQL is cut silently for
# CUT_SECONDS (30): the broker runs on a test host of its own (a network namespace, as the
# fault suite's network case does) and the link's carrier is taken away, so its packets vanish
# with no reset. Without network namespaces the broker runs beside PostgreSQL and the cut is
# skipped, with a line saying so. After each stretch: its ledgers and p99s, the broker's
# resident set, and the database's tables and indexes; at the end, the resident set over time
# and the largest tables. Each must level off, not climb.
#
#   bench/soak.sh                  # MINUTES=120 SEGMENT=600; KEEP=1 keeps the work directory
#   MINUTES=6 SEGMENT=60 bench/soak.sh   # a quick run of every step
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES=${MINUTES:-120}
SEGMENT=${SEGMENT:-600}
PORT=${PORT:-6780}
PGPORT=${PGPORT:-6781}
KILL_AT=${KILL_AT:-2}
PG_RESTART_AT=${PG_RESTART_AT:-4}
CUT_AT=${CUT_AT:-6}
CUT_SECONDS=${CUT_SECONDS:-30}
cargo build --release --locked --quiet
bin=$(pwd)/target/release/regent
pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
work=$(mktemp -d /tmp/regent-soak-XXXXXX)
chmod 755 "$work"
chown postgres "$work"
echo "work directory: $work"
PG=postgres://postgres@127.0.0.1:$PGPORT/postgres
# The broker's test host: a network namespace with a link for its clients (10.79.1.0/24) and
# one to PostgreSQL (10.80.1.0/24), as tests/faults/harness/netns.rs makes them.
ns=regent-soak
netns_down() {
    ip netns del "$ns" 2>/dev/null || true
    ip link del rgsoakdb 2>/dev/null || true
    ip link del rgsoakcl 2>/dev/null || true
}
netns_up() {
    netns_down
    ip netns add "$ns" && ip netns exec "$ns" ip link set lo up || return 1
    for pair in rgsoakcl:79 rgsoakdb:80; do
        local link=${pair%:*} subnet=${pair#*:}
        ip link add "$link" type veth peer name "${link}i" &&
            ip link set "${link}i" netns "$ns" &&
            ip addr add "10.$subnet.1.1/24" dev "$link" &&
            ip link set "$link" up &&
            ip netns exec "$ns" ip addr add "10.$subnet.1.2/24" dev "${link}i" &&
            ip netns exec "$ns" ip link set "${link}i" up || return 1
    done
}
if netns_up 2>"$work/netns.err"; then
    launch=(ip netns exec "$ns")
    url=http://10.79.1.2:$PORT
    broker_pg=postgres://postgres@10.80.1.1:$PGPORT/postgres
    listen="127.0.0.1,10.80.1.1"
else
    echo "network namespaces unavailable ($(head -1 "$work/netns.err")): the network cut is skipped"
    netns_down
    launch=()
    url=http://127.0.0.1:$PORT
    broker_pg=$PG
    listen="127.0.0.1"
    CUT_AT=0
fi

as_pg() { su postgres -s /bin/bash -c "$*"; }
pg_ctl() { as_pg "$pgbin/pg_ctl -D $work/pg -l $work/pg.log -w $*"; }
sql() { "$pgbin/psql" -X -q -At "$PG" -c "$1"; }

broker=
sampler=
cleanup() {
    [ -n "$sampler" ] && kill "$sampler" 2>/dev/null
    [ -n "$broker" ] && kill -INT "$broker" 2>/dev/null && wait "$broker" 2>/dev/null
    pg_ctl stop -m fast >/dev/null 2>&1 || true
    netns_down
    if [ -n "${KEEP:-}" ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

as_pg "$pgbin/initdb -D $work/pg -A trust -U postgres" >/dev/null
echo "host all all 10.80.1.0/24 trust" >>"$work/pg/pg_hba.conf"
pg_ctl "-o '-p $PGPORT -k $work -c listen_addresses=$listen -c shared_preload_libraries=pg_stat_statements'" start >/dev/null

start_broker() {
    "${launch[@]}" env -u JWT_ENABLED -u TENANT_LIMITS NO_COLOR=1 DATABASE_URL="$broker_pg" \
        HOST=0.0.0.0 PORT="$PORT" RETENTION_INTERVAL=10000 "$bin" serve \
        >>"$work/broker.out" 2>>"$work/broker.err" &
    broker=$!
    for _ in $(seq 300); do
        curl -sf -o /dev/null "$url/health" && return 0
        sleep 0.1
    done
    tail "$work/broker.err" >&2
    return 1
}
start_broker

# The resident set every 10 s, across restarts (the broker's pid is read from a file).
echo "$broker" >"$work/broker.pid"
(
    start=$(date +%s)
    while sleep 10; do
        pid=$(cat "$work/broker.pid")
        rss=$(awk '/^VmRSS/ { printf "%d", $2 / 1024 }' "/proc/$pid/status" 2>/dev/null || echo -)
        echo "$(($(date +%s) - start)) $rss"
    done
) >"$work/rss.log" &
sampler=$!

configure() {
    curl -sf -o /dev/null -H 'content-type: application/json' -X POST "$url/api/v1/configure" \
        -d "{\"queue\":\"$1\",\"options\":{\"retentionEnabled\":true,\"retentionSeconds\":120,\"completedRetentionSeconds\":60,\"leaseTime\":30,\"retryLimit\":3}}"
}

summary() {
    python3 - "$1" "$2" <<'EOF'
import json, sys
name, path = sys.argv[1], sys.argv[2]
j = json.load(open(path))
if "push_latency" in j:
    l = j["ledger"] or {}
    print(f"  {name}: pushed {j['pushed']}, delivered {j['delivered']}, ledger lost {l.get('lost')} "
          f"unknown {l.get('unknown')} duplicates {l.get('duplicates')}; push p99 "
          f"{j['push_latency']['p99_ms']:.1f} ms, e2e p99 {j['end_to_end_latency']['p99_ms']:.1f} ms; "
          f"errors {j['errors']}")
else:
    print(f"  {name}: pushed {j['pushed']}, delivered {j['delivered_unique']}, lost {j['lost']}, "
          f"unknown {j['unknown']}, duplicates {j['duplicates']}, transactions {j['transactions']} "
          f"(refused {j['refused']}); 503s {j['s503']} ({j['s503_without_retry_after']} without "
          f"Retry-After), other 5xx {j['s5xx_other']}, transport errors {j['transport_errors']}")
EOF
}

segments=$((MINUTES * 60 / SEGMENT))
gen=(--url "$url" --partitions 20 --payload 256 --duration "$SEGMENT" --drain-timeout 90 --json --quiet)
for seg in $(seq 1 "$segments"); do
    for q in s$seg-b1 s$seg-b100 s$seg-pipe-in s$seg-pipe-out; do configure "soak-$q"; done
    "$bin" bench "${gen[@]}" --scenario fan-out --groups 3 --queue soak-s$seg-b1 --push-batch 1 \
        --producers 4 --consumers 2 --pop-batch 10 --rate 300 --nack-every 97 \
        >"$work/s$seg-b1.json" 2>"$work/s$seg-b1.err" &
    a=$!
    "$bin" bench "${gen[@]}" --scenario end-to-end --queue soak-s$seg-b100 --push-batch 100 \
        --producers 2 --consumers 2 --pop-batch 100 --rate 3000 --nack-every 1000 \
        >"$work/s$seg-b100.json" 2>"$work/s$seg-b100.err" &
    b=$!
    python3 bench/soak-pipeline.py "$url" "soak-s$seg-pipe" "$SEGMENT" >"$work/s$seg-pipe.json" &
    c=$!
    if [ "$seg" -eq "$KILL_AT" ]; then
        sleep $((SEGMENT / 2))
        echo "  $(date +%T) SIGKILL the broker, and start it again"
        kill -KILL "$broker"
        wait "$broker" 2>/dev/null || true
        start_broker
        echo "$broker" >"$work/broker.pid"
    elif [ "$seg" -eq "$PG_RESTART_AT" ]; then
        sleep $((SEGMENT / 2))
        echo "  $(date +%T) pg_ctl restart -m fast"
        pg_ctl "-m fast restart" >/dev/null
    elif [ "$seg" -eq "$CUT_AT" ]; then
        sleep $((SEGMENT / 2))
        echo "  $(date +%T) the link to PostgreSQL cut for $CUT_SECONDS s"
        ip link set rgsoakdb down
        sleep "$CUT_SECONDS"
        ip link set rgsoakdb up
    fi
    wait $a $b $c || true
    echo "stretch $seg of $segments ($(date +%T)):"
    summary "batch 1, 3 groups" "$work/s$seg-b1.json"
    summary "batch 100" "$work/s$seg-b100.json"
    summary "pipeline" "$work/s$seg-pipe.json"
    echo "  broker resident set $(tail -1 "$work/rss.log" | cut -d' ' -f2) MB; tables" \
        "$(sql "SELECT pg_size_pretty(sum(pg_table_size(c.oid))) || ', indexes ' ||
                      pg_size_pretty(sum(pg_indexes_size(c.oid)))
                 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = 'public' AND c.relkind = 'r'")"
done

echo "resident set (seconds MB), every minute:"
awk 'NR % 6 == 0 { printf "  %s s: %s MB\n", $1, $2 }' "$work/rss.log"
echo "table sizes at the end:"
sql "SELECT relname || ': ' || pg_size_pretty(pg_total_relation_size(c.oid))
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND c.relkind = 'r'
      ORDER BY pg_total_relation_size(c.oid) DESC LIMIT 12" | sed 's/^/  /'
echo "database: $(sql "SELECT pg_size_pretty(pg_database_size('postgres'))")"
