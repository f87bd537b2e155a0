//! The transaction index's purge clock: entries older than the deduplication window are
//! deleted, after which their transaction ids resolve only acks inside a live lease (from the
//! leased segments' frames). They stopped deduplicating pushes at the window already
//! (migration V19). The cursor log's superseded rows go on a clock of their own
//! (crate::compact), a pass every same interval.

use std::sync::Arc;

use crate::Service;

pub(crate) async fn run(s: Arc<Service>) {
    loop {
        tokio::time::sleep(s.purge_interval).await;
        match regent_store::purge::purge_tx_index(&s.store, s.dedup_window).await {
            Ok(0) => {}
            Ok(n) => tracing::debug!(purged = n, "transaction index purged"),
            Err(e) => tracing::warn!(error = %e, "transaction index purge failed"),
        }
    }
}
