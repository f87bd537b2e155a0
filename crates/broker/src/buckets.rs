//! How wide the buckets of a time series are for a window (spec §13.1): wider windows, wider
//! buckets, so a chart has a few dozen to a few hundred points whatever the span.

use chrono::{DateTime, Duration, Utc};

/// Minutes per bucket for a window of this length.
pub fn bucket_minutes(window: Duration) -> i32 {
    match window.num_minutes() {
        ..=60 => 1,
        61..=360 => 5,
        361..=1440 => 15,
        1441..=10_080 => 60,
        _ => 360,
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
        let w = |m| bucket_minutes(Duration::minutes(m));
        assert_eq!((w(30), w(60), w(61), w(360), w(1440)), (1, 1, 5, 5, 15));
        assert_eq!((w(1441), w(10_080), w(10_081)), (60, 60, 360));
        let to = Utc::now();
        assert_eq!(point_count(to - Duration::hours(1), to, 1), 60);
        assert_eq!(point_count(to - Duration::minutes(61), to, 5), 13);
        assert_eq!(point_count(to, to, 5), 0);
    }
}
