//! Per-tenant limits, applied: the request rate at admission, the turns of a tenant's
//! concurrency, and the stored-message cap as room held before a push or transaction writes
//! (so a 429 means nothing was written). The state is the runtime's; the count it asks for is
//! read here.

use std::sync::Arc;

use regent_memory::limiter::{Reservation, Reserve};
use regent_store::queues::stored_messages;

use crate::{Error, Service};

impl Service {
    /// Takes one request from the tenant's rate.
    pub fn admit(&self, tenant: &Arc<str>) -> Result<(), Error> {
        Ok(self.runtime.limiter.admit(tenant)?)
    }

    /// Runs `work` in a turn of the tenant's `concurrency` (at once when it has none),
    /// waiting for one first; a parked long-poll inside gives it back while it waits
    /// (`regent_memory::turns`).
    pub async fn in_turn<F: std::future::Future>(&self, tenant: &Arc<str>, work: F) -> F::Output {
        match self.runtime.limiter.concurrency(tenant) {
            Some(n) => self.runtime.turns.take(tenant, n).await.hold(work).await,
            None => work.await,
        }
    }

    /// Holds room for `adding` messages under the tenant's cap, reading its stored count from
    /// the log when this broker's is more than a second old.
    pub(crate) async fn reserve(
        &self,
        tenant: &Arc<str>,
        adding: i64,
    ) -> Result<Reservation<'_>, Error> {
        match self.runtime.limiter.reserve(tenant, adding) {
            Reserve::Held(room) => Ok(room),
            Reserve::Refused(refusal) => Err(refusal.into()),
            Reserve::Count(recount) => {
                let client = self.store.client().await?;
                let stored = stored_messages(&client, tenant).await?;
                Ok(recount.done(stored)?)
            }
        }
    }
}
