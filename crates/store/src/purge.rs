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

/// Deletes the cursor log's superseded rows (every row but each cursor's newest), in bounded
/// slices. Returns how many were removed.
pub async fn compact_cursor_log(store: &Store) -> Result<u64, StoreError> {
    let client = store.client().await?;
    let st = client
        .prepare_cached(match client.layout() {
            Layout::Single => COMPACT,
            Layout::Citus => COMPACT_CITUS,
        })
        .await?;
    let mut total = 0;
    loop {
        let n = client.execute(&st, &[]).await?;
        total += n;
        if n < 10_000 || client.layout() == Layout::Citus {
            return Ok(total);
        }
    }
}
