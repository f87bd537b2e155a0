//! How far a number may reach once it meets a clock or a column: every number a client sends
//! that becomes a span of time, a timestamp or a PostgreSQL integer is checked against one
//! of these before any SQL, so a client's number is refused by name (or, where Queen clamps,
//! clamped), never answered with PostgreSQL's `timestamp out of range` and never stored where
//! it would make a queue unusable later. docs/api.md, "Bounds", lists each field's.

/// The longest span of time a duration field may name, either way: ten years. `now()` plus
/// or minus it stays inside PostgreSQL's timestamps and RFC 3339's four-digit years.
pub const MAX_SPAN_SECONDS: i64 = 10 * 365 * 24 * 3600;
/// [`MAX_SPAN_SECONDS`] in milliseconds.
pub const MAX_SPAN_MS: i64 = MAX_SPAN_SECONDS * 1000;

/// A queue option's range: Queen keeps each in an `INTEGER` column, so no Queen client sends
/// more; a span of 2^31-1 seconds (68 years) still stays inside PostgreSQL's timestamps.
pub const OPTION_MIN: i64 = i32::MIN as i64;
pub const OPTION_MAX: i64 = i32::MAX as i64;

/// A listing's `offset`: past any number of rows a listing could page through (and far from
/// where `offset + limit` overflows).
pub const MAX_OFFSET: i64 = i32::MAX as i64;

/// A number past its field's bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutOfBounds {
    pub field: String,
    pub min: i64,
    pub max: i64,
}

impl std::fmt::Display for OutOfBounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} must be between {} and {}",
            self.field, self.min, self.max
        )
    }
}

/// `v` when it lies in `min..=max`; otherwise which field and its range.
pub fn within(field: &str, v: i64, min: i64, max: i64) -> Result<i64, OutOfBounds> {
    if (min..=max).contains(&v) {
        Ok(v)
    } else {
        Err(OutOfBounds {
            field: field.to_string(),
            min,
            max,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_inside_its_range_passes_and_one_outside_names_its_field_and_range() {
        assert_eq!(within("ttlSeconds", 1, 1, MAX_SPAN_SECONDS), Ok(1));
        assert_eq!(
            within("ttlSeconds", MAX_SPAN_SECONDS, 1, MAX_SPAN_SECONDS),
            Ok(MAX_SPAN_SECONDS)
        );
        let e = within("ttlSeconds", MAX_SPAN_SECONDS + 1, 1, MAX_SPAN_SECONDS).unwrap_err();
        assert_eq!(e.to_string(), "ttlSeconds must be between 1 and 315360000");
        assert!(within("x", i64::MIN, OPTION_MIN, OPTION_MAX).is_err());
    }

    #[test]
    fn the_longest_span_from_now_is_a_timestamp_postgresql_and_rfc_3339_hold() {
        // PostgreSQL's timestamps end in 294276; RFC 3339's years have four digits.
        let now_year = 2026;
        assert!(now_year + MAX_SPAN_SECONDS / (365 * 24 * 3600) < 9999);
        assert!(now_year + OPTION_MAX / (365 * 24 * 3600) < 9999);
    }
}
