//! The HTTP surface: Queen's routes, JSON in and out, status codes. Nothing below this layer
//! sees JSON request or response shapes.

mod ack;
pub mod auth;
mod body;
mod configure;
mod consumer_groups;
mod cors;
mod dlq;
pub mod error;
mod fallback;
pub mod fusion;
mod grace;
mod handover;
mod health;
pub mod jwks;
mod lease;
mod limits;
mod metrics;
mod params;
mod path;
mod pop;
mod push;
mod resources;
mod time;
mod transaction;

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::routing::{delete, get, post};
use axum::Router;
use tokio::sync::watch;

use crate::broker::encryption::PayloadCipher;
use crate::config::Config;
use crate::peers::Announcement;
use crate::store::Store;
use crate::wakeup::Wakeups;

/// What every handler shares.
pub struct AppState {
    pub store: Store,
    pub wakeups: Wakeups,
    pub config: Config,
    pub cipher: Option<PayloadCipher>,
    /// Where push requests go to be fused into shared transactions.
    pub(crate) pushes: fusion::Batcher<fusion::PushJob>,
    /// Where ack requests go to be fused into shared transactions.
    pub(crate) acks: fusion::Batcher<fusion::AckJob>,
    /// When each (queue, group) last swept for partitions it has no cursor on.
    pub cursor_sweeps: crate::wakeup::Sweeps,
    /// Partitions pushed to, per queue, for pops to claim first.
    pub ready: crate::wakeup::Ready,
    /// What each live lease delivered, so acks resolve without the transaction index.
    pub deliveries: crate::deliveries::Deliveries,
    /// Per-tenant request rate and stored-message caps.
    pub limits: crate::limits::Limiter,
    /// JWT verification; `None` when authentication is off.
    pub auth: Option<Arc<auth::Auth>>,
    /// Flips to true when the server starts shutting down, so parked long-polls answer at once.
    pub shutting_down: watch::Receiver<bool>,
    /// Flips to true when the shutdown grace period is over: requests still running are cut
    /// off with a 503.
    pub grace_over: watch::Receiver<bool>,
    /// Wakeups to and from the other brokers on the database.
    pub peers: Arc<crate::peers::Peers>,
    /// Requests and messages since start, for `/metrics`.
    pub activity: crate::activity::Activity,
    /// Pop answers whose lease is not yet delivered to the client.
    pub handovers: handover::Handovers,
}

impl AppState {
    /// After a commit: wakes this broker's parked pops and hints their claims, and tells the
    /// other brokers to do the same. Never before commit: a pop woken earlier could miss what
    /// it was woken for.
    pub fn announce(&self, a: &Announcement) {
        self.hint(a);
        self.peers.publish(a);
    }

    /// Applies an announcement, this broker's or another's, to the in-memory hints: sweeps
    /// learn new partitions, ready lists the written ones, parked pops wake (as many per
    /// consumer group as partitions were written, and one of each group an ack left
    /// something to claim).
    pub fn hint(&self, a: &Announcement) {
        for &(q, p) in &a.created {
            self.cursor_sweeps.created(q, p);
        }
        for &(q, p) in &a.partitions {
            self.ready.pushed(q, p);
        }
        for (q, partitions) in &a.queues {
            self.wakeups.notify(&a.tenant, q, *partitions);
        }
        for (q, group) in &a.reopened {
            self.wakeups.reopened(&a.tenant, q, group);
        }
    }
}

pub type State = axum::extract::State<Arc<AppState>>;

pub fn router(state: Arc<AppState>) -> Router {
    let limit = state.config.max_body_bytes;
    Router::new()
        .route("/health", get(health::health))
        .route("/metrics", get(metrics::json_snapshot))
        .route("/metrics/prometheus", get(metrics::prometheus))
        .route("/api/v1/configure", post(configure::configure))
        .route("/api/v1/push", post(push::push))
        .route("/api/v1/pop/queue/{queue}", get(pop::pop_queue))
        .route(
            "/api/v1/pop/queue/{queue}/partition/{partition}",
            get(pop::pop_partition),
        )
        .route("/api/v1/pop", get(pop::pop_scope))
        .route("/api/v1/ack", post(ack::ack_single))
        .route("/api/v1/ack/batch", post(ack::ack_batch))
        .route("/api/v1/transaction", post(transaction::transaction))
        .route("/api/v1/lease/{lease_id}/extend", post(lease::extend))
        .route("/api/v1/dlq", get(dlq::list))
        .route("/api/v1/resources/queues", get(resources::list_queues))
        .route(
            "/api/v1/resources/queues/{queue}",
            get(resources::get_queue).delete(resources::delete_queue),
        )
        .route(
            "/api/v1/resources/queues/{queue}/depth",
            get(resources::queue_depth),
        )
        .route("/api/v1/consumer-groups", get(consumer_groups::list))
        .route(
            "/api/v1/consumer-groups/lagging",
            get(consumer_groups::lagging),
        )
        .route(
            "/api/v1/consumer-groups/{group}",
            get(consumer_groups::detail).delete(consumer_groups::delete),
        )
        .route(
            "/api/v1/consumer-groups/{group}/queues/{queue}",
            delete(consumer_groups::delete_for_queue),
        )
        .route(
            "/api/v1/consumer-groups/{group}/queues/{queue}/seek",
            post(consumer_groups::seek_queue),
        )
        .route(
            "/api/v1/consumer-groups/{group}/queues/{queue}/partitions/{partition}/seek",
            post(consumer_groups::seek_partition),
        )
        // Route layers run last-added first: authorize decides the tenant, then its rate.
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            limits::admit,
        ))
        // Matched routes only: an unknown path is a 404 whatever the token says.
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::authorize,
        ))
        .fallback(fallback::not_found)
        .method_not_allowed_fallback(fallback::method_not_allowed)
        .layer(DefaultBodyLimit::max(limit))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            grace::bounded,
        ))
        .layer(axum::middleware::from_fn(cors::cors))
        .with_state(state)
}
