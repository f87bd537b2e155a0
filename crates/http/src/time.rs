//! Timestamp formats on the wire: milliseconds almost everywhere, microseconds on pop.

use chrono::{DateTime, SecondsFormat, Utc};

use super::error::ApiError;
use super::params::Params;

pub fn millis(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

pub fn micros(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

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
