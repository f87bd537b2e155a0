//! `POST /api/v1/stats/refresh` (`Admin.refresh_consumer_stats()`): runs a stats round now
//! (waiting for one another broker is running) so the inspection routes' counts include
//! every write committed before the call, and says what it counted.

use axum::extract::State as AxState;
use axum::http::Method;
use schemars::JsonSchema;
use serde::Serialize;

use super::answer::{Answer, True};
use super::error::ApiError;
use super::maintenance;
use super::openapi::Doc;
use super::routes::{route, Entry, Level::Admin};
use super::State;

pub(crate) fn routes() -> Vec<Entry> {
    vec![route(Method::POST, "/api/v1/stats/refresh", Admin, refresh)
        .reads_nothing()
        .doc(
            Doc::op(maintenance::TAG, "Recount the stats snapshot now")
                .answers::<Refreshed>(200, "Counted."),
        )]
}

/// What a stats round counted.
#[derive(Serialize, JsonSchema)]
struct Refreshed {
    success: True,
    /// Queues counted.
    queues: usize,
    #[serde(rename = "tookMs")]
    took_ms: f64,
}

async fn refresh(AxState(s): State) -> Result<Answer<Refreshed>, ApiError> {
    let round = s.service.refresh_stats(true).await?;
    Ok(Answer(Refreshed {
        success: True,
        queues: round.queues,
        took_ms: round.took.as_secs_f64() * 1000.0,
    }))
}
