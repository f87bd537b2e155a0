//! The instants a query string names (`from`, `to`): read here, documented here, and the
//! window they make, answered here (the formats on the wire are `crate::answer`'s `Millis`
//! and `Micros`).

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::answer::Millis;
use super::error::ApiError;
use super::params::Params;

/// The query parameter `key` as an ISO-8601 instant, if sent; 400 naming it otherwise.
pub fn instant(p: &Params, key: &str) -> Result<Option<DateTime<Utc>>, ApiError> {
    p.str(key)
        .map(|s| {
            DateTime::parse_from_rfc3339(s)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|_| ApiError::bad_request(format!("{key} must be an ISO-8601 timestamp")))
        })
        .transpose()
}

/// `from` and `to` as [`instant`] reads them: a window ending at `to` (default now) and
/// starting at `from` (default: `HOURS` hours before `to`, as the route reads it).
#[derive(Deserialize, JsonSchema)]
#[expect(
    dead_code,
    reason = "describes the query string; `Params` reads it, by Queen's rules"
)]
pub(crate) struct WindowQuery<const HOURS: u32> {
    #[schemars(
        with = "String",
        extend("format" = "date-time"),
        description = format!("Start of the window; default: {HOURS} h before `to`.")
    )]
    from: Option<String>,
    /// End of the window; default now.
    #[schemars(with = "String", extend("format" = "date-time"))]
    to: Option<String>,
}

/// A window as the answers name it.
#[derive(Serialize, JsonSchema)]
pub(crate) struct TimeRange {
    from: Millis,
    to: Millis,
}

impl TimeRange {
    pub(crate) fn new(from: DateTime<Utc>, to: DateTime<Utc>) -> TimeRange {
        TimeRange {
            from: Millis(from),
            to: Millis(to),
        }
    }
}
