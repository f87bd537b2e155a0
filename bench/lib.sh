# Shared by the bench scripts (sourced, not run): a release build, a work directory, and a
# `regent dev` broker on a persistent private cluster (fsync and synchronous commit on).

# BIN names another build to measure (bench/ab.sh); the load generator is always this tree's.
cargo build --release --locked --quiet
gen=target/release/regent
bin=${BIN:-$gen}
pgbin=$(pg_config --bindir 2>/dev/null || true)
pgbench=$(command -v pgbench || echo "$pgbin/pgbench")
[ -x "$pgbench" ] || pgbench=$(ls /usr/lib/postgresql/*/bin/pgbench | sort -V | tail -1)

work=$(mktemp -d /tmp/regent-bench-XXXXXX)
chmod 755 "$work"
echo "work directory: $work"

# wait_for FILE TEXT: until FILE says TEXT (30 s at most).
wait_for() {
    for _ in $(seq 1 300); do
        grep -q "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    cat "$1" >&2
    return 1
}

# start_dev PORT: `regent dev` with authentication and limits off and its cluster in
# $work/pg; sets $broker (its pid) and $PG (the cluster's URL). The caller's EXIT trap
# should call stop_dev.
start_dev() {
    # A previous broker's output would pass for this one's (its "serving on", its URL).
    rm -f "$work/dev.out" "$work/dev.err"
    env -u JWT_ENABLED -u TENANT_LIMITS NO_COLOR=1 "$bin" dev --port "$1" --data-dir "$work/pg" \
        >"$work/dev.out" 2>"$work/dev.err" &
    broker=$!
    wait_for "$work/dev.out" "serving on"
    PG=$(grep -o 'postgres://[^ ]*' "$work/dev.err" | head -1)
    [ -n "$PG" ] || { cat "$work/dev.err" >&2; return 1; }
}

# The cluster is gigabytes after a full run: only the reports are kept. The broker may be
# gone already (a script that restarts it): under `set -e` a failed kill would end the EXIT
# trap before the cluster is deleted.
stop_dev() {
    kill -INT "$broker" 2>/dev/null || true
    wait "$broker" 2>/dev/null || true
    rm -rf "$work/pg"
}

# start_serve BINARY PORT NAME: `regent serve` (BINARY) on the cluster of the `regent dev`
# broker ($PG), logging to $work/NAME.out and .err; sets $b_pid. One at a time.
b_pid=
start_serve() {
    env -u JWT_ENABLED -u TENANT_LIMITS NO_COLOR=1 DATABASE_URL="$PG" PORT="$2" \
        "$1" serve >"$work/$3.out" 2>"$work/$3.err" &
    b_pid=$!
    wait_for "$work/$3.out" "serving on"
}

stop_serve() {
    [ -n "$b_pid" ] || return 0
    kill -INT "$b_pid" 2>/dev/null || true
    wait "$b_pid" 2>/dev/null || true
    b_pid=
}

# The EXIT trap of a script with a second broker: both stopped, the work directory deleted
# unless KEEP is set.
stop_both() {
    stop_serve
    stop_dev
    if [ -n "${KEEP:-}" ]; then echo "kept $work"; else rm -rf "$work"; fi
}

# cluster_cpu BROKER_PID DIR: CPU seconds so far of the broker, then of each PostgreSQL node
# whose data directory is under DIR (the postmaster, its live children, and the children it
# reaped; nodes in the order coordinator, worker-1, worker-2): other clusters on the machine
# are not counted.
cluster_cpu() {
    python3 - "$1" "$2" <<'PY'
import glob, os, sys
hz = os.sysconf("SC_CLK_TCK")
def stat(pid):
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return None
def own(f, reaped=False):
    return (int(f[11]) + int(f[12]) + ((int(f[13]) + int(f[14])) if reaped else 0)) / hz
parents = {}
for p in os.listdir("/proc"):
    if p.isdigit() and (f := stat(p)):
        parents.setdefault(int(f[1]), []).append(f)
out = [own(stat(sys.argv[1]) or ["0"] * 20)]
pids = sorted(glob.glob(f"{sys.argv[2]}/**/postmaster.pid", recursive=True),
              key=lambda p: (("worker" in p), p))
for pidfile in pids:
    pm = int(open(pidfile).readline())
    f = stat(pm)
    out.append((own(f, reaped=True) if f else 0) + sum(own(c) for c in parents.get(pm, [])))
print(" ".join(f"{x:.2f}" for x in out))
PY
}

# The peers' message (bench/alternatives.sh, bench/bloat.sh): about 256 B of JSON, as
# `regent bench --payload 256` sends.
peer_payload="{\"t\":1700000000000000,\"pad\":\"$(printf 'x%.0s' $(seq 1 230))\"}"

# in_db NAME: $PG with its database replaced by NAME.
in_db() { sed -E "s#/[^/?]+(\?|$)#/$1\1#" <<<"$PG"; }

# pgmq_setup DB N: a fresh database DB on the cluster of $PG with pgmq installed from
# $PGMQ_SQL and a queue `jobs` (table pgmq.q_jobs); sets $pgmq_url to it, and writes the
# pgbench scripts of pgmq_load for N messages per call.
pgmq_setup() {
    PGOPTIONS=--client-min-messages=warning psql -q "$PG" -c "DROP DATABASE IF EXISTS $1" \
        -c "CREATE DATABASE $1"
    pgmq_url=$(in_db "$1")
    psql -q "$pgmq_url" -v ON_ERROR_STOP=1 -f "$PGMQ_SQL" >/dev/null
    psql -q "$pgmq_url" -c "SELECT pgmq.create('jobs')" >/dev/null
    if [ "$2" -eq 1 ]; then
        echo "SELECT pgmq.send('jobs', '$peer_payload'::jsonb);" >"$work/pgmq-send.sql"
    else
        echo "SELECT pgmq.send_batch('jobs', array_fill('$peer_payload'::jsonb, ARRAY[$2]));" \
            >"$work/pgmq-send.sql"
    fi
    # Read, then delete what was read: two statements, two commits (an empty read deletes
    # nothing). pgbench substitutes :ids as text, so an empty read is ARRAY[]::bigint[].
    cat >"$work/pgmq-take.sql" <<SQL
SELECT coalesce(string_agg(msg_id::text, ','), '') AS ids FROM pgmq.read('jobs', 30, $2) \gset
SELECT pgmq.delete('jobs', ARRAY[:ids]::bigint[]);
SQL
}

# pgmq_load SECONDS: on $pgmq_url for SECONDS, 8 producers (pgbench, one thread: `pgmq.send`
# or `pgmq.send_batch`, one commit each) and 8 consumers (pgbench, one thread: the read with
# a 30 s visibility timeout, then the delete of what was read); their output in
# $work/pgmq-send.txt and $work/pgmq-take.txt.
pgmq_load() {
    "$pgbench" -n -c 8 -j 1 -T "$1" -f "$work/pgmq-send.sql" "$pgmq_url" \
        >"$work/pgmq-send.txt" 2>&1 &
    local producers=$!
    "$pgbench" -n -c 8 -j 1 -T "$1" -f "$work/pgmq-take.sql" "$pgmq_url" \
        >"$work/pgmq-take.txt" 2>&1
    wait "$producers"
}
