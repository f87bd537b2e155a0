//! Handing a pop's lease to its client. A pop that takes a lease either delivers it (the
//! answer's last bytes are handed to the connection) or releases it, never both and never
//! neither, so a shutdown or a vanished client does not leave messages leased to nobody until
//! the lease runs out.
//!
//! "Delivered" is the last point the server can know about: bytes handed to the connection
//! may still sit in a socket buffer the client never reads, and that case cannot be told
//! apart from a client that crashed after reading; its lease runs to expiry as for any crash.

use std::sync::Arc;

use uuid::Uuid;

use regent_memory::Announcement;

use crate::Service;

/// One pop's lease on its way to the client. Opened before the claim (a pop cancelled while
/// claiming releases whatever committed), carried by the answer, and released when dropped
/// before [`Handover::deliver`].
pub struct Handover {
    service: Arc<Service>,
    lease: Uuid,
}

impl Handover {
    pub(crate) fn open(s: &Arc<Service>, lease: Uuid, tenant: &str) -> Handover {
        s.runtime.handovers.open(lease, tenant);
        Handover {
            service: s.clone(),
            lease,
        }
    }

    /// The claim committed nothing: there is no lease to deliver or release.
    pub(crate) fn claimed_nothing(self) {
        self.service.runtime.handovers.take(self.lease);
    }

    /// Claims the lease for delivery, when the answer's last bytes go to the connection;
    /// false when it was released first (the answer must then not be completed).
    pub fn deliver(&self) -> bool {
        self.service.runtime.handovers.take(self.lease).is_some()
    }
}

impl Drop for Handover {
    fn drop(&mut self) {
        let Some(tenant) = self.service.runtime.handovers.take(self.lease) else {
            return;
        };
        release_in_background(&self.service, self.lease, tenant);
    }
}

/// Releases `lease` in a task of its own, counted so shutdown waits for it. Also for a fused
/// claim that committed after its pop's client went away: that pop's handover may have been
/// released before the claim named the lease, so the claim's leader releases it again.
pub(crate) fn release_in_background(s: &Arc<Service>, lease: Uuid, tenant: String) {
    // A runtime that is shutting down has no room for the release: the lease expires.
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let running = Releasing::begin(s);
    rt.spawn(async move {
        release(&running.0, lease, &tenant).await;
    });
}

/// A release in progress, counted until dropped (however its task ends), so shutdown waits
/// for it and never for one that will not finish.
struct Releasing(Arc<Service>);

impl Releasing {
    fn begin(s: &Arc<Service>) -> Releasing {
        s.runtime.handovers.begin_release();
        Releasing(s.clone())
    }
}

impl Drop for Releasing {
    fn drop(&mut self) {
        self.0.runtime.handovers.end_release();
    }
}

/// At shutdown, after the connections are closed or abandoned: releases every lease whose
/// answer was not delivered, and waits for every release already started.
pub(crate) async fn release_remaining(s: &Arc<Service>) {
    for (lease, tenant) in s.runtime.handovers.take_all() {
        release(s, lease, &tenant).await;
    }
    s.runtime.handovers.released().await;
}

/// Ends the lease in the database and tells the group's parked pops, here and on the other
/// brokers, that its partitions are free (the messages under the lease are all still unread).
async fn release(s: &Service, lease: Uuid, tenant: &str) {
    let released = match s.store.client().await {
        Ok(client) => regent_store::lease::release(&client, tenant, lease).await,
        Err(e) => Err(e),
    };
    match released {
        Ok(parts) if parts.is_empty() => {}
        Ok(parts) => {
            tracing::info!(%lease, partitions = parts.len(), "released a lease whose answer never reached its client");
            s.runtime.deliveries.forget(&lease.to_string());
            let reopened = parts.into_iter().map(|p| (p.queue, p.group)).collect();
            s.announce(&Announcement::reopened(tenant, reopened));
        }
        Err(e) => {
            tracing::warn!(%lease, error = %e, "could not release an undelivered lease; it will expire")
        }
    }
}
