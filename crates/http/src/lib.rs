//! Regent's HTTP surface: Queen's routes, JSON in and out, status codes. A handler parses
//! the request, calls one use case of `regent-service`, and renders its outcome; nothing
//! below this crate sees a JSON request or response shape, and nothing here sees SQL (the
//! crate does not depend on `regent-store`, tokio-postgres or deadpool).

mod about;
mod ack;
mod analytics;
mod answer;
pub mod auth;
mod body;
mod configure;
pub mod console;
mod consumer_groups;
mod dlq;
mod edge;
mod ephemeral;
pub mod error;
mod fallback;
mod fleet;
#[doc(hidden)]
pub mod fuzz_targets;
mod handover;
mod head;
mod health;
pub mod jwks;
mod kv;
mod layers;
mod lease;
mod maintenance;
mod messages;
mod metrics;
pub mod openapi;
mod params;
mod path;
mod pop;
mod push;
mod queue_metrics;
mod read;
pub mod request_id;
mod resources;
pub mod routes;
mod sorted;
mod stats;
mod status;
mod streams;
mod time;
mod timers;
mod traces;
mod transaction;
mod whoami;

use std::sync::Arc;

use axum::Router;
use tokio::sync::{watch, Semaphore};

use regent_config::Config;
use regent_service::Service;

pub use routes::{routes, Level, Route};

/// What every handler shares.
pub struct AppState {
    pub service: Arc<Service>,
    /// Pop defaults, body limits, JWT settings.
    pub config: Config,
    /// JWT verification; `None` when authentication is off.
    pub auth: Option<Arc<auth::Auth>>,
    /// Flips to true when the shutdown grace period is over: requests still running are cut
    /// off with a 503.
    pub grace_over: watch::Receiver<bool>,
    /// Turns for requests with a large body (`head.rs`).
    large_requests: Arc<Semaphore>,
    /// Every route's access level, from the route table.
    routes: Vec<Route>,
    /// `CORS_ALLOWED_ORIGINS`: `None` for any origin.
    cors_origins: Option<Vec<String>>,
}

impl AppState {
    pub fn new(
        service: Arc<Service>,
        config: Config,
        auth: Option<Arc<auth::Auth>>,
        grace_over: watch::Receiver<bool>,
    ) -> AppState {
        AppState {
            service,
            large_requests: Arc::new(Semaphore::new(config.max_large_requests.max(1))),
            cors_origins: config.cors_origins().unwrap_or(Some(Vec::new())),
            config,
            auth,
            grace_over,
            routes: Vec::new(),
        }
    }
}

pub type State = axum::extract::State<Arc<AppState>>;

/// The whole HTTP application: the route table with its access check, then what every
/// request passes (its id, CORS, the shutdown cut-off, panic isolation, the body limit).
pub fn router(mut state: AppState) -> Router {
    let table = routes::table();
    state.routes = table.iter().map(routes::Entry::route).collect();
    let state = Arc::new(state);
    let app = routes::router(&table)
        // Matched routes only: an unknown path is a 404 whatever the token says.
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::authorize,
        ))
        .fallback(fallback::not_found)
        .method_not_allowed_fallback(fallback::method_not_allowed);
    layers::around(app, &state).with_state(state)
}
