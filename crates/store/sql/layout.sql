-- Which layout a database calls for (crate::layout::Layout::of), read when the broker starts:
-- Citus when the extension is installed in it and a worker is registered, else one
-- PostgreSQL. Each `-- name:` section is one statement, exactly as sent
-- (crates/store/build.rs); a `_citus` statement is sent only where Citus is installed.

-- name: citus_installed
-- Whether the Citus extension is installed in this database.
-- (no parameters)
SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') AS citus

-- name: active_workers_citus
-- How many active workers the coordinator knows (asked only once citus_installed holds: the
-- function is the extension's).
-- (no parameters)
SELECT count(*) AS n FROM citus_get_active_worker_nodes()
