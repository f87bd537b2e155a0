//! Where a named consumer group starts on first join.

use chrono::{DateTime, Utc};

/// The start point a new named group asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartPoint {
    /// From the first message still in the log.
    Beginning,
    /// Only messages appended after this instant.
    After(DateTime<Utc>),
}

#[derive(Debug, PartialEq, Eq)]
pub struct BadSubscription(pub String);

/// `subscriptionFrom` wins over `subscriptionMode`; `now`, `new` and `new-only` start at the
/// current instant; an empty or `all` mode starts at the beginning. An unparsable value is
/// refused rather than silently read as "all": the client passes user input through.
pub fn start_point(
    mode: Option<&str>,
    from: Option<&str>,
    now: DateTime<Utc>,
) -> Result<StartPoint, BadSubscription> {
    if let Some(from) = from.filter(|s| !s.is_empty()) {
        if from == "now" {
            return Ok(StartPoint::After(now));
        }
        return DateTime::parse_from_rfc3339(from)
            .map(|t| StartPoint::After(t.with_timezone(&Utc)))
            .map_err(|_| {
                BadSubscription(format!(
                    "subscriptionFrom must be an ISO-8601 timestamp or 'now', got '{from}'"
                ))
            });
    }
    match mode.unwrap_or("") {
        "" | "all" => Ok(StartPoint::Beginning),
        "new" | "new-only" | "now" => Ok(StartPoint::After(now)),
        other => Err(BadSubscription(format!(
            "subscriptionMode must be one of all, new, new-only, now; got '{other}'"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_wins_over_mode() {
        let now = Utc::now();
        assert_eq!(
            start_point(Some("new"), None, now),
            Ok(StartPoint::After(now))
        );
        assert_eq!(
            start_point(Some("all"), None, now),
            Ok(StartPoint::Beginning)
        );
        assert_eq!(start_point(None, None, now), Ok(StartPoint::Beginning));
        assert_eq!(
            start_point(Some("all"), Some("now"), now),
            Ok(StartPoint::After(now))
        );
        let t = "2026-01-02T03:04:05Z";
        assert_eq!(
            start_point(Some("all"), Some(t), now),
            Ok(StartPoint::After(
                DateTime::parse_from_rfc3339(t).unwrap().with_timezone(&Utc)
            ))
        );
        assert!(start_point(None, Some("yesterday"), now).is_err());
        assert!(start_point(Some("latest"), None, now).is_err());
    }
}
