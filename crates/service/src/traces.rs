//! Trace events: recorded against a message the tenant's log holds, read back per message,
//! per trace name, and as the list of names (spec §12).

use uuid::Uuid;

use regent_rules::tx_hash::tx_hash;
use regent_store::cursor;
use regent_store::traces::{self as store, NewTrace};
pub use regent_store::traces::{NamedTrace, Trace, TraceEvent, TraceName};

use crate::{Error, Service};

pub use crate::queues::Page;

impl Service {
    /// The new trace's id, or `NotFound` when the tenant's partition does not hold the message.
    /// The message is found through the transaction index while its id is in the window, else
    /// among the partition's live leases (a consumer traces what it is working on, which may
    /// take longer than the window).
    pub async fn record_trace(&self, tenant: &str, e: &TraceEvent<'_>) -> Result<Uuid, Error> {
        let client = self.store.client().await?;
        let t = NewTrace {
            id: Uuid::now_v7(),
            tenant,
            hash: tx_hash(e.partition_id, e.transaction_id),
            event: e,
        };
        if let Some(id) = store::record(&client, &t).await? {
            return Ok(id);
        }
        for (after, upto) in cursor::live_leases(&*client, e.partition_id).await? {
            let found = cursor::resolve_in_range(
                &*client,
                e.partition_id,
                after,
                upto,
                &[e.transaction_id],
            )
            .await?;
            if let Some(offset) = found[0] {
                if let Some(id) = store::record_at(&client, &t, offset).await? {
                    return Ok(id);
                }
            }
        }
        Err(Error::NotFound("Message not found".into()))
    }

    pub async fn traces_of_message(
        &self,
        tenant: &str,
        partition_id: Uuid,
        transaction_id: &str,
    ) -> Result<Vec<Trace>, Error> {
        let client = self.store.client().await?;
        Ok(store::of_message(&client, tenant, partition_id, transaction_id).await?)
    }

    /// Traces carrying `name`, with their messages' payloads opened.
    pub async fn traces_by_name(
        &self,
        tenant: &str,
        name: &str,
        page: Page,
    ) -> Result<(Vec<NamedTrace>, i64), Error> {
        let client = self.store.client().await?;
        let (mut traces, total) =
            store::by_name(&client, tenant, name, page.limit, page.offset).await?;
        for t in &mut traces {
            if let Some(m) = t.message.as_mut() {
                self.open(&t.queue, m);
            }
        }
        Ok((traces, total))
    }

    pub async fn trace_names(
        &self,
        tenant: &str,
        page: Page,
    ) -> Result<(Vec<TraceName>, i64), Error> {
        let client = self.store.client().await?;
        Ok(store::names(&client, tenant, page.limit, page.offset).await?)
    }
}
