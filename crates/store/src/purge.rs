//! The transaction index's own clock: entries older than the window are purged, after which
//! their transaction ids neither deduplicate pushes nor resolve acks.

use std::time::Duration;

use crate::sql::purge::{COMPACT, COMPACT_CITUS, PURGE, PURGE_CITUS};
use crate::{Layout, Store, StoreError};

/// Deletes index entries older than `retention`, in bounded slices so one purge never holds a
/// long transaction. Returns how many were removed.
pub async fn purge_tx_index(store: &Store, retention: Duration) -> Result<u64, StoreError> {
    let client = store.client().await?;
    let st = client
        .prepare_cached(match client.layout() {
            Layout::Single => PURGE,
            Layout::Citus => PURGE_CITUS,
        })
        .await?;
    let secs = retention.as_secs_f64();
    let mut total = 0;
    loop {
        let n = client.execute(&st, &[&secs]).await?;
        total += n;
        if n < 10_000 {
            return Ok(total);
        }
    }
}

/// What one slice of the cursor log's compaction did.
#[derive(Debug, Clone, Copy)]
pub struct Slice {
    /// Superseded rows deleted.
    pub deleted: u64,
    /// The table's size in blocks after the slice: where a pass over it ends.
    pub blocks: u64,
}

/// Deletes the superseded rows stored in blocks `from..to` of the cursor log. On Citus, where
/// a row address means nothing beyond its shard, the first slice of a pass deletes them all
/// (every shard at once) and answers a table of no blocks, which ends the pass.
pub async fn compact_slice(store: &Store, from: u64, to: u64) -> Result<Slice, StoreError> {
    let client = store.client().await?;
    if client.layout() == Layout::Citus {
        let st = client.prepare_cached(COMPACT_CITUS).await?;
        let deleted = match from {
            0 => client.execute(&st, &[]).await?,
            _ => 0,
        };
        return Ok(Slice { deleted, blocks: 0 });
    }
    let st = client.prepare_cached(COMPACT).await?;
    let (from, to) = (from as i64, to as i64);
    let row = client.query_one(&st, &[&from, &to]).await?;
    Ok(Slice {
        deleted: row.get::<_, i64>(0) as u64,
        blocks: row.get::<_, i64>(1) as u64,
    })
}
