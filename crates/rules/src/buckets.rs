//! How wide the buckets of a time series are for a window (spec §13.1): wider windows, wider
//! buckets, so a chart has a few dozen to a few hundred points whatever the span.

use chrono::{DateTime, Duration, Utc};

/// Minutes per bucket for a window of this length: up to an hour 1, up to 6 hours 5, up to
/// a day 15, up to a week 60, beyond 360.
pub fn bucket_minutes(window: Duration) -> i32 {
    let hours = Duration::hours;
    if window <= hours(1) {
        1
    } else if window <= hours(6) {
        5
    } else if window <= hours(24) {
        15
    } else if window <= hours(7 * 24) {
        60
    } else {
        360
    }
}

/// The number of buckets of `minutes` covering [from, to).
pub fn point_count(from: DateTime<Utc>, to: DateTime<Utc>, minutes: i32) -> i64 {
    let span = (to - from).num_seconds().max(0);
    let width = i64::from(minutes.max(1)) * 60;
    (span + width - 1) / width
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_widen_with_the_window() {
        let m = Duration::minutes;
        for (span, width) in [
            (m(0), 1),
            (m(60), 1),
            (m(61), 5),
            (m(360), 5),
            (m(361), 15),
            (m(1440), 15),
            (m(1441), 60),
            (m(7 * 1440), 60),
            (m(7 * 1440 + 1), 360),
            (Duration::seconds(3601), 5),
        ] {
            assert_eq!(bucket_minutes(span), width, "{span}");
        }
        let to = Utc::now();
        assert_eq!(point_count(to - Duration::hours(1), to, 1), 60);
        assert_eq!(point_count(to - Duration::minutes(61), to, 5), 13);
        assert_eq!(point_count(to, to, 5), 0);
    }
}
