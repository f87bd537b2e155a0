//! What one ack call does to the cursor of one `(partition, consumer group)`.
//!
//! An ack is an offset commit, not a per-message delete, so the whole decision is a pure
//! function of the locked cursor row, the queue's retry policy and the resolved items. The
//! service reads the row through the store, calls [`plan`], and has the store write back
//! exactly what the plan says, in the same transaction.

use crate::status::AckStatus;

pub const CONSUMER_NOT_FOUND: &str = "consumer not found";
pub const INVALID_LEASE: &str = "invalid or expired lease";
pub const ALREADY_COMMITTED: &str =
    "already committed: the cursor moved past this message before this ack";
pub const UNRESOLVABLE: &str = "unresolvable: transaction not in the ack window (hash purged or never pushed); if leased, the message redelivers";
pub const FLUSH_FAILED: &str = "ack flush failed; lease will expire and redeliver";
pub const POOL: &str = "pool";
pub const NOT_OWNED: &str = "partition not owned by tenant";
pub const SUPERSEDED: &str = "superseded: an explicit failed/retry/dlq at a lower offset in this call clamps the cursor; this message redelivers";
pub const DEFAULT_DLQ_REASON: &str = "Retries exhausted";

/// The locked cursor row of one (partition, consumer group), as the store read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CursorView {
    /// Every offset <= committed is done; -1 = nothing consumed.
    pub committed: i64,
    /// Some(last offset of the leased range) while a lease is live (unexpired, not released).
    pub live_lease_end: Option<i64>,
    /// Last offset of the most recent lease, live or not (None if never leased).
    /// Kept separately because a batch whose lease expired can still be completed by a
    /// lease-less ack, and that completion must still reset the retry budget.
    pub last_lease_end: Option<i64>,
    pub retry_count: i32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    pub retry_limit: i32,
    pub dead_letter: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AckItem {
    pub status: AckStatus,
    /// None = the transactionId did not resolve through the transaction index.
    pub offset: Option<i64>,
    pub error: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ItemOutcome {
    pub success: bool,
    pub error: Option<String>,
    pub lease_released: bool,
    pub dlq: bool,
    pub noop: bool,
}

impl ItemOutcome {
    pub fn refused(error: &str) -> Self {
        ItemOutcome {
            success: false,
            error: Some(error.to_owned()),
            ..ItemOutcome::default()
        }
    }

    fn carried_out(lease_released: bool) -> Self {
        ItemOutcome {
            success: true,
            lease_released,
            ..ItemOutcome::default()
        }
    }

    fn duplicate() -> Self {
        ItemOutcome {
            success: true,
            noop: true,
            ..ItemOutcome::default()
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadLetter {
    pub offset: i64,
    pub reason: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AckPlan {
    /// Same length and order as the input items.
    pub items: Vec<ItemOutcome>,
    /// New cursor value (>= old).
    pub committed: i64,
    /// Clear the live lease.
    pub release_lease: bool,
    /// New counter value.
    pub retry_count: i32,
    pub dead_letter: Option<DeadLetter>,
    /// False when nothing about the cursor row changes (all items noop/refused) so the store
    /// can skip the write.
    pub changed: bool,
}

impl AckPlan {
    /// Every item refused with the same error, changed=false.
    ///
    /// Used when the group fails before a cursor could be read (no cursor, bad lease, no
    /// connection), so there is no real cursor to report: `committed` is -1 and
    /// `retry_count` 0, and the store must not write them (`changed` is false).
    pub fn refuse_all(n: usize, error: &str) -> AckPlan {
        AckPlan {
            items: vec![ItemOutcome::refused(error); n],
            committed: -1,
            release_lease: false,
            retry_count: 0,
            dead_letter: None,
            changed: false,
        }
    }

    /// Whether carrying out this plan leaves the group's other consumers something to claim
    /// at once: it ends the lease with messages past the new cursor (a nack to retry, a
    /// batch acked in part), on a partition whose next offset is `next_offset`.
    pub fn reopens(&self, next_offset: i64) -> bool {
        self.release_lease && self.committed + 1 < next_offset
    }

    /// The plan with the live lease ended even where the seed would keep it (a batch acked
    /// in part): a stream cycle's `release_lease`. A plan that refused or changed nothing is
    /// returned as it was: there is nothing to release on its behalf.
    pub fn releasing(mut self) -> AckPlan {
        let carried = !self.items.is_empty() && self.items.iter().all(|o| o.success && !o.noop);
        if carried && !self.release_lease {
            self.release_lease = true;
            self.changed = true;
            for o in &mut self.items {
                o.lease_released = true;
            }
        }
        self
    }
}

/// One item that survived classification and takes part in the commit decision.
struct Participant<'a> {
    index: usize,
    offset: i64,
    item: &'a AckItem,
}

/// A replayed ack whose lease has ended since: when every item is a `completed` that the
/// cursor has already passed, the retry changes nothing and is answered as the no-op it is.
/// Transactions use this so that re-sending a committed bundle (the client retries after a
/// lost answer) is harmless even though the bundle itself released the lease.
pub fn replay(committed: i64, items: &[AckItem]) -> Option<AckPlan> {
    let all_done = items
        .iter()
        .all(|i| i.status == AckStatus::Completed && i.offset.is_some_and(|o| o <= committed));
    (all_done && !items.is_empty()).then(|| AckPlan {
        items: vec![
            ItemOutcome {
                success: true,
                noop: true,
                ..ItemOutcome::default()
            };
            items.len()
        ],
        committed,
        release_lease: false,
        retry_count: 0,
        dead_letter: None,
        changed: false,
    })
}

/// `leased`: the ack carried a leaseId that the store already validated as the live lease
/// (so cursor.live_lease_end is Some).
pub fn plan(cursor: &CursorView, policy: &Policy, leased: bool, items: &[AckItem]) -> AckPlan {
    let c = cursor.committed;
    let mut outcomes: Vec<Option<ItemOutcome>> = Vec::with_capacity(items.len());
    let mut participants: Vec<Participant<'_>> = Vec::new();

    for (index, item) in items.iter().enumerate() {
        let outcome = match item.offset {
            None => Some(ItemOutcome::refused(UNRESOLVABLE)),
            // A signal at or below the cursor cannot be honoured any more; reporting it as done
            // would silently lose a nack.
            Some(offset) if offset <= c => Some(if item.status.is_signal() {
                ItemOutcome::refused(ALREADY_COMMITTED)
            } else {
                ItemOutcome::duplicate()
            }),
            // A validated lease only vouches for its own range. If the caller broke the
            // "leased implies live lease" precondition, nothing is covered: refusing is the
            // side that cannot lose or skip a message.
            Some(offset) if leased && cursor.live_lease_end.is_none_or(|end| offset > end) => {
                Some(ItemOutcome::refused(INVALID_LEASE))
            }
            Some(offset) => {
                participants.push(Participant {
                    index,
                    offset,
                    item,
                });
                None
            }
        };
        outcomes.push(outcome);
    }

    // Duplicates and refusals alone must leave the row exactly as it was, even where the
    // lease/counter rules below would otherwise tidy it: a noop changes nothing.
    if participants.is_empty() {
        return AckPlan {
            items: outcomes
                .into_iter()
                .map(Option::unwrap_or_default)
                .collect(),
            committed: c,
            release_lease: false,
            retry_count: cursor.retry_count,
            dead_letter: None,
            changed: false,
        };
    }

    let lowest_signal = participants
        .iter()
        .filter(|p| p.item.status.is_signal())
        .map(|p| p.offset)
        .min();

    let decision = match lowest_signal {
        None => complete(cursor, &participants),
        Some(e) => signal_at(cursor, policy, &participants, e),
    };

    for (participant, outcome) in participants.iter().zip(decision.participants) {
        outcomes[participant.index] = Some(outcome);
    }

    let changed = decision.committed != c
        || decision.release_lease
        || decision.retry_count != cursor.retry_count
        || decision.dead_letter.is_some();
    debug_assert!(decision.committed >= c, "the cursor never moves backwards");

    AckPlan {
        items: outcomes
            .into_iter()
            .map(Option::unwrap_or_default)
            .collect(),
        committed: decision.committed,
        release_lease: decision.release_lease,
        retry_count: decision.retry_count,
        dead_letter: decision.dead_letter,
        changed,
    }
}

/// The cursor-row part of the plan, plus outcomes for the participants in their order.
struct Decision {
    participants: Vec<ItemOutcome>,
    committed: i64,
    release_lease: bool,
    retry_count: i32,
    dead_letter: Option<DeadLetter>,
}

/// Only completions: commit up to the highest one, which completes the silent gaps below it.
fn complete(cursor: &CursorView, participants: &[Participant<'_>]) -> Decision {
    let highest = participants.iter().map(|p| p.offset).max();
    let committed = highest.map_or(cursor.committed, |h| h.max(cursor.committed));

    // A partial commit keeps the lease so the rest of the batch can still be acked under it.
    let release_lease = cursor.live_lease_end.is_some_and(|end| committed >= end);
    // Compared with the last lease, not the live one, so a batch finished after its lease
    // expired still earns back its budget.
    let batch_done = cursor.last_lease_end.is_some_and(|end| committed >= end);
    let retry_count = if batch_done { 0 } else { cursor.retry_count };

    Decision {
        participants: participants
            .iter()
            .map(|_| ItemOutcome::carried_out(release_lease))
            .collect(),
        committed,
        release_lease,
        retry_count,
        dead_letter: None,
    }
}

/// An explicit signal at `e` (the lowest one) clamps the cursor there, whatever was completed
/// above it in the same call.
fn signal_at(
    cursor: &CursorView,
    policy: &Policy,
    participants: &[Participant<'_>],
    e: i64,
) -> Decision {
    let signal = participants
        .iter()
        .filter(|p| p.offset == e && p.item.status.is_signal())
        .map(|p| p.item.status)
        .max_by_key(|s| s.strength())
        .expect("e is the offset of a signal participant");

    let prefix = participants
        .iter()
        .filter(|p| p.offset < e && p.item.status == AckStatus::Completed)
        .map(|p| p.offset)
        .fold(cursor.committed, i64::max);

    // Dead-lettered and dropped messages count as resolved, so the cursor lands on `e` and the
    // silent gaps below it complete; the counter resets because the poison message is gone.
    let (committed, retry_count, files_dead_letter) = match signal {
        AckStatus::Retry => (prefix, cursor.retry_count, false),
        // The budget: with `retryLimit` 3, nacks at counts 0, 1 and 2 are charged and
        // redeliver; the nack at count 3 finds the budget spent and dead-letters (or drops).
        AckStatus::Failed if cursor.retry_count < policy.retry_limit => {
            (prefix, cursor.retry_count.saturating_add(1), false)
        }
        AckStatus::Failed => (e, 0, policy.dead_letter),
        AckStatus::Dlq => (e, 0, true),
        AckStatus::Completed => unreachable!("only signals are selected at e"),
    };

    // Every signal outcome hands the partition back for redelivery, but only an ack that
    // actually found a live lease can claim to have ended it.
    let ended_lease = cursor.live_lease_end.is_some();

    let mut outcomes: Vec<ItemOutcome> = participants
        .iter()
        .map(|p| {
            let status = p.item.status;
            let honoured = if p.offset < e {
                true
            } else if p.offset == e {
                status.is_signal()
            } else {
                // Above `e` everything redelivers: that is what failed/retry asked for, but a
                // completion or a dead-letter request there was not carried out.
                matches!(status, AckStatus::Failed | AckStatus::Retry)
            };
            if honoured {
                ItemOutcome::carried_out(ended_lease)
            } else {
                ItemOutcome::refused(SUPERSEDED)
            }
        })
        .collect();

    let dead_letter = files_dead_letter.then(|| {
        if let Some(i) = participants
            .iter()
            .position(|p| p.offset == e && p.item.status.is_signal())
        {
            outcomes[i].dlq = true;
        }
        DeadLetter {
            offset: e,
            reason: dead_letter_reason(participants, e),
        }
    });

    Decision {
        participants: outcomes,
        committed,
        release_lease: true,
        retry_count,
        dead_letter,
    }
}

/// The poison message's own nack explains it best; any other nack in the call is the next
/// best guess.
fn dead_letter_reason(participants: &[Participant<'_>], e: i64) -> String {
    fn reason_of<'a>(p: &Participant<'a>) -> Option<&'a str> {
        let item: &'a AckItem = p.item;
        item.error
            .as_deref()
            .filter(|r| item.status.is_signal() && !r.is_empty())
    }
    participants
        .iter()
        .filter(|p| p.offset == e)
        .find_map(reason_of)
        .or_else(|| participants.iter().find_map(reason_of))
        .unwrap_or(DEFAULT_DLQ_REASON)
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use AckStatus::{Completed, Dlq, Failed, Retry};

    /// A batch delivered as offsets 10-19 with the cursor at 9.
    fn batch() -> CursorView {
        CursorView {
            committed: 9,
            live_lease_end: Some(19),
            last_lease_end: Some(19),
            retry_count: 0,
        }
    }

    fn batch_charged(retry_count: i32) -> CursorView {
        CursorView {
            retry_count,
            ..batch()
        }
    }

    /// The same batch after its lease expired (or was released) without the batch completing.
    fn expired(retry_count: i32) -> CursorView {
        CursorView {
            live_lease_end: None,
            ..batch_charged(retry_count)
        }
    }

    const DLQ_ON: Policy = Policy {
        retry_limit: 3,
        dead_letter: true,
    };
    const DLQ_OFF: Policy = Policy {
        retry_limit: 3,
        dead_letter: false,
    };

    fn it(status: AckStatus, offset: i64) -> AckItem {
        AckItem {
            status,
            offset: Some(offset),
            error: None,
        }
    }

    fn it_err(status: AckStatus, offset: i64, error: &str) -> AckItem {
        AckItem {
            status,
            offset: Some(offset),
            error: Some(error.to_owned()),
        }
    }

    fn unresolved(status: AckStatus) -> AckItem {
        AckItem {
            status,
            offset: None,
            error: Some("ignored".to_owned()),
        }
    }

    #[test]
    fn releasing_ends_a_lease_the_seed_keeps_and_nothing_else() {
        // A batch acked in part keeps its lease; releasing ends it and says so per item.
        let part = plan(&batch(), &DLQ_ON, true, &[it(Completed, 14)]);
        assert!(!part.release_lease);
        let released = part.clone().releasing();
        assert!(released.release_lease && released.changed);
        assert_eq!(released.items, vec![ok(true)]);
        assert_eq!(released.committed, part.committed);
        // A refusal or a duplicate is left as it was: nothing was carried out.
        for refused in [
            plan(&batch(), &DLQ_ON, true, &[it(Completed, 9)]),
            plan(&batch(), &DLQ_ON, true, &[unresolved(Completed)]),
        ] {
            assert_eq!(refused.clone().releasing(), refused);
        }
        // A full batch already releases.
        let full = plan(&batch(), &DLQ_ON, true, &[it(Completed, 19)]);
        assert_eq!(full.clone().releasing(), full);
    }

    fn ok(lease_released: bool) -> ItemOutcome {
        ItemOutcome::carried_out(lease_released)
    }

    fn ok_dlq(lease_released: bool) -> ItemOutcome {
        ItemOutcome {
            dlq: true,
            ..ok(lease_released)
        }
    }

    fn noop() -> ItemOutcome {
        ItemOutcome {
            success: true,
            error: None,
            lease_released: false,
            dlq: false,
            noop: true,
        }
    }

    fn no(error: &str) -> ItemOutcome {
        ItemOutcome::refused(error)
    }

    fn dl(offset: i64, reason: &str) -> Option<DeadLetter> {
        Some(DeadLetter {
            offset,
            reason: reason.to_owned(),
        })
    }

    struct Case {
        name: &'static str,
        cursor: CursorView,
        policy: Policy,
        leased: bool,
        items: Vec<AckItem>,
        want: AckPlan,
    }

    #[allow(clippy::too_many_arguments)]
    fn case(
        name: &'static str,
        cursor: CursorView,
        policy: Policy,
        leased: bool,
        items: Vec<AckItem>,
        outcomes: Vec<ItemOutcome>,
        (committed, release_lease, retry_count): (i64, bool, i32),
        dead_letter: Option<DeadLetter>,
        changed: bool,
    ) -> Case {
        Case {
            name,
            cursor,
            policy,
            leased,
            items,
            want: AckPlan {
                items: outcomes,
                committed,
                release_lease,
                retry_count,
                dead_letter,
                changed,
            },
        }
    }

    fn run(cases: Vec<Case>) {
        for c in cases {
            let got = plan(&c.cursor, &c.policy, c.leased, &c.items);
            assert_eq!(got, c.want, "case: {}", c.name);
            assert_eq!(got.items.len(), c.items.len(), "case: {}", c.name);
            assert!(got.committed >= c.cursor.committed, "case: {}", c.name);
        }
    }

    #[test]
    fn completed() {
        run(vec![
            case(
                "partial batch keeps the lease",
                batch(),
                DLQ_ON,
                true,
                vec![it(Completed, 10), it(Completed, 11), it(Completed, 12)],
                vec![ok(false), ok(false), ok(false)],
                (12, false, 0),
                None,
                true,
            ),
            case(
                "partial batch does not reset the counter",
                batch_charged(2),
                DLQ_ON,
                true,
                vec![it(Completed, 14)],
                vec![ok(false)],
                (14, false, 2),
                None,
                true,
            ),
            case(
                "full batch releases and resets the counter",
                batch_charged(2),
                DLQ_ON,
                true,
                vec![it(Completed, 18), it(Completed, 19)],
                vec![ok(true), ok(true)],
                (19, true, 0),
                None,
                true,
            ),
            case(
                "acking only the last message completes the batch",
                batch(),
                DLQ_ON,
                true,
                vec![it(Completed, 19)],
                vec![ok(true)],
                (19, true, 0),
                None,
                true,
            ),
            case(
                "silent gaps below the highest completion are completed",
                batch(),
                DLQ_ON,
                true,
                vec![it(Completed, 15), it(Completed, 11)],
                vec![ok(false), ok(false)],
                (15, false, 0),
                None,
                true,
            ),
            case(
                "expired lease, lease-less completion of the batch resets the counter",
                expired(2),
                DLQ_ON,
                false,
                vec![it(Completed, 19)],
                vec![ok(false)],
                (19, false, 0),
                None,
                true,
            ),
            case(
                "lease-less ack without a live lease moves the cursor, flag stays false",
                expired(1),
                DLQ_ON,
                false,
                vec![it(Completed, 14)],
                vec![ok(false)],
                (14, false, 1),
                None,
                true,
            ),
            case(
                "never leased: lease-less ack commits, counter untouched",
                CursorView {
                    committed: -1,
                    live_lease_end: None,
                    last_lease_end: None,
                    retry_count: 1,
                },
                DLQ_ON,
                false,
                vec![it(Completed, 0), it(Completed, 5)],
                vec![ok(false), ok(false)],
                (5, false, 1),
                None,
                true,
            ),
            case(
                "lease-less ack may commit past another worker's live lease",
                batch_charged(1),
                DLQ_ON,
                false,
                vec![it(Completed, 25)],
                vec![ok(true)],
                (25, true, 0),
                None,
                true,
            ),
            case(
                "lease-less partial ack under another worker's lease keeps it",
                batch(),
                DLQ_ON,
                false,
                vec![it(Completed, 13)],
                vec![ok(false)],
                (13, false, 0),
                None,
                true,
            ),
        ]);
    }

    #[test]
    fn only_an_ended_lease_with_messages_left_reopens_the_partition() {
        let nack = plan(&batch(), &DLQ_ON, true, &[it(Failed, 15)]);
        assert!(nack.reopens(20), "offsets 15-19 redeliver");
        let done = plan(&batch(), &DLQ_ON, true, &[it(Completed, 19)]);
        assert!(!done.reopens(20), "the partition is read to its end");
        assert!(done.reopens(21), "a message pushed meanwhile is left");
        let part = plan(&batch(), &DLQ_ON, true, &[it(Completed, 12)]);
        assert!(
            !part.release_lease && !part.reopens(20),
            "the lease is kept"
        );
        assert!(!AckPlan::refuse_all(1, INVALID_LEASE).reopens(20));
    }

    #[test]
    fn failed_with_budget_left() {
        run(vec![
            case(
                "lone failure caps the cursor rather than jumping to it",
                batch(),
                DLQ_ON,
                true,
                vec![it_err(Failed, 15, "boom")],
                vec![ok(true)],
                (9, true, 1),
                None,
                true,
            ),
            case(
                "several failures charge once; completed prefix kept",
                batch(),
                DLQ_ON,
                true,
                vec![
                    it(Completed, 10),
                    it(Completed, 11),
                    it(Completed, 12),
                    it(Failed, 13),
                    it(Failed, 14),
                    it(Failed, 15),
                ],
                vec![ok(true); 6],
                (12, true, 1),
                None,
                true,
            ),
            case(
                "batch handler failing all ten charges once",
                batch_charged(1),
                DLQ_ON,
                true,
                (10..=19).map(|o| it(Failed, o)).collect(),
                vec![ok(true); 10],
                (9, true, 2),
                None,
                true,
            ),
            case(
                "prefix with a silent gap below the failure",
                batch(),
                DLQ_ON,
                true,
                vec![it(Failed, 14), it(Completed, 12)],
                vec![ok(true), ok(true)],
                (12, true, 1),
                None,
                true,
            ),
            case(
                "lease-less failure without a live lease: released, flag false, charged",
                expired(0),
                DLQ_ON,
                false,
                vec![it(Completed, 11), it(Failed, 12)],
                vec![ok(false), ok(false)],
                (11, true, 1),
                None,
                true,
            ),
        ]);
    }

    #[test]
    fn failed_exhausted_dead_letters() {
        run(vec![
            case(
                "poison message's own error is the reason",
                batch_charged(3),
                DLQ_ON,
                true,
                vec![
                    it(Completed, 10),
                    it(Completed, 11),
                    it_err(Failed, 12, "boom"),
                ],
                vec![ok(true), ok(true), ok_dlq(true)],
                (12, true, 0),
                dl(12, "boom"),
                true,
            ),
            case(
                "own error wins over an earlier-listed one",
                batch_charged(3),
                DLQ_ON,
                true,
                vec![it_err(Failed, 13, "later"), it_err(Failed, 12, "own")],
                vec![ok(true), ok_dlq(true)],
                (12, true, 0),
                dl(12, "own"),
                true,
            ),
            case(
                "first available error in request order when the poison has none",
                batch_charged(3),
                DLQ_ON,
                true,
                vec![
                    it_err(Failed, 12, ""),
                    it_err(Failed, 15, "first"),
                    it_err(Failed, 13, "second"),
                ],
                vec![ok_dlq(true), ok(true), ok(true)],
                (12, true, 0),
                dl(12, "first"),
                true,
            ),
            case(
                "a retry's error is also available",
                batch_charged(3),
                DLQ_ON,
                true,
                vec![it_err(Retry, 16, "not yet"), it(Failed, 12)],
                vec![ok(true), ok_dlq(true)],
                (12, true, 0),
                dl(12, "not yet"),
                true,
            ),
            case(
                "default reason when nobody gave one",
                batch_charged(3),
                DLQ_ON,
                true,
                vec![it(Failed, 12), it_err(Failed, 13, "")],
                vec![ok_dlq(true), ok(true)],
                (12, true, 0),
                dl(12, DEFAULT_DLQ_REASON),
                true,
            ),
            case(
                "completed errors are not reasons",
                batch_charged(3),
                DLQ_ON,
                true,
                vec![it_err(Completed, 11, "irrelevant"), it(Failed, 12)],
                vec![ok(true), ok_dlq(true)],
                (12, true, 0),
                dl(12, DEFAULT_DLQ_REASON),
                true,
            ),
            case(
                "dlq flag marks only the first signal at the poison offset",
                batch_charged(3),
                DLQ_ON,
                true,
                vec![it(Failed, 12), it_err(Failed, 12, "dup"), it(Failed, 14)],
                vec![ok_dlq(true), ok(true), ok(true)],
                (12, true, 0),
                dl(12, "dup"),
                true,
            ),
            case(
                "later completions in the call are superseded",
                batch_charged(3),
                DLQ_ON,
                true,
                vec![it(Completed, 17), it_err(Failed, 12, "boom")],
                vec![no(SUPERSEDED), ok_dlq(true)],
                (12, true, 0),
                dl(12, "boom"),
                true,
            ),
            case(
                "over-charged counter (limit lowered) is exhausted too",
                batch_charged(7),
                DLQ_ON,
                true,
                vec![it(Failed, 10)],
                vec![ok_dlq(true)],
                (10, true, 0),
                dl(10, DEFAULT_DLQ_REASON),
                true,
            ),
            case(
                "exhausted, lease expired: dead-lettered, flag false",
                expired(3),
                DLQ_ON,
                false,
                vec![it_err(Failed, 10, "boom")],
                vec![ok_dlq(false)],
                (10, true, 0),
                dl(10, "boom"),
                true,
            ),
        ]);
    }

    #[test]
    fn failed_exhausted_without_dead_lettering_drops() {
        run(vec![
            case(
                "poison dropped: cursor past it, counter reset, no dlq",
                batch_charged(3),
                DLQ_OFF,
                true,
                vec![it(Completed, 11), it_err(Failed, 12, "boom")],
                vec![ok(true), ok(true)],
                (12, true, 0),
                None,
                true,
            ),
            case(
                "dropped with a tail that redelivers",
                batch_charged(3),
                DLQ_OFF,
                true,
                vec![it(Failed, 12), it(Failed, 13), it(Completed, 19)],
                vec![ok(true), ok(true), no(SUPERSEDED)],
                (12, true, 0),
                None,
                true,
            ),
        ]);
    }

    #[test]
    fn retry_is_budget_free() {
        run(vec![
            case(
                "retry keeps the prefix, releases, leaves the counter",
                batch_charged(2),
                DLQ_ON,
                true,
                vec![it(Completed, 10), it(Completed, 11), it(Retry, 12)],
                vec![ok(true), ok(true), ok(true)],
                (11, true, 2),
                None,
                true,
            ),
            case(
                "retry of the first message only releases",
                batch(),
                DLQ_ON,
                true,
                vec![it(Retry, 10)],
                vec![ok(true)],
                (9, true, 0),
                None,
                true,
            ),
            case(
                "retry with an exhausted budget never dead-letters",
                batch_charged(3),
                DLQ_ON,
                true,
                vec![it_err(Retry, 12, "rate limited")],
                vec![ok(true)],
                (9, true, 3),
                None,
                true,
            ),
            case(
                "a failure above the retry point is not charged",
                batch(),
                DLQ_ON,
                true,
                vec![it(Failed, 16), it(Retry, 13)],
                vec![ok(true), ok(true)],
                (9, true, 0),
                None,
                true,
            ),
        ]);
    }

    #[test]
    fn dlq_is_immediate() {
        run(vec![
            case(
                "dlq with the whole budget left",
                batch(),
                DLQ_ON,
                true,
                vec![it(Completed, 10), it(Completed, 11), it(Dlq, 12)],
                vec![ok(true), ok(true), ok_dlq(true)],
                (12, true, 0),
                dl(12, DEFAULT_DLQ_REASON),
                true,
            ),
            case(
                "dlq carries its own reason and resets a charged counter",
                batch_charged(2),
                DLQ_ON,
                true,
                vec![it_err(Dlq, 15, "poison")],
                vec![ok_dlq(true)],
                (15, true, 0),
                dl(15, "poison"),
                true,
            ),
            case(
                "explicit dlq files even when the queue's dead-lettering is off",
                batch(),
                DLQ_OFF,
                true,
                vec![it(Dlq, 12)],
                vec![ok_dlq(true)],
                (12, true, 0),
                dl(12, DEFAULT_DLQ_REASON),
                true,
            ),
            case(
                "dlq at the end of the batch",
                batch(),
                DLQ_ON,
                true,
                vec![it(Dlq, 19)],
                vec![ok_dlq(true)],
                (19, true, 0),
                dl(19, DEFAULT_DLQ_REASON),
                true,
            ),
            case(
                "dlq with a completion and a failure above it",
                batch(),
                DLQ_ON,
                true,
                vec![it(Dlq, 12), it(Completed, 15), it(Failed, 16)],
                vec![ok_dlq(true), no(SUPERSEDED), ok(true)],
                (12, true, 0),
                dl(12, DEFAULT_DLQ_REASON),
                true,
            ),
        ]);
    }

    #[test]
    fn precedence_at_the_same_offset() {
        run(vec![
            case(
                "dlq beats failed and retry; flag on the first signal at that offset",
                batch(),
                DLQ_ON,
                true,
                vec![it(Retry, 12), it(Failed, 12), it_err(Dlq, 12, "why")],
                vec![ok_dlq(true), ok(true), ok(true)],
                (12, true, 0),
                dl(12, "why"),
                true,
            ),
            case(
                "failed beats retry: charged",
                batch(),
                DLQ_ON,
                true,
                vec![it(Retry, 12), it(Failed, 12)],
                vec![ok(true), ok(true)],
                (9, true, 1),
                None,
                true,
            ),
            case(
                "failed beats retry regardless of request order",
                batch(),
                DLQ_ON,
                true,
                vec![it(Failed, 12), it(Retry, 12)],
                vec![ok(true), ok(true)],
                (9, true, 1),
                None,
                true,
            ),
            case(
                "an exhausted failure is not rescued by a retry at the same offset",
                batch_charged(3),
                DLQ_ON,
                true,
                vec![it(Retry, 12), it_err(Failed, 12, "boom")],
                vec![ok_dlq(true), ok(true)],
                (12, true, 0),
                dl(12, "boom"),
                true,
            ),
            case(
                "a completion at the signal's offset is superseded",
                batch(),
                DLQ_ON,
                true,
                vec![it(Completed, 12), it(Retry, 12)],
                vec![no(SUPERSEDED), ok(true)],
                (9, true, 0),
                None,
                true,
            ),
        ]);
    }

    #[test]
    fn lowest_explicit_signal_clamps() {
        run(vec![
            case(
                "later completions redeliver",
                batch(),
                DLQ_ON,
                true,
                vec![it(Completed, 18), it(Failed, 14), it(Completed, 11)],
                vec![no(SUPERSEDED), ok(true), ok(true)],
                (11, true, 1),
                None,
                true,
            ),
            case(
                "a dlq above the lowest failure is not carried out",
                batch(),
                DLQ_ON,
                true,
                vec![it(Dlq, 17), it(Failed, 13)],
                vec![no(SUPERSEDED), ok(true)],
                (9, true, 1),
                None,
                true,
            ),
            case(
                "a dlq above a retry is not carried out",
                batch(),
                DLQ_ON,
                true,
                vec![it(Retry, 13), it(Dlq, 17), it(Completed, 12)],
                vec![ok(true), no(SUPERSEDED), ok(true)],
                (12, true, 0),
                None,
                true,
            ),
            case(
                "individual acks then one failure: the failure wins from its offset on",
                batch(),
                DLQ_ON,
                true,
                vec![
                    it(Completed, 10),
                    it(Completed, 11),
                    it(Completed, 12),
                    it(Completed, 13),
                    it(Failed, 14),
                    it(Completed, 15),
                ],
                vec![
                    ok(true),
                    ok(true),
                    ok(true),
                    ok(true),
                    ok(true),
                    no(SUPERSEDED),
                ],
                (13, true, 1),
                None,
                true,
            ),
        ]);
    }

    #[test]
    fn acks_that_cannot_do_anything() {
        run(vec![
            case(
                "duplicate completions are noops and change nothing",
                batch(),
                DLQ_ON,
                true,
                vec![it(Completed, 5), it(Completed, 9)],
                vec![noop(), noop()],
                (9, false, 0),
                None,
                false,
            ),
            case(
                "a duplicate next to a real completion",
                batch(),
                DLQ_ON,
                true,
                vec![it(Completed, 9), it(Completed, 19)],
                vec![noop(), ok(true)],
                (19, true, 0),
                None,
                true,
            ),
            case(
                "failed/retry/dlq at or below the cursor are already committed",
                batch_charged(3),
                DLQ_ON,
                true,
                vec![it(Failed, 9), it(Retry, 5), it(Dlq, 0)],
                vec![
                    no(ALREADY_COMMITTED),
                    no(ALREADY_COMMITTED),
                    no(ALREADY_COMMITTED),
                ],
                (9, false, 3),
                None,
                false,
            ),
            case(
                "an already-committed nack does not stop a completion",
                batch(),
                DLQ_ON,
                true,
                vec![it(Failed, 8), it(Completed, 12)],
                vec![no(ALREADY_COMMITTED), ok(false)],
                (12, false, 0),
                None,
                true,
            ),
            case(
                "unresolvable items of every status",
                batch(),
                DLQ_ON,
                true,
                vec![
                    unresolved(Completed),
                    unresolved(Failed),
                    unresolved(Retry),
                    unresolved(Dlq),
                ],
                vec![
                    no(UNRESOLVABLE),
                    no(UNRESOLVABLE),
                    no(UNRESOLVABLE),
                    no(UNRESOLVABLE),
                ],
                (9, false, 0),
                None,
                false,
            ),
            case(
                "an unresolvable nack takes no part: the completion still commits",
                batch(),
                DLQ_ON,
                true,
                vec![unresolved(Failed), it(Completed, 15)],
                vec![no(UNRESOLVABLE), ok(false)],
                (15, false, 0),
                None,
                true,
            ),
            case(
                "leased items beyond the lease end are refused",
                batch(),
                DLQ_ON,
                true,
                vec![it(Completed, 20), it(Dlq, 25)],
                vec![no(INVALID_LEASE), no(INVALID_LEASE)],
                (9, false, 0),
                None,
                false,
            ),
            case(
                "an out-of-lease nack does not clamp the covered completion",
                batch(),
                DLQ_ON,
                true,
                vec![it(Completed, 19), it(Failed, 25)],
                vec![ok(true), no(INVALID_LEASE)],
                (19, true, 0),
                None,
                true,
            ),
            case(
                "leased without a live lease (broken precondition) covers nothing",
                expired(0),
                DLQ_ON,
                true,
                vec![it(Completed, 12), it(Completed, 9)],
                vec![no(INVALID_LEASE), noop()],
                (9, false, 0),
                None,
                false,
            ),
            case(
                "noops never tidy a lease the cursor already passed",
                CursorView {
                    committed: 25,
                    ..batch_charged(2)
                },
                DLQ_ON,
                true,
                vec![it(Completed, 19)],
                vec![noop()],
                (25, false, 2),
                None,
                false,
            ),
            case(
                "empty call",
                batch(),
                DLQ_ON,
                true,
                vec![],
                vec![],
                (9, false, 0),
                None,
                false,
            ),
        ]);
    }

    #[test]
    fn budget_arithmetic() {
        // The budget as `plan` applies it (limit 3: counts 0, 1, 2 redeliver; 3 is spent).
        let table: &[(Policy, i32, i64, i32, Option<DeadLetter>)] = &[
            (DLQ_ON, 0, 9, 1, None),
            (DLQ_ON, 1, 9, 2, None),
            (DLQ_ON, 2, 9, 3, None),
            (DLQ_ON, 3, 10, 0, dl(10, DEFAULT_DLQ_REASON)),
            (DLQ_ON, 4, 10, 0, dl(10, DEFAULT_DLQ_REASON)),
            (DLQ_OFF, 2, 9, 3, None),
            (DLQ_OFF, 3, 10, 0, None),
            (
                Policy {
                    retry_limit: 0,
                    dead_letter: true,
                },
                0,
                10,
                0,
                dl(10, DEFAULT_DLQ_REASON),
            ),
            (
                Policy {
                    retry_limit: 0,
                    dead_letter: false,
                },
                0,
                10,
                0,
                None,
            ),
            (
                Policy {
                    retry_limit: 1,
                    dead_letter: true,
                },
                0,
                9,
                1,
                None,
            ),
        ];
        for (policy, count, committed, new_count, dead_letter) in table {
            let got = plan(&batch_charged(*count), policy, true, &[it(Failed, 10)]);
            let ctx = format!("{policy:?} count {count}");
            assert_eq!(got.committed, *committed, "{ctx}");
            assert_eq!(got.retry_count, *new_count, "{ctx}");
            assert_eq!(got.dead_letter, *dead_letter, "{ctx}");
            assert_eq!(got.items[0].dlq, dead_letter.is_some(), "{ctx}");
            assert!(got.release_lease && got.items[0].success, "{ctx}");
        }
    }

    #[test]
    fn three_redeliveries_then_dead_letter() {
        let mut cursor = batch();
        for attempt in 1..=3 {
            let got = plan(&cursor, &DLQ_ON, true, &[it(Failed, 10)]);
            assert_eq!((got.committed, got.retry_count), (9, attempt));
            assert_eq!(got.dead_letter, None);
            cursor.retry_count = got.retry_count;
        }
        let got = plan(&cursor, &DLQ_ON, true, &[it_err(Failed, 10, "4th")]);
        assert_eq!(got.dead_letter, dl(10, "4th"));
        assert_eq!((got.committed, got.retry_count), (10, 0));
    }

    #[test]
    fn refuse_all() {
        for error in [
            CONSUMER_NOT_FOUND,
            INVALID_LEASE,
            POOL,
            FLUSH_FAILED,
            NOT_OWNED,
        ] {
            let got = AckPlan::refuse_all(3, error);
            assert_eq!(got.items, vec![no(error); 3]);
            assert!(!got.changed && !got.release_lease && got.dead_letter.is_none());
            assert!(got.items.iter().all(|o| !o.success
                && !o.lease_released
                && !o.dlq
                && !o.noop
                && o.error.as_deref() == Some(error)));
        }
        assert!(AckPlan::refuse_all(0, POOL).items.is_empty());
    }

    #[test]
    fn refused_outcome_shape() {
        assert_eq!(
            ItemOutcome::refused(UNRESOLVABLE),
            ItemOutcome {
                success: false,
                error: Some(UNRESOLVABLE.to_owned()),
                lease_released: false,
                dlq: false,
                noop: false,
            }
        );
    }

    #[test]
    fn replay_is_a_noop_only_when_everything_was_already_completed() {
        let done = |o: i64| AckItem {
            status: AckStatus::Completed,
            offset: Some(o),
            error: None,
        };
        let plan = replay(9, &[done(3), done(9)]).expect("a replay");
        assert!(plan.items.iter().all(|i| i.success && i.noop));
        assert!(!plan.changed);
        assert!(replay(9, &[done(3), done(10)]).is_none());
        assert!(replay(9, &[]).is_none());
        let nack = AckItem {
            status: AckStatus::Failed,
            offset: Some(3),
            error: None,
        };
        assert!(replay(9, &[done(3), nack]).is_none());
        let lost = AckItem {
            status: AckStatus::Completed,
            offset: None,
            error: None,
        };
        assert!(replay(9, &[lost]).is_none());
    }
}
