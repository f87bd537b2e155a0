#!/usr/bin/env bash
# What PostgreSQL row-level security would cost as a second wall behind the broker's own
# tenant scoping (issue 4 asked to measure before deciding). pgbench runs the push path's
# statements (the partition lookup, `regent_append` of 100 messages of 256 bytes, a read of
# the newest segment) as a role that RLS applies to, with and without policies, in pairs
# whose order alternates so the growing database favours neither:
#   off       no policies (what Regent does)
#   entry     policies on the tables that carry a tenant (queues, partitions, dead_letters)
#             plus `set_config('regent.tenant', …)` per transaction
#   all       entry, plus segments and cursors through an EXISTS on partitions
# (the transaction index is keyed by a hash and holds no tenant, so no policy can cover it).
#
#   bench/rls.sh                 # DURATION=20 ROUNDS=3 CLIENTS=8
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-20}
ROUNDS=${ROUNDS:-3}
CLIENTS=${CLIENTS:-8}
PORT=${PORT:-6710}

. bench/lib.sh
trap stop_dev EXIT
# `regent dev` makes and migrates the cluster; 16 partitions of queue `q` are pushed to it.
start_dev "$PORT"
for i in $(seq 1 16); do
    curl -sf -o /dev/null -H 'content-type: application/json' \
        -d "{\"items\":[{\"queue\":\"q\",\"partition\":\"p$i\",\"payload\":1}]}" \
        "http://127.0.0.1:$PORT/api/v1/push"
done
APP=${PG/postgres:\/\/postgres@/postgres://rls_app@}
psql -q -v ON_ERROR_STOP=1 "$PG" <<'SQL'
CREATE ROLE rls_app LOGIN NOSUPERUSER;
GRANT ALL ON ALL TABLES IN SCHEMA public TO rls_app;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO rls_app;
CREATE POLICY t ON queues USING (tenant = current_setting('regent.tenant', true));
CREATE POLICY t ON partitions USING (tenant = current_setting('regent.tenant', true));
CREATE POLICY t ON dead_letters USING (tenant = current_setting('regent.tenant', true));
CREATE POLICY t ON segments USING (EXISTS (SELECT 1 FROM partitions p WHERE p.id = partition_id));
CREATE POLICY t ON cursors USING (EXISTS (SELECT 1 FROM partitions p WHERE p.id = partition_id));
SQL

body='SELECT p.id FROM queues q JOIN partitions p ON p.queue_id = q.id
  WHERE q.tenant = '"'default'"' AND q.name = '"'q'"' AND p.name = '"'p'"' || :part \gset
SELECT count(*) FROM regent_append(:id::uuid,
  ARRAY(SELECT gen_random_uuid() FROM generate_series(1, 100)),
  ARRAY(SELECT convert_to(repeat('"'x'"', 256), '"'UTF8'"') FROM generate_series(1, 100)), false);
SELECT length(frames) FROM segments WHERE partition_id = :id::uuid ORDER BY end_offset DESC LIMIT 1;
COMMIT;'
printf '\\set part random(1, 16)\nBEGIN;\n%s\n' "$body" >"$work/off.sql"
printf '\\set part random(1, 16)\nBEGIN;\nSELECT set_config('"'regent.tenant'"', '"'default'"', true);\n%s\n' \
    "$body" >"$work/on.sql"

policies() { # ENABLE|DISABLE tables...
    local what=$1
    shift
    for t in "$@"; do
        psql -q "$PG" -c "ALTER TABLE $t $what ROW LEVEL SECURITY"
        [ "$what" = ENABLE ] && psql -q "$PG" -c "ALTER TABLE $t FORCE ROW LEVEL SECURITY"
    done
    return 0
}
entry=(queues partitions dead_letters)
all=(queues partitions dead_letters segments cursors)
tps() { # script
    "$pgbench" -n -M extended -c "$CLIENTS" -j 2 -T "$DURATION" -f "$1" "$APP" 2>&1 |
        awk '/^tps/ {print $3} /failed transactions: [1-9]/ {print "FAILED" > "/dev/stderr"}'
}
variant() { # off|entry|all
    policies DISABLE "${all[@]}"
    case $1 in
        off) tps "$work/off.sql" ;;
        entry) policies ENABLE "${entry[@]}"; tps "$work/on.sql" ;;
        all) policies ENABLE "${all[@]}"; tps "$work/on.sql" ;;
    esac
}
# Without the tenant set, RLS must hide everything: the wall is really up.
policies ENABLE "${entry[@]}"
if "$pgbench" -n -M extended -c 1 -t 1 -f "$work/off.sql" "$APP" >/dev/null 2>&1; then
    echo "RLS did not hide the partitions" >&2
    exit 1
fi

for round in $(seq 1 "$ROUNDS"); do
    order=(off entry all)
    [ $((round % 2)) -eq 0 ] && order=(all entry off)
    declare -A r=()
    for v in "${order[@]}"; do r[$v]=$(variant "$v"); done
    python3 -c "
off, entry, all_ = ${r[off]}, ${r[entry]}, ${r[all]}
print(f'round $round  off {off:7.1f} tps   entry {entry:7.1f} ({entry / off:.2f}x)   all {all_:7.1f} ({all_ / off:.2f}x)')"
done
