//! The instants a query string names (`from`, `to`): read here, documented here, and the
//! window they make, answered here (the formats on the wire are `crate::answer`'s `Millis`
//! and `Micros`).

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use super::answer::Millis;
use super::error::ApiError;
use super::params;

/// A query string's ISO-8601 instant (a field of a query type, `#[serde(default)]`): absent,
/// an instant, or the refusal naming its key. The refusal is raised when the handler takes
/// the value ([`Instant::get`]), not when the query string is read, so that the handler
/// decides which of two malformed instants a 400 names (the status windows and the message
/// listing name `to` first, the other routes `from`), whatever order the type declares.
#[derive(Default)]
pub(crate) struct Instant(Option<Result<DateTime<Utc>, String>>);

impl<'de> Deserialize<'de> for Instant {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Instant, D::Error> {
        let read = params::parse(d, |s| {
            DateTime::parse_from_rfc3339(s)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|_| "must be an ISO-8601 timestamp".to_string())
        });
        // The query string has named the key in the refusal (`to must be …`).
        Ok(Instant(Some(read.map_err(|e| e.to_string()))))
    }
}

impl Instant {
    /// The instant, if sent; the 400 naming its key if it is not one.
    pub(crate) fn get(&self) -> Result<Option<DateTime<Utc>>, ApiError> {
        self.0.clone().transpose().map_err(ApiError::bad_request)
    }
}

/// `from` and `to`: a window ending at `to` (default now) and starting at `from` (default:
/// `HOURS` hours before `to`, as the route reads it).
#[derive(Deserialize, JsonSchema)]
pub(crate) struct WindowQuery<const HOURS: u32> {
    #[serde(default)]
    #[schemars(
        with = "String",
        extend("format" = "date-time"),
        description = format!("Start of the window; default: {HOURS} h before `to`.")
    )]
    pub(crate) from: Instant,
    /// End of the window; default now.
    #[serde(default)]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub(crate) to: Instant,
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
