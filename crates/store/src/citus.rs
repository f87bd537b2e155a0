//! Regent's tables laid out over a Citus cluster, after the migrations made them as ordinary
//! tables on the coordinator.
//!
//! A partition is the shard key: every hot statement touches one partition, so everything
//! about one partition lives on one worker, co-located by partition id, and a push, a claim
//! or an ack of one partition is one round trip to one worker. Small tables read by every
//! request (queues, subscriptions, maintenance switches) are reference tables, copied to
//! every node, so they join anything. The broker's own bookkeeping (series, samples, the stats
//! snapshot) stays on the coordinator as Citus-managed local tables.
//!
//! Applied once, to a database with no partitions yet, under the migration lock; each step
//! checks what is already done, so a start interrupted half-way finishes at the next start.

use tokio_postgres::Client;

use anyhow::{bail, Result};

use crate::sql::distribute_citus as sql;

/// Replicated to every node: read by every request, written rarely.
const REFERENCE: &[&str] = &["queues", "subscriptions", "maintenance", "stream_queries"];

/// Distributed by partition, co-located with `partitions` (table, distribution column).
const BY_PARTITION: &[(&str, &str)] = &[
    ("partitions", "id"),
    ("segments", "partition_id"),
    ("cursors", "partition_id"),
    ("cursor_log", "partition_id"),
    ("tombstones", "partition_id"),
    ("tx_index", "partition_id"),
    ("dead_letters", "partition_id"),
    ("traces", "partition_id"),
    ("stream_partitions", "partition_id"),
    ("stream_state", "partition_id"),
];

/// Distributed by their own column, each in a co-location group of its own (table,
/// distribution column): the key/value rows by namespace, so a namespace's reads and writes (a
/// prefix read included) are one shard's; timers by queue name, since a timer's statements name
/// its queue, not a partition (which may not exist before the timer fires).
const BY_COLUMN: &[(&str, &str)] = &[("kv", "ns"), ("timers", "queue")];
/// Ephemeral queues' tables: distributed by tenant and co-located with each other (every
/// statement of a queue names its tenant, so a queue's transaction is one worker's). The
/// UNLOGGED ones stay UNLOGGED on the workers: their shards are made like the table.
const BY_TENANT: &[&str] = &[
    "ephemeral_queues",
    "ephemeral_live",
    "ephemeral_rings",
    "ephemeral_messages",
    "ephemeral_groups",
    "ephemeral_cursors",
    "ephemeral_deliveries",
];

/// The coordinator's own tables, and the push buffer: local, added to Citus's metadata so
/// that they may join the reference tables.
const LOCAL: &[&str] = &[
    // Written only under push maintenance, drained in arrival order (its local sequence).
    "push_buffer",
    "queue_minutes",
    "broker_samples",
    "broker_parked",
    "depth_minutes",
    "queue_depth_minutes",
    "stats_rounds",
    "queue_stats",
    "group_stats",
    "lagging_stats",
];

/// The schema changes distribution needs (what and why: the script's comments), run before the
/// first table is distributed, one transaction.
const RESHAPE: &str = include_str!("../citus/reshape.sql");

/// The Citus body of `regent_append`, applied after `sql/functions.sql`, and where each
/// function runs.
const FUNCTIONS: &str = include_str!("../citus/functions.sql");

/// Lays the tables out for Citus, if not done yet. Refuses a database that already holds
/// partitions in one PostgreSQL's layout: their transaction index rows carry no partition
/// and cannot be distributed.
pub async fn distribute(client: &Client) -> Result<()> {
    if method(client, "partitions").await?.as_deref() != Some("h") {
        let held: bool = client
            .query_one(sql::HOLDS_PARTITIONS, &[])
            .await?
            .get("held");
        if held {
            bail!(
                "this database already holds Regent data laid out for one PostgreSQL; \
                 moving it onto Citus is not supported: start on an empty database"
            );
        }
        if !reshaped(client).await? {
            client.batch_execute(RESHAPE).await?;
        }
    }
    let tables = REFERENCE
        .iter()
        .map(|t| (*t, Placement::Reference))
        .chain(
            BY_PARTITION
                .iter()
                .map(|(t, c)| (*t, Placement::ByPartition(c))),
        )
        .chain(BY_COLUMN.iter().map(|(t, c)| (*t, Placement::ByColumn(c))))
        .chain(BY_TENANT.iter().map(|t| (*t, Placement::ByTenant)))
        .chain(LOCAL.iter().map(|t| (*t, Placement::Local)));
    for (table, placement) in tables {
        if method(client, table).await?.is_none() {
            place(client, table, placement).await?;
        }
    }
    client.batch_execute(FUNCTIONS).await?;
    Ok(())
}

/// Where a table goes.
#[derive(Clone, Copy)]
enum Placement {
    Reference,
    /// Distributed by this column, co-located with `partitions`.
    ByPartition(&'static str),
    /// Distributed by this column, co-located with nothing.
    ByColumn(&'static str),
    /// Distributed by `tenant`, co-located with `ephemeral_queues`.
    ByTenant,
    Local,
}

async fn place(client: &Client, table: &str, placement: Placement) -> Result<()> {
    match placement {
        Placement::Reference => client.execute(sql::REFERENCE, &[&table]).await?,
        Placement::ByPartition(column) => {
            let colocate = if table == "partitions" {
                "none"
            } else {
                "partitions"
            };
            client
                .execute(sql::BY_PARTITION, &[&table, &column, &colocate])
                .await?
        }
        Placement::ByColumn(column) => client.execute(sql::BY_COLUMN, &[&table, &column]).await?,
        Placement::ByTenant => {
            let colocate = if table == BY_TENANT[0] {
                "none"
            } else {
                BY_TENANT[0]
            };
            client.execute(sql::BY_TENANT, &[&table, &colocate]).await?
        }
        Placement::Local => client.execute(sql::LOCAL, &[&table]).await?,
    };
    Ok(())
}

/// How Citus holds the table: `h` distributed by hash, `n` a reference or local table, `None`
/// not at all yet.
async fn method(client: &Client, table: &str) -> Result<Option<String>> {
    Ok(client
        .query_opt(sql::METHOD, &[&table])
        .await?
        .map(|r| r.get("m")))
}

/// Whether [`RESHAPE`] already ran (it is one transaction: all of it or none).
async fn reshaped(client: &Client) -> Result<bool> {
    Ok(client.query_one(sql::RESHAPED, &[]).await?.get("r"))
}
