//! Handing a pop's answer to its client. A pop that takes a lease either delivers it (the
//! answer's last bytes are handed to the connection) or releases it, never both and never
//! neither, so a shutdown or a vanished client does not leave messages leased to nobody until
//! the lease runs out.
//!
//! "Delivered" is the last point the server can know about: bytes handed to the connection
//! may still sit in a socket buffer the client never reads, and that case cannot be told
//! apart from a client that crashed after reading; its lease runs to expiry as for any crash.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http_body::{Frame, SizeHint};
use tokio::sync::watch;
use uuid::Uuid;

use super::AppState;
use crate::peers::Announcement;

/// Answers go out in frames of this size. The connection asks for the next frame only when
/// its buffer has room, so a client that stops reading a large answer keeps the last frame
/// (the delivery) back.
const FRAME: usize = 64 * 1024;

/// The leases of pop answers not yet handed to a connection, and the releases in progress.
pub struct Handovers {
    /// Lease id to tenant: one entry per pop answer that has not been delivered or released.
    pending: Mutex<HashMap<Uuid, String>>,
    /// Releases running now; shutdown waits for them before closing the pool.
    releasing: watch::Sender<usize>,
}

impl Default for Handovers {
    fn default() -> Self {
        Handovers {
            pending: Mutex::default(),
            releasing: watch::Sender::new(0),
        }
    }
}

impl Handovers {
    /// Removes the lease from the pending set; true for exactly one caller, which decides
    /// its fate (deliver or release).
    fn take(&self, lease: Uuid) -> Option<String> {
        self.pending
            .lock()
            .expect("handover map poisoned")
            .remove(&lease)
    }

    /// How many pop answers hold a lease not yet delivered.
    pub fn pending(&self) -> usize {
        self.pending.lock().expect("handover map poisoned").len()
    }

    /// At shutdown, after the connections are closed or abandoned: releases every lease whose
    /// answer was not delivered, and waits for every release already started.
    pub async fn release_remaining(&self, s: &Arc<AppState>) {
        let left: Vec<(Uuid, String)> = self
            .pending
            .lock()
            .expect("handover map poisoned")
            .drain()
            .collect();
        for (lease, tenant) in left {
            release(s, lease, &tenant).await;
        }
        let mut running = self.releasing.subscribe();
        let _ = running.wait_for(|n| *n == 0).await;
    }
}

/// One pop's lease on its way to the client. Opened before the claim (a pop cancelled while
/// claiming releases whatever committed), carried by the answer's body, and released when
/// dropped before its answer's last frame was handed over.
pub struct Handover {
    state: Arc<AppState>,
    lease: Uuid,
}

impl Handover {
    pub fn open(state: &Arc<AppState>, lease: Uuid, tenant: &str) -> Handover {
        state
            .handovers
            .pending
            .lock()
            .expect("handover map poisoned")
            .insert(lease, tenant.to_string());
        Handover {
            state: state.clone(),
            lease,
        }
    }

    /// The JSON answer, sent in frames; the lease is delivered with the last one.
    pub fn respond(self, json: String) -> Response {
        let body = Body::new(HandoverBody {
            rest: Bytes::from(json),
            handover: self,
        });
        ([(header::CONTENT_TYPE, "application/json")], body).into_response()
    }

    /// The claim committed nothing: there is no lease to deliver or release.
    pub fn claimed_nothing(self) {
        self.state.handovers.take(self.lease);
    }

    /// Claims the lease for delivery; false when it was released first.
    fn deliver(&self) -> bool {
        self.state.handovers.take(self.lease).is_some()
    }
}

impl Drop for Handover {
    fn drop(&mut self) {
        let Some(tenant) = self.state.handovers.take(self.lease) else {
            return;
        };
        // A runtime that is shutting down has no room for the release: the lease expires.
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (state, lease) = (self.state.clone(), self.lease);
        state.handovers.releasing.send_modify(|n| *n += 1);
        rt.spawn(async move {
            release(&state, lease, &tenant).await;
            state.handovers.releasing.send_modify(|n| *n -= 1);
        });
    }
}

/// Ends the lease in the database and tells the group's parked pops, here and on the other
/// brokers, that its partitions are free (the messages under the lease are all still unread).
async fn release(s: &AppState, lease: Uuid, tenant: &str) {
    let released = match s.store.client().await {
        Ok(client) => crate::store::lease::release(&client, tenant, lease).await,
        Err(e) => Err(e),
    };
    match released {
        Ok(parts) if parts.is_empty() => {}
        Ok(parts) => {
            tracing::info!(%lease, partitions = parts.len(), "released a lease whose answer never reached its client");
            s.deliveries.forget(&lease.to_string());
            let mut freed = Announcement {
                tenant: tenant.to_string(),
                ..Default::default()
            };
            for p in parts {
                freed.reopened.push((p.queue, p.group));
            }
            s.announce(&freed);
        }
        Err(e) => {
            tracing::warn!(%lease, error = %e, "could not release an undelivered lease; it will expire")
        }
    }
}

struct HandoverBody {
    rest: Bytes,
    handover: Handover,
}

impl http_body::Body for HandoverBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if self.rest.is_empty() {
            return Poll::Ready(None);
        }
        let n = self.rest.len().min(FRAME);
        if n == self.rest.len() && !self.handover.deliver() {
            // Released (shutdown gave up on this connection): the client must not get a
            // complete answer naming a lease that no longer holds anything.
            return Poll::Ready(Some(Err(std::io::Error::other(
                "the lease was released before the answer was sent",
            ))));
        }
        let frame = self.rest.split_to(n);
        Poll::Ready(Some(Ok(Frame::data(frame))))
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.rest.len() as u64)
    }
}
