//! The rules of Queen's ephemeral queues (spec §18.3; docs/design/ephemeral.md): a queue's
//! options with their defaults and bounds, what a push over a bound does, the message ids
//! (which name the queue's incarnation), what an ack status means and what a set of acks
//! does to the deliveries they name.

use std::collections::HashMap;

/// The queues (declared or live) one tenant may have: each is bounded below, so this bounds
/// what a tenant can hold.
pub const MAX_QUEUES_PER_TENANT: i64 = 1_000;
/// The consumer groups a queue remembers. Past it a new group still pops, but the queue
/// does not keep messages for it (Queen's bound, for the same reason: names are the
/// client's).
pub const MAX_GROUPS_PER_QUEUE: i64 = 256;

/// `maxBytes` of a queue that does not say (Queen's default), and the most any may say.
pub const DEFAULT_MAX_BYTES: i64 = 16 * 1024 * 1024;
pub const MAX_MAX_BYTES: i64 = 64 * 1024 * 1024;
/// `maxLength` of a queue that does not say (Queen's default), and the most any may say.
pub const DEFAULT_MAX_LENGTH: i64 = 10_000;
pub const MAX_MAX_LENGTH: i64 = 100_000;
/// `leaseSeconds` by default, and at most a day.
pub const DEFAULT_LEASE_SECONDS: i64 = 30;
pub const MAX_LEASE_SECONDS: i64 = 86_400;
/// `retryLimit` by default, and at most.
pub const DEFAULT_RETRY_LIMIT: i64 = 5;
pub const MAX_RETRY_LIMIT: i64 = 1_000;
/// `windowBuffer`'s bounds (Queen's).
pub const MAX_WINDOW_MS: i64 = 60_000;
pub const MAX_WINDOW_COUNT: i64 = 10_000;

/// What a push over the queue's `maxLength` or `maxBytes` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// The push is refused whole (429): backpressure. The default, as in Queen.
    Reject,
    /// The oldest messages are dropped until the push fits: feed semantics.
    DropOldest,
}

impl Policy {
    /// The wire's spelling (Queen's): `reject`, `dropOldest`.
    pub fn parse(s: &str) -> Option<Policy> {
        match s {
            "reject" => Some(Policy::Reject),
            "dropOldest" => Some(Policy::DropOldest),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Reject => "reject",
            Policy::DropOldest => "dropOldest",
        }
    }
}

/// A queue's options as declared: `None` is the default. Stored as given, so a default or a
/// bound changed later applies to queues declared before.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Declared {
    pub max_bytes: Option<i64>,
    pub max_length: Option<i64>,
    pub policy: Option<Policy>,
    pub ttl_seconds: Option<i64>,
    pub lease_seconds: Option<i64>,
    pub retry_limit: Option<i64>,
    pub window_ms: Option<i64>,
    pub window_count: Option<i64>,
}

/// A queue's options in force: every default applied, every value within its bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    pub max_bytes: i64,
    pub max_length: i64,
    pub policy: Policy,
    /// 0: no age limit.
    pub ttl_seconds: i64,
    pub lease_seconds: i64,
    pub retry_limit: i64,
    pub window_ms: i64,
    pub window_count: i64,
}

impl Declared {
    /// The options in force: defaults for what is absent, values clamped to their bounds
    /// (as Queen does: a declaration is never refused for asking too much).
    pub fn resolve(&self) -> Options {
        Options {
            max_bytes: self
                .max_bytes
                .map_or(DEFAULT_MAX_BYTES, |v| v.clamp(1, MAX_MAX_BYTES)),
            max_length: self
                .max_length
                .map_or(DEFAULT_MAX_LENGTH, |v| v.clamp(1, MAX_MAX_LENGTH)),
            policy: self.policy.unwrap_or(Policy::Reject),
            ttl_seconds: self
                .ttl_seconds
                .unwrap_or(0)
                .clamp(0, crate::bounds::MAX_SPAN_SECONDS),
            lease_seconds: self
                .lease_seconds
                .map_or(DEFAULT_LEASE_SECONDS, |v| v.clamp(1, MAX_LEASE_SECONDS)),
            retry_limit: self
                .retry_limit
                .map_or(DEFAULT_RETRY_LIMIT, |v| v.clamp(0, MAX_RETRY_LIMIT)),
            window_ms: self.window_ms.unwrap_or(0).clamp(0, MAX_WINDOW_MS),
            window_count: self.window_count.unwrap_or(0).clamp(0, MAX_WINDOW_COUNT),
        }
    }
}

/// What a push may do, given what the queue holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Admit {
    Fits,
    /// Over a bound with `reject`: refused whole, nothing written.
    Full,
    /// Over a bound with `dropOldest`: drop the oldest messages until at least this many
    /// messages and bytes are gone, then write.
    DropOldest {
        count: i64,
        bytes: i64,
    },
    /// The push alone is over a bound: no policy can make it fit. The text says which.
    TooLarge(String),
}

/// Whether `adding` messages of `adding_bytes` fit a queue holding `held` of `held_bytes`.
pub fn admit(held: i64, held_bytes: i64, adding: i64, adding_bytes: i64, o: &Options) -> Admit {
    if adding > o.max_length {
        return Admit::TooLarge(format!(
            "a push of {adding} messages is over the queue's maxLength of {}",
            o.max_length
        ));
    }
    if adding_bytes > o.max_bytes {
        return Admit::TooLarge(format!(
            "a push of {adding_bytes} bytes is over the queue's maxBytes of {}",
            o.max_bytes
        ));
    }
    let count = held + adding - o.max_length;
    let bytes = held_bytes + adding_bytes - o.max_bytes;
    if count <= 0 && bytes <= 0 {
        return Admit::Fits;
    }
    match o.policy {
        Policy::Reject => Admit::Full,
        Policy::DropOldest => Admit::DropOldest {
            count: count.max(0),
            bytes: bytes.max(0),
        },
    }
}

/// A message's id: `e:<epoch, hex>:<partition>:<seq>`. Opaque to clients; it names the
/// queue's incarnation, so an ack that outlived it is told `stale`.
pub fn message_id(epoch: i64, partition: &str, seq: i64) -> String {
    format!("e:{epoch:x}:{partition}:{seq}")
}

/// An id's (epoch, partition, seq); `None` for anything [`message_id`] did not write. Read
/// from both ends: a partition name may hold `:`.
pub fn parse_id(id: &str) -> Option<(i64, &str, i64)> {
    let rest = id.strip_prefix("e:")?;
    let (epoch, rest) = rest.split_once(':')?;
    let (partition, seq) = rest.rsplit_once(':')?;
    if partition.is_empty() || epoch.is_empty() || seq.starts_with('+') {
        return None;
    }
    let epoch = i64::from_str_radix(epoch, 16).ok().filter(|e| *e >= 0)?;
    let seq = seq.parse::<i64>().ok().filter(|s| *s >= 0)?;
    Some((epoch, partition, seq))
}

/// What an ack asks of its message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckStatus {
    Completed,
    /// `failed`, or any status not known here: redelivered (or dropped past `retryLimit`).
    /// A typo must not retire a message.
    Failed,
    Retry,
}

impl AckStatus {
    /// Queen's reading: absent, `completed`, `success`, `acked`, `ok` complete; `retry`
    /// retries; anything else fails.
    pub fn parse(s: Option<&str>) -> AckStatus {
        match s {
            None | Some("completed" | "success" | "acked" | "ok") => AckStatus::Completed,
            Some("retry") => AckStatus::Retry,
            Some(_) => AckStatus::Failed,
        }
    }
}

/// Whether a message whose delivery is due again (a nack, an expired lease) after
/// `attempts` deliveries is given once more, or dropped: `retryLimit` deliveries at most
/// (Queen's count; `0` and `1` both mean one).
pub fn redeliver(attempts: i32, retry_limit: i64) -> bool {
    i64::from(attempts) < retry_limit
}

/// What an ack said of one id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Applied, and the message is done for the group (completed, or nacked past its
    /// `retryLimit` and dropped).
    Acked,
    /// Applied: the message comes back, `attempts` + 1.
    Redelivered,
    /// The id names another incarnation of the queue (a crash, a delete): nothing to do.
    Stale,
    /// This incarnation's id, but the group holds no delivery of it: acked already,
    /// dropped, reset, or not an id at all.
    Unknown,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Acked => "acked",
            Outcome::Redelivered => "redelivered",
            Outcome::Stale => "stale",
            Outcome::Unknown => "unknown",
        }
    }
}

/// A delivery the group holds: its partition and deliveries so far.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    pub partition: String,
    pub attempts: i32,
}

/// What a set of acks does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AckPlan {
    /// One per ack, in order.
    pub outcomes: Vec<Outcome>,
    /// Deliveries that end (completed, or dropped past the limit).
    pub done: Vec<i64>,
    /// Deliveries due again now.
    pub again: Vec<i64>,
    /// Of `done`, those dropped past `retryLimit`.
    pub dropped: i64,
}

/// The plan for `acks` (id, status) of one group: `epoch` is the queue's incarnation
/// (`None`: the queue has none now), `held` the group's deliveries among the ids' sequence
/// numbers. An id acked twice in one request is `unknown` the second time.
pub fn plan_acks(
    acks: &[(&str, AckStatus)],
    epoch: Option<i64>,
    held: &HashMap<i64, Held>,
    retry_limit: i64,
) -> AckPlan {
    let mut plan = AckPlan::default();
    let mut seen = std::collections::HashSet::new();
    for &(id, status) in acks {
        let outcome = match (parse_id(id), epoch) {
            (None, _) => Outcome::Unknown,
            (Some((e, _, _)), current) if current != Some(e) => Outcome::Stale,
            (Some((_, partition, seq)), _) => match held.get(&seq) {
                Some(h) if h.partition == partition && seen.insert(seq) => {
                    apply(&mut plan, seq, h, status, retry_limit)
                }
                _ => Outcome::Unknown,
            },
        };
        plan.outcomes.push(outcome);
    }
    plan
}

fn apply(plan: &mut AckPlan, seq: i64, h: &Held, status: AckStatus, limit: i64) -> Outcome {
    match status {
        AckStatus::Completed => {
            plan.done.push(seq);
            Outcome::Acked
        }
        AckStatus::Failed | AckStatus::Retry if redeliver(h.attempts, limit) => {
            plan.again.push(seq);
            Outcome::Redelivered
        }
        AckStatus::Failed | AckStatus::Retry => {
            plan.done.push(seq);
            plan.dropped += 1;
            Outcome::Acked
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_take_defaults_and_stay_within_bounds() {
        let o = Declared::default().resolve();
        assert_eq!(
            (o.max_bytes, o.max_length, o.policy, o.ttl_seconds),
            (DEFAULT_MAX_BYTES, DEFAULT_MAX_LENGTH, Policy::Reject, 0)
        );
        assert_eq!((o.lease_seconds, o.retry_limit), (30, 5));
        let o = Declared {
            max_bytes: Some(0),
            max_length: Some(i64::MAX),
            lease_seconds: Some(0),
            retry_limit: Some(-3),
            ttl_seconds: Some(-1),
            window_ms: Some(1_000_000),
            ..Default::default()
        }
        .resolve();
        assert_eq!((o.max_bytes, o.max_length), (1, MAX_MAX_LENGTH));
        assert_eq!((o.lease_seconds, o.retry_limit, o.ttl_seconds), (1, 0, 0));
        assert_eq!(o.window_ms, MAX_WINDOW_MS);
        let far = Declared {
            ttl_seconds: Some(i64::MAX),
            ..Declared::default()
        };
        assert_eq!(far.resolve().ttl_seconds, crate::bounds::MAX_SPAN_SECONDS);
    }

    #[test]
    fn policies_read_queens_spelling() {
        assert_eq!(Policy::parse("reject"), Some(Policy::Reject));
        assert_eq!(Policy::parse("dropOldest"), Some(Policy::DropOldest));
        assert_eq!(Policy::parse("drop_oldest"), None);
        assert_eq!(Policy::DropOldest.as_str(), "dropOldest");
    }

    #[test]
    fn a_push_over_a_bound_is_refused_or_makes_room_by_policy() {
        let mut o = Declared {
            max_length: Some(10),
            max_bytes: Some(100),
            ..Default::default()
        }
        .resolve();
        assert_eq!(admit(5, 50, 5, 50, &o), Admit::Fits);
        assert_eq!(admit(6, 10, 5, 10, &o), Admit::Full);
        assert_eq!(admit(1, 90, 1, 20, &o), Admit::Full);
        o.policy = Policy::DropOldest;
        assert_eq!(
            admit(6, 10, 5, 10, &o),
            Admit::DropOldest { count: 1, bytes: 0 }
        );
        assert_eq!(
            admit(1, 90, 1, 20, &o),
            Admit::DropOldest {
                count: 0,
                bytes: 10
            }
        );
        assert!(matches!(admit(0, 0, 11, 11, &o), Admit::TooLarge(t) if t.contains("maxLength")));
        assert!(matches!(admit(0, 0, 1, 101, &o), Admit::TooLarge(t) if t.contains("maxBytes")));
    }

    #[test]
    fn ids_round_trip_with_colons_in_the_partition() {
        let id = message_id(0xabc, "orders:eu", 42);
        assert_eq!(id, "e:abc:orders:eu:42");
        assert_eq!(parse_id(&id), Some((0xabc, "orders:eu", 42)));
        for bad in [
            "", "e:", "e:zz:p:1", "e:1::1", "e:1:p:x", "x:1:p:1", "e:1:p:-1", "e::p:1",
        ] {
            assert_eq!(parse_id(bad), None, "{bad}");
        }
    }

    #[test]
    fn statuses_read_as_queen_reads_them() {
        assert_eq!(AckStatus::parse(None), AckStatus::Completed);
        assert_eq!(AckStatus::parse(Some("success")), AckStatus::Completed);
        assert_eq!(AckStatus::parse(Some("retry")), AckStatus::Retry);
        assert_eq!(AckStatus::parse(Some("failed")), AckStatus::Failed);
        assert_eq!(AckStatus::parse(Some("typo")), AckStatus::Failed);
    }

    #[test]
    fn acks_resolve_to_their_outcomes() {
        let held: HashMap<i64, Held> = [(1, 1), (2, 1), (3, 5), (4, 2)]
            .into_iter()
            .map(|(seq, attempts)| {
                let partition = "p".to_string();
                (
                    seq,
                    Held {
                        partition,
                        attempts,
                    },
                )
            })
            .collect();
        let id = |seq| message_id(7, "p", seq);
        let (a1, a2, a3, a4, a9) = (id(1), id(2), id(3), id(4), id(9));
        let other = message_id(8, "p", 1);
        let wrong_partition = message_id(7, "q", 4);
        let acks = [
            (a1.as_str(), AckStatus::Completed),
            (a2.as_str(), AckStatus::Failed),
            (a3.as_str(), AckStatus::Retry),
            (a1.as_str(), AckStatus::Completed),
            (a9.as_str(), AckStatus::Completed),
            (other.as_str(), AckStatus::Completed),
            ("garbage", AckStatus::Completed),
            (wrong_partition.as_str(), AckStatus::Completed),
            (a4.as_str(), AckStatus::Retry),
        ];
        let plan = plan_acks(&acks, Some(7), &held, 5);
        use Outcome::*;
        assert_eq!(
            plan.outcomes,
            vec![
                Acked,
                Redelivered,
                Acked,
                Unknown,
                Unknown,
                Stale,
                Unknown,
                Unknown,
                Redelivered
            ]
        );
        assert_eq!(
            (plan.done, plan.again, plan.dropped),
            (vec![1, 3], vec![2, 4], 1)
        );
        // No incarnation now: every id is from a gone one.
        let plan = plan_acks(&acks[..1], None, &held, 5);
        assert_eq!(plan.outcomes, vec![Stale]);
    }

    #[test]
    fn retry_limit_counts_deliveries() {
        assert!(redeliver(4, 5));
        assert!(!redeliver(5, 5));
        assert!(!redeliver(1, 0));
        assert!(!redeliver(1, 1));
    }
}
