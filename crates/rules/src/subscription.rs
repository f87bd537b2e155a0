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

/// `subscriptionFrom` wins over `subscriptionMode`. Of the modes, `new` (Queen 0.15's one
/// word) and Regent's aliases `new-only` and `now` start at the current instant; every other
/// mode starts at the beginning, as in 0.15: the clients send `from_beginning`, which 0.15
/// never names. An unparsable `subscriptionFrom` is refused rather than silently read as
/// "all" (0.15's reading): it is a timestamp the client passes through from its user.
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
        "new" | "new-only" | "now" => Ok(StartPoint::After(now)),
        _ => Ok(StartPoint::Beginning),
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
        for mode in ["from_beginning", "latest", "NEW", ""] {
            assert_eq!(
                start_point(Some(mode), None, now),
                Ok(StartPoint::Beginning),
                "{mode}"
            );
        }
    }
}
