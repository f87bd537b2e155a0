//! Where Regent's tables live: in one PostgreSQL, or spread over a Citus cluster.
//!
//! The layout is read from the database when the broker starts (`Store::migrate`), never
//! configured: a database with the Citus extension and at least one active worker is laid out
//! for Citus (`crate::citus`), any other is one PostgreSQL. Most statements are the same text
//! in both; the few that differ ask their transaction's layout ([`crate::Tx::layout`]).

use tokio_postgres::Client;

use crate::sql::layout as sql;
use crate::StoreError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Every table in one PostgreSQL.
    Single,
    /// Everything about one partition (its sequencer row, segments, cursors, tombstones,
    /// transaction index, dead letters, traces) on the worker that holds the partition's
    /// shard; queues, subscriptions and maintenance switches copied to every node; the
    /// broker's own bookkeeping and the push buffer on the coordinator.
    Citus,
}

impl Layout {
    /// Whether the broker may send its hot statements as one statement that is its own
    /// transaction, against what it learned of a queue or partition (its id and the options
    /// it had): pushes to known partitions, claims of known queues, acks that complete their
    /// lease, and whether to learn queues and partitions for them at all. On one PostgreSQL.
    /// On Citus such a statement could reach several workers and the lookups it skips are
    /// what route a request to its shard, so every request takes the full way. The service
    /// asks this, never which layout it is on (`tests/api/layering.rs`).
    pub fn one_statement_paths(self) -> bool {
        self == Layout::Single
    }

    /// Whether partitions live on more than one node, so that which node holds each is worth
    /// knowing ([`crate::partitions::places`]).
    pub fn spreads_partitions(self) -> bool {
        self == Layout::Citus
    }

    /// The layout a database calls for: Citus when the extension is installed in it and a
    /// worker is registered, else one PostgreSQL.
    pub async fn of(client: &Client) -> Result<Layout, StoreError> {
        let row = client.query_one(sql::CITUS_INSTALLED, &[]).await?;
        if !row.get::<_, bool>("citus") {
            return Ok(Layout::Single);
        }
        let workers: i64 = client
            .query_one(sql::ACTIVE_WORKERS_CITUS, &[])
            .await?
            .get("n");
        Ok(if workers > 0 {
            Layout::Citus
        } else {
            Layout::Single
        })
    }
}
