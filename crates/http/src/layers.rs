//! What every request passes through around the router: the edge (its id, CORS, the shutdown
//! cut-off, panic isolation: `edge.rs`), the head's limits (`head.rs`), then the body limit.

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::Router;

use super::{edge, head, AppState};

pub fn around(app: Router<Arc<AppState>>, state: &Arc<AppState>) -> Router<Arc<AppState>> {
    app.layer(DefaultBodyLimit::max(state.config.max_body_bytes))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            head::limit,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            edge::edge,
        ))
}
