//! A queue's options as configured, with the defaults applied where the rules need them.
//!
//! Every field is optional: absent means "default", and for the two dead-letter flags that
//! third state is part of the contract (dead-lettering is off only when both are explicitly
//! false), so the options are stored as sent rather than with the defaults filled in.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueOptions {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_time: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_limit: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_delay: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_size: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dead_letter_queue: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dlq_after_max_retries: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delayed_processing: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_buffer: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retention_seconds: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed_retention_seconds: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retention_enabled: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encryption_enabled: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_wait_time_seconds: Option<i64>,
}

/// The integer options with their defaults, in the order the configure echo lists them.
pub const INT_DEFAULTS: [(&str, i64); 11] = [
    ("priority", 0),
    ("leaseTime", 300),
    ("retryLimit", 3),
    ("retryDelay", 1000),
    ("maxSize", 0),
    ("ttl", 3600),
    ("delayedProcessing", 0),
    ("windowBuffer", 0),
    ("retentionSeconds", 0),
    ("completedRetentionSeconds", 0),
    ("maxWaitTimeSeconds", 0),
];

/// The boolean options that default to false and have no third state.
pub const BOOL_DEFAULTS: [&str; 2] = ["retentionEnabled", "encryptionEnabled"];

/// The tri-state dead-letter flags.
pub const DLQ_FLAGS: [&str; 2] = ["deadLetterQueue", "dlqAfterMaxRetries"];

impl QueueOptions {
    /// The options as stored (a JSON object of what the client set). Anything unreadable is
    /// the defaults: the store only ever holds what [`QueueOptions::to_stored`] wrote.
    pub fn from_stored(v: &serde_json::Value) -> QueueOptions {
        QueueOptions::deserialize(v).unwrap_or_default()
    }

    /// What the store keeps: only the keys the client set.
    pub fn to_stored(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("options serialize")
    }

    /// Lease length of a pop in seconds; a stored 0 means 60 s, as in Queen.
    pub fn lease_seconds(&self) -> i64 {
        match self.lease_time.unwrap_or(300) {
            n if n <= 0 => 60,
            n => span(n),
        }
    }

    /// The nack budget per (partition, group).
    pub fn retry_limit(&self) -> i32 {
        self.retry_limit.unwrap_or(3).clamp(0, i32::MAX as i64) as i32
    }

    /// Off only when both flags were explicitly set to false; an unconfigured queue
    /// dead-letters.
    pub fn dead_letter_enabled(&self) -> bool {
        !(self.dead_letter_queue == Some(false) && self.dlq_after_max_retries == Some(false))
    }

    pub fn delayed_processing_seconds(&self) -> i64 {
        span(self.delayed_processing.unwrap_or(0))
    }

    pub fn window_buffer_seconds(&self) -> i64 {
        span(self.window_buffer.unwrap_or(0))
    }

    pub fn encrypted(&self) -> bool {
        self.encryption_enabled.unwrap_or(false)
    }

    pub fn priority(&self) -> i64 {
        self.priority.unwrap_or(0)
    }

    /// Queen's `retryDelay` (milliseconds), stored and echoed; Regent's retries are immediate.
    pub fn retry_delay_ms(&self) -> i64 {
        self.retry_delay.unwrap_or(1000)
    }

    /// Queen's `ttl` (seconds), stored and echoed.
    pub fn ttl_seconds(&self) -> i64 {
        self.ttl.unwrap_or(3600)
    }

    /// `maxSize`: 0 is unbounded.
    pub fn max_size(&self) -> i64 {
        self.max_size.unwrap_or(0)
    }

    /// How long messages are kept: (any message, a message every group has passed), in
    /// seconds, each `None` when it is kept forever. Queen reads `retentionSeconds` and
    /// `completedRetentionSeconds` only with `retentionEnabled`; with `implicit` (the broker's
    /// `IMPLICIT_RETENTION`, for clients that never send the switch, like the Python one) a
    /// positive number is enough unless the switch was sent false. `maxWaitTimeSeconds`
    /// evicts whatever the switch says, as Queen's eviction does: the shorter of it and
    /// `retentionSeconds` bounds every message's age.
    pub fn retention(&self, implicit: bool) -> (Option<i64>, Option<i64>) {
        let on = match self.retention_enabled {
            Some(flag) => flag,
            None => implicit,
        };
        let positive = |v: Option<i64>| v.filter(|s| *s > 0).map(span);
        let retained = positive(self.retention_seconds).filter(|_| on);
        let evicted = positive(self.max_wait_time_seconds);
        let any = match (retained, evicted) {
            (Some(r), Some(e)) => Some(r.min(e)),
            (r, e) => r.or(e),
        };
        (
            any,
            positive(self.completed_retention_seconds).filter(|_| on),
        )
    }
}

/// A stored number of seconds as a span the clocks can take: 0 through
/// [`OPTION_MAX`](crate::bounds::OPTION_MAX). Configure refuses more, but a row written
/// before it did (or by hand) must not make `now()` plus it leave PostgreSQL's timestamps.
fn span(seconds: i64) -> i64 {
    seconds.clamp(0, crate::bounds::OPTION_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_spans_past_the_bound_are_read_at_the_bound() {
        let far = i64::MAX;
        let o = QueueOptions {
            lease_time: Some(far),
            delayed_processing: Some(far),
            window_buffer: Some(far),
            retention_seconds: Some(far),
            completed_retention_seconds: Some(far),
            max_wait_time_seconds: Some(far),
            retention_enabled: Some(true),
            ..QueueOptions::default()
        };
        let max = crate::bounds::OPTION_MAX;
        assert_eq!(
            (
                o.lease_seconds(),
                o.delayed_processing_seconds(),
                o.window_buffer_seconds()
            ),
            (max, max, max)
        );
        assert_eq!(o.retention(false), (Some(max), Some(max)));
    }

    #[test]
    fn retention_needs_its_switch_unless_the_broker_reads_seconds_alone() {
        let o = |enabled, all, passed| QueueOptions {
            retention_enabled: enabled,
            retention_seconds: all,
            completed_retention_seconds: passed,
            ..QueueOptions::default()
        };
        assert_eq!(o(None, Some(60), Some(5)).retention(false), (None, None));
        assert_eq!(
            o(Some(true), Some(60), Some(5)).retention(false),
            (Some(60), Some(5))
        );
        assert_eq!(o(None, Some(60), None).retention(true), (Some(60), None));
        assert_eq!(
            o(Some(false), Some(60), Some(5)).retention(true),
            (None, None)
        );
        assert_eq!(
            o(Some(true), Some(0), Some(-1)).retention(false),
            (None, None)
        );
        let evicting = |enabled, all, wait| QueueOptions {
            max_wait_time_seconds: wait,
            ..o(enabled, all, None)
        };
        assert_eq!(
            evicting(None, None, Some(2)).retention(false),
            (Some(2), None)
        );
        assert_eq!(
            evicting(Some(false), Some(60), Some(2)).retention(true),
            (Some(2), None)
        );
        assert_eq!(
            evicting(Some(true), Some(60), Some(90)).retention(false),
            (Some(60), None)
        );
        assert_eq!(
            evicting(Some(true), Some(60), Some(0)).retention(false),
            (Some(60), None)
        );
    }

    #[test]
    fn dead_lettering_is_off_only_when_both_flags_are_false() {
        let cases = [
            (None, None, true),
            (Some(false), None, true),
            (None, Some(false), true),
            (Some(true), Some(false), true),
            (Some(false), Some(true), true),
            (Some(true), Some(true), true),
            (Some(false), Some(false), false),
        ];
        for (dlq, after, want) in cases {
            let o = QueueOptions {
                dead_letter_queue: dlq,
                dlq_after_max_retries: after,
                ..Default::default()
            };
            assert_eq!(o.dead_letter_enabled(), want, "{dlq:?} {after:?}");
        }
    }

    #[test]
    fn stored_options_round_trip_and_keep_only_what_was_set() {
        let o = QueueOptions {
            retry_limit: Some(5),
            dead_letter_queue: Some(false),
            ..Default::default()
        };
        let v = o.to_stored();
        assert_eq!(
            v,
            serde_json::json!({"retryLimit": 5, "deadLetterQueue": false})
        );
        assert_eq!(QueueOptions::from_stored(&v), o);
        assert_eq!(
            QueueOptions::from_stored(&serde_json::json!(null)),
            QueueOptions::default()
        );
    }

    #[test]
    fn defaults() {
        let o = QueueOptions::default();
        assert_eq!(o.lease_seconds(), 300);
        assert_eq!(o.retry_limit(), 3);
        assert!(!o.encrypted());
        let zero = QueueOptions {
            lease_time: Some(0),
            ..Default::default()
        };
        assert_eq!(zero.lease_seconds(), 60);
    }
}
