//! The transaction index's purge clock: entries older than the window are deleted, after
//! which their transaction ids neither deduplicate pushes nor resolve acks.

use std::sync::Arc;

use crate::Service;

pub(crate) async fn run(s: Arc<Service>) {
    loop {
        tokio::time::sleep(s.purge_interval).await;
        match regent_store::purge::purge_tx_index(&s.store, s.index_retention).await {
            Ok(0) => {}
            Ok(n) => tracing::debug!(purged = n, "transaction index purged"),
            Err(e) => tracing::warn!(error = %e, "transaction index purge failed"),
        }
    }
}
