//! Timestamp formats on the wire: milliseconds almost everywhere, microseconds on pop.

use chrono::{DateTime, SecondsFormat, Utc};

pub fn millis(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

pub fn micros(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}
