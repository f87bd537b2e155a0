//! How a consumer group is doing on a queue, in the words of Queen's dashboard.

/// Behind by more than this (seconds since the newest message it has not read) is lagging.
pub const LAGGING_AFTER_SECS: i64 = 300;

/// `Lagging` when the newest message the group has not read is older than five minutes;
/// otherwise `Stable` while the group consumes (a cursor moved off the beginning, or a live
/// lease), and `Dead` when it does not.
pub fn group_state(max_time_lag_secs: i64, consuming: bool) -> &'static str {
    if max_time_lag_secs > LAGGING_AFTER_SECS {
        "Lagging"
    } else if consuming {
        "Stable"
    } else {
        "Dead"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lag_wins_then_position() {
        assert_eq!(group_state(301, true), "Lagging");
        assert_eq!(group_state(301, false), "Lagging");
        assert_eq!(group_state(300, true), "Stable");
        assert_eq!(group_state(0, false), "Dead");
    }
}
