//! Instants as operators write them: `15m ago`, `2h ago`, `now`, or RFC 3339
//! (`2026-12-05T10:00:00Z`, also with a space for the `T`).

use chrono::{DateTime, SecondsFormat, Utc};

use crate::exit::Failure;

/// The instant `text` names, in RFC 3339 as the broker reads it.
pub fn instant(text: &str, now: DateTime<Utc>) -> Result<String, Failure> {
    let t = text.trim();
    let at = if t.eq_ignore_ascii_case("now") {
        now
    } else if let Some(span) = t.strip_suffix("ago") {
        let d = humantime::parse_duration(span.trim()).map_err(|e| bad(text, &e.to_string()))?;
        let d = chrono::Duration::from_std(d).map_err(|e| bad(text, &e.to_string()))?;
        now - d
    } else {
        DateTime::parse_from_rfc3339(&t.replacen(' ', "T", 1))
            .map_err(|e| bad(text, &e.to_string()))?
            .with_timezone(&Utc)
    };
    Ok(at.to_rfc3339_opts(SecondsFormat::Millis, true))
}

fn bad(text: &str, why: &str) -> Failure {
    Failure::user(format!(
        "\"{text}\" is not a time ({why}): write '15m ago', 'now' or an RFC 3339 instant \
         such as 2026-12-05T10:00:00Z"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-12-05T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn reads_spans_ago_instants_and_now() {
        assert_eq!(
            instant("15m ago", now()).unwrap(),
            "2026-12-05T11:45:00.000Z"
        );
        assert_eq!(
            instant("1h 30m ago", now()).unwrap(),
            "2026-12-05T10:30:00.000Z"
        );
        assert_eq!(instant("now", now()).unwrap(), "2026-12-05T12:00:00.000Z");
        assert_eq!(
            instant("2026-12-01 08:00:00+01:00", now()).unwrap(),
            "2026-12-01T07:00:00.000Z"
        );
    }

    #[test]
    fn refuses_what_is_not_a_time() {
        for t in ["yesterday", "15 ago", "2026-13-01T00:00:00Z", ""] {
            let e = instant(t, now()).unwrap_err();
            assert!(e.message.contains("is not a time"), "{t}: {}", e.message);
        }
    }
}
