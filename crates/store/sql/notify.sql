-- The peer link (crate::notify): brokers wake each other through LISTEN/NOTIFY on one channel.
-- Each `-- name:` section is exactly as sent (crates/store/build.rs); listen is a batch of
-- statements, sent at once.

-- name: listen
-- The peer link's session: its notes are hints, rebuilt by any later push, so their commits
-- need not wait for the WAL flush (they are the only transactions this connection runs); it
-- listens on crate::notify::CHANNEL (a unit test holds the name alike). Sent as one batch.
-- (no parameters)
SET synchronous_commit = off;
SET application_name = 'regent peers';
LISTEN regent_wakeups

-- name: notify
-- Sends every payload in one statement, so one transaction.
-- $1 channel, $2 payloads
SELECT pg_notify($1, p) FROM unnest($2::text[]) p
