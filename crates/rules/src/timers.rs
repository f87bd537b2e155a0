//! Queen's timers, the rules: what a schedule or cancel does to what it finds at its key, the
//! statuses it answers (the client's closed taxonomy), how far a delay may reach, and how long
//! a fire that failed is put off.

/// What a timer operation answers (`queen/timers/timers.py`, `TimerResult`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerStatus {
    /// Stored under a key that had no pending timer.
    Scheduled,
    /// Stored under a key whose pending timer it replaced.
    Rescheduled,
    /// The pending timer is gone and will not fire.
    Cancelled,
    /// No pending timer (with that txn): never scheduled, cancelled, or already delivered.
    Absent,
    /// A fire holds the timer and is about to commit its message: nothing was changed.
    TooLate,
}

impl TimerStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TimerStatus::Scheduled => "scheduled",
            TimerStatus::Rescheduled => "rescheduled",
            TimerStatus::Cancelled => "cancelled",
            TimerStatus::Absent => "absent",
            TimerStatus::TooLate => "too_late",
        }
    }

    /// Whether the operation did what it was asked (the answer's `ok`).
    pub fn ok(self) -> bool {
        matches!(
            self,
            TimerStatus::Scheduled | TimerStatus::Rescheduled | TimerStatus::Cancelled
        )
    }
}

/// What an operation found at its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    Nothing,
    /// A pending timer, locked for this operation.
    Held,
    /// A pending timer a fire holds.
    Firing,
}

/// A schedule (or reschedule: the same upsert) writes unless a fire holds the key.
pub fn schedule(found: Found) -> TimerStatus {
    match found {
        Found::Nothing => TimerStatus::Scheduled,
        Found::Held => TimerStatus::Rescheduled,
        Found::Firing => TimerStatus::TooLate,
    }
}

/// A cancel deletes what it holds.
pub fn cancel(found: Found) -> TimerStatus {
    match found {
        Found::Nothing => TimerStatus::Absent,
        Found::Held => TimerStatus::Cancelled,
        Found::Firing => TimerStatus::TooLate,
    }
}

/// The longest delay a timer takes, either way: ten years of milliseconds. Queen's wire has no
/// bound; this one keeps `now() + delay` inside PostgreSQL's timestamps with room to spare.
pub const MAX_DELAY_MS: i64 = crate::bounds::MAX_SPAN_MS;

/// Whether `ms` is a delay a timer takes (a delay in the past fires at once).
pub fn delay_ok(ms: i64) -> bool {
    (-MAX_DELAY_MS..=MAX_DELAY_MS).contains(&ms)
}

/// The longest a failed fire is put off.
pub const MAX_RETRY_MS: f64 = 300_000.0;

/// How long a fire that failed (`attempts` failures before this one) is put off: one second,
/// doubling, at most five minutes.
pub fn retry_delay_ms(attempts: i32) -> f64 {
    (1000.0 * 2f64.powi(attempts.clamp(0, 30))).min(MAX_RETRY_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schedule_writes_unless_a_fire_holds_the_key() {
        assert_eq!(schedule(Found::Nothing), TimerStatus::Scheduled);
        assert_eq!(schedule(Found::Held), TimerStatus::Rescheduled);
        assert_eq!(schedule(Found::Firing), TimerStatus::TooLate);
    }

    #[test]
    fn a_cancel_deletes_what_it_holds() {
        assert_eq!(cancel(Found::Nothing), TimerStatus::Absent);
        assert_eq!(cancel(Found::Held), TimerStatus::Cancelled);
        assert_eq!(cancel(Found::Firing), TimerStatus::TooLate);
    }

    #[test]
    fn only_what_was_done_is_ok() {
        let ok: Vec<&str> = [
            TimerStatus::Scheduled,
            TimerStatus::Rescheduled,
            TimerStatus::Cancelled,
            TimerStatus::Absent,
            TimerStatus::TooLate,
        ]
        .into_iter()
        .filter(|s| s.ok())
        .map(TimerStatus::as_str)
        .collect();
        assert_eq!(ok, ["scheduled", "rescheduled", "cancelled"]);
    }

    #[test]
    fn delays_reach_ten_years_either_way() {
        assert!(delay_ok(0) && delay_ok(-5) && delay_ok(MAX_DELAY_MS) && delay_ok(-MAX_DELAY_MS));
        assert!(!delay_ok(MAX_DELAY_MS + 1) && !delay_ok(i64::MIN));
    }

    #[test]
    fn failed_fires_back_off_to_five_minutes() {
        assert_eq!(retry_delay_ms(0), 1000.0);
        assert_eq!(retry_delay_ms(3), 8000.0);
        assert_eq!(retry_delay_ms(20), MAX_RETRY_MS);
        assert_eq!(retry_delay_ms(i32::MAX), MAX_RETRY_MS);
        assert_eq!(retry_delay_ms(-1), 1000.0);
    }
}
