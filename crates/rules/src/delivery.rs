//! What a pop delivers of what it claimed. A claim leases each partition up to `batch`
//! messages past its cursor; the pop's whole answer holds at most `batch` messages, shared by
//! the partitions in claim order (least recently claimed first, so a hot partition cannot
//! starve the others). Then each lease is made to match what it delivered: trimmed to its
//! last delivered message, released when it delivered nothing, committed at once for an
//! auto-acking pop. Deleted messages (tombstones) are never delivered: the cursor moves over
//! those at the front of a lease, and the lease ends at its last live message, so no lease is
//! ever left waiting for an ack of a message nobody can see.

use chrono::{DateTime, Utc};

/// A claimed partition as the claim left it.
#[derive(Clone, Debug)]
pub struct Claimed {
    pub committed: i64,
    /// The end of the range the claim leased.
    pub lease_end: i64,
    /// The end of the lease the claim replaced, if any.
    pub old_end: Option<i64>,
    pub last_claim: Option<DateTime<Utc>>,
    /// The segments overlapping (committed, lease_end], in offset order: (first offset, last
    /// offset, when appended).
    pub segments: Vec<(i64, i64, DateTime<Utc>)>,
    /// Deleted offsets in (committed, lease_end], ascending.
    pub tombstoned: Vec<i64>,
}

/// How a claimed partition's lease ends the pop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Finish {
    pub committed: i64,
    pub release: bool,
    pub lease_end: i64,
}

/// One partition's share of the answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Share {
    /// The last offset delivered (every offset after the cursor up to it is, but deleted
    /// ones), if any.
    pub upto: Option<i64>,
    /// The cursor update the delivery needs; `None` when the lease holds exactly what was
    /// delivered.
    pub finish: Option<Finish>,
}

impl Share {
    /// Whether the share undoes its claim: nothing delivered and the cursor left where it
    /// was, so the partition is released as if never claimed and keeps its place in the
    /// claim order. (Marked as claimed now, a partition a multi-partition pop claimed but
    /// did not reach would go behind every other and wait while they have a backlog.)
    pub fn undoes_claim(&self, c: &Claimed) -> bool {
        self.upto.is_none()
            && self
                .finish
                .is_some_and(|f| f.release && f.committed == c.committed)
    }
}

/// The order claims are served in: never claimed first, then least recently claimed.
pub fn claim_order<T>(claims: &mut [T], key: impl Fn(&T) -> (Option<DateTime<Utc>>, uuid::Uuid)) {
    claims.sort_by_key(|c| {
        let (last, id) = key(c);
        (last.is_some(), last, id)
    });
}

/// Where the next walk of a group over a queue's cursors starts, after one that started just
/// after `after` and served `served` (or, serving nothing, claimed `claimed`): the last of
/// them in the walk's order, partition order round from just after `after`. `None` when the
/// walk took nothing: it starts where it did.
pub fn walk_end(
    after: Option<uuid::Uuid>,
    served: &[uuid::Uuid],
    claimed: &[uuid::Uuid],
) -> Option<uuid::Uuid> {
    let from = after.unwrap_or(uuid::Uuid::nil());
    // The walk's order: the partitions after `from` first, then the ones up to it.
    let place = |p: &uuid::Uuid| (*p <= from, *p);
    let pick = if served.is_empty() { claimed } else { served };
    pick.iter().max_by_key(|p| place(p)).copied()
}

/// The shares of `claims` (already in [`claim_order`]) under a budget of `batch` messages.
/// Messages appended after `cutoff` (a queue's delayed processing) are not delivered yet.
pub fn shares(
    claims: &[Claimed],
    batch: i64,
    cutoff: Option<DateTime<Utc>>,
    auto_ack: bool,
) -> Vec<Share> {
    let mut budget = batch.max(0);
    claims
        .iter()
        .map(|c| share(c, &mut budget, cutoff, auto_ack))
        .collect()
}

/// One pop of several whose claims were made together (concurrent pops of one queue by one
/// group share a claim statement): its budget of messages and of partitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ask {
    pub batch: i64,
    pub partitions: i64,
}

/// Shares one claim among several pops, in order: the first pop is served in claim order
/// until its message budget or its partition count is spent, then the next, as if each had
/// claimed alone right after the one before it. Each share names the pop it went to; a claim
/// that delivered nothing goes to none (its finish releases it). With one pop this is exactly
/// [`shares`].
pub fn assign(
    claims: &[Claimed],
    asks: &[Ask],
    cutoff: Option<DateTime<Utc>>,
    auto_ack: bool,
) -> Vec<(Option<usize>, Share)> {
    let mut pops = asks
        .iter()
        .enumerate()
        .map(|(j, a)| (j, a.batch.max(0), a.partitions));
    let mut current = pops.next();
    claims
        .iter()
        .map(|c| {
            while current.is_some_and(|(_, budget, left)| budget == 0 || left <= 0) {
                current = pops.next();
            }
            let Some((j, budget, left)) = current.as_mut() else {
                return (None, share(c, &mut 0, cutoff, auto_ack));
            };
            let s = share(c, budget, cutoff, auto_ack);
            if s.upto.is_none() {
                return (None, s);
            }
            *left -= 1;
            (Some(*j), s)
        })
        .collect()
}

/// One claim's share of what is left of `budget`, taken from it.
fn share(c: &Claimed, budget: &mut i64, cutoff: Option<DateTime<Utc>>, auto_ack: bool) -> Share {
    let taken = upto(c, budget, cutoff);
    match live_range(c, taken) {
        Live::Some { first, last } => {
            let finish = finish(&moved_to(c, first - 1), Some(last), auto_ack);
            // The cursor moves over deleted messages in front even when the lease holds
            // exactly what was delivered.
            let moved = (first - 1 > c.committed).then_some(Finish {
                committed: first - 1,
                release: false,
                lease_end: last,
            });
            Share {
                upto: Some(last),
                finish: finish.or(moved),
            }
        }
        Live::Deleted(end) => Share {
            upto: None,
            finish: Some(Finish {
                committed: end,
                release: true,
                lease_end: end,
            }),
        },
        Live::None => Share {
            upto: None,
            finish: finish(c, None, auto_ack),
        },
    }
}

/// What is live of (committed, taken].
enum Live {
    /// Nothing was taken.
    None,
    /// Everything taken is deleted, up to this offset.
    Deleted(i64),
    Some {
        first: i64,
        last: i64,
    },
}

fn live_range(c: &Claimed, taken: Option<i64>) -> Live {
    let Some(end) = taken else {
        return Live::None;
    };
    let dead = |o: i64| c.tombstoned.binary_search(&o).is_ok();
    let first = (c.committed + 1..=end).find(|&o| !dead(o));
    let last = (c.committed + 1..=end).rev().find(|&o| !dead(o));
    match (first, last) {
        (Some(first), Some(last)) => Live::Some { first, last },
        _ => Live::Deleted(end),
    }
}

/// The claim as if its cursor already stood at `committed` (past the deleted messages in
/// front of the first live one).
fn moved_to(c: &Claimed, committed: i64) -> Claimed {
    Claimed {
        committed,
        tombstoned: Vec::new(),
        ..c.clone()
    }
}

/// The last offset of `c` that fits the budget, taking it from the budget.
fn upto(c: &Claimed, budget: &mut i64, cutoff: Option<DateTime<Utc>>) -> Option<i64> {
    let mut last = None;
    for &(base, end, created_at) in &c.segments {
        if *budget == 0 || cutoff.is_some_and(|cut| created_at > cut) {
            break;
        }
        let first = base.max(c.committed + 1);
        let stop = end.min(c.lease_end);
        if first > stop {
            continue;
        }
        let n = (stop - first + 1).min(*budget);
        *budget -= n;
        last = Some(first + n - 1);
        if first + n - 1 < stop {
            break;
        }
    }
    last
}

fn finish(c: &Claimed, upto: Option<i64>, auto_ack: bool) -> Option<Finish> {
    match upto {
        None => Some(Finish {
            committed: c.committed,
            release: true,
            lease_end: c.old_end.unwrap_or(c.committed),
        }),
        Some(l) if auto_ack => Some(Finish {
            committed: l,
            release: true,
            lease_end: l,
        }),
        Some(l) if l < c.lease_end => Some(Finish {
            committed: c.committed,
            release: false,
            lease_end: l,
        }),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_walk_goes_on_after_the_last_partition_it_served_round_the_end() {
        let id = |n: u128| uuid::Uuid::from_u128(n);
        assert_eq!(walk_end(None, &[id(3), id(1)], &[id(9)]), Some(id(3)));
        // From just after 5: 7 comes before 2 (round the end).
        assert_eq!(walk_end(Some(id(5)), &[id(2), id(7)], &[]), Some(id(2)));
        assert_eq!(walk_end(Some(id(5)), &[id(6), id(7)], &[]), Some(id(7)));
        // Serving nothing, the walk goes on past what it claimed; taking nothing, it stays.
        assert_eq!(walk_end(Some(id(5)), &[], &[id(8), id(1)]), Some(id(1)));
        assert_eq!(walk_end(Some(id(5)), &[], &[]), None);
    }

    #[test]
    fn only_a_claim_that_delivered_nothing_and_moved_nothing_is_undone() {
        let c = Claimed {
            committed: 9,
            lease_end: 19,
            old_end: None,
            last_claim: None,
            segments: vec![(10, 19, at(0))],
            tombstoned: vec![],
        };
        let all = shares(std::slice::from_ref(&c), 0, None, false);
        assert!(all[0].undoes_claim(&c), "{all:?}");
        let served = shares(std::slice::from_ref(&c), 5, None, false);
        assert!(!served[0].undoes_claim(&c), "{served:?}");
        let acked = shares(std::slice::from_ref(&c), 5, None, true);
        assert!(!acked[0].undoes_claim(&c), "{acked:?}");
        let dead = Claimed {
            tombstoned: (10..=19).collect(),
            ..c.clone()
        };
        let moved = shares(std::slice::from_ref(&dead), 5, None, false);
        assert!(
            !moved[0].undoes_claim(&dead),
            "the cursor moved over deleted ones: {moved:?}"
        );
    }

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + secs, 0).unwrap()
    }

    fn claim(committed: i64, lease_end: i64, segments: &[(i64, i64, i64)]) -> Claimed {
        Claimed {
            committed,
            lease_end,
            old_end: None,
            last_claim: None,
            segments: segments.iter().map(|&(b, e, t)| (b, e, at(t))).collect(),
            tombstoned: Vec::new(),
        }
    }

    #[test]
    fn deleted_messages_are_skipped_and_no_lease_waits_for_them() {
        // Leased 0..=5; 0 and 1 in front, 5 at the end deleted.
        let mut c = claim(-1, 5, &[(0, 5, 0)]);
        c.tombstoned = vec![0, 1, 5];
        let s = shares(std::slice::from_ref(&c), 100, None, false);
        assert_eq!(
            s[0],
            Share {
                upto: Some(4),
                finish: Some(Finish {
                    committed: 1,
                    release: false,
                    lease_end: 4
                })
            },
            "the cursor moves over the front, the lease ends at the last live message"
        );
        // In front only, the lease otherwise whole.
        c.tombstoned = vec![0];
        let s = shares(std::slice::from_ref(&c), 100, None, false);
        assert_eq!(
            s[0].finish,
            Some(Finish {
                committed: 0,
                release: false,
                lease_end: 5
            })
        );
        // Everything deleted: committed over, released.
        c.tombstoned = (0..=5).collect();
        let s = shares(std::slice::from_ref(&c), 100, None, false);
        assert_eq!(
            s[0],
            Share {
                upto: None,
                finish: Some(Finish {
                    committed: 5,
                    release: true,
                    lease_end: 5
                })
            }
        );
        // Auto-ack commits to the last live message.
        c.tombstoned = vec![0, 5];
        let s = shares(&[c], 100, None, true);
        assert_eq!(
            s[0].finish,
            Some(Finish {
                committed: 4,
                release: true,
                lease_end: 4
            })
        );
    }

    #[test]
    fn the_budget_is_shared_in_claim_order() {
        // Partition A leased 0..=9 over two segments, B leased 0..=4.
        let a = claim(-1, 9, &[(0, 5, 0), (6, 12, 1)]);
        let b = claim(-1, 4, &[(0, 4, 0)]);
        let s = shares(&[a.clone(), b.clone()], 12, None, false);
        assert_eq!(
            s[0],
            Share {
                upto: Some(9),
                finish: None
            },
            "A whole"
        );
        assert_eq!(
            s[1],
            Share {
                upto: Some(1),
                finish: Some(Finish {
                    committed: -1,
                    release: false,
                    lease_end: 1
                })
            },
            "B trimmed to the two messages left in the budget"
        );
        let s = shares(&[a, b], 10, None, false);
        assert_eq!(s[1].upto, None, "nothing left for B");
        assert_eq!(
            s[1].finish,
            Some(Finish {
                committed: -1,
                release: true,
                lease_end: -1
            }),
            "an empty claim is released, its end put back"
        );
    }

    #[test]
    fn the_cursor_and_the_lease_bound_what_a_segment_gives() {
        // The cursor is inside the first segment; the lease ends inside the second.
        let c = claim(3, 7, &[(0, 5, 0), (6, 9, 0)]);
        let s = shares(&[c], 100, None, false);
        assert_eq!(
            s[0],
            Share {
                upto: Some(7),
                finish: None
            }
        );
    }

    #[test]
    fn delayed_messages_wait_and_auto_acks_commit() {
        let c = claim(-1, 9, &[(0, 4, 0), (5, 9, 10)]);
        let s = shares(std::slice::from_ref(&c), 100, Some(at(5)), false);
        assert_eq!(
            s[0],
            Share {
                upto: Some(4),
                finish: Some(Finish {
                    committed: -1,
                    release: false,
                    lease_end: 4
                })
            },
            "the second segment is too young"
        );
        let s = shares(&[c], 100, None, true);
        assert_eq!(
            s[0].finish,
            Some(Finish {
                committed: 9,
                release: true,
                lease_end: 9
            }),
            "auto-ack commits what it delivered"
        );
    }

    #[test]
    fn a_replaced_lease_gets_its_end_back_when_nothing_is_delivered() {
        let mut c = claim(4, 9, &[(5, 9, 10)]);
        c.old_end = Some(9);
        let s = shares(&[c], 100, Some(at(0)), false);
        assert_eq!(
            s[0],
            Share {
                upto: None,
                finish: Some(Finish {
                    committed: 4,
                    release: true,
                    lease_end: 9
                })
            }
        );
    }

    #[test]
    fn one_claim_is_shared_by_several_pops_in_order() {
        let c = |n: i64| claim(-1, n - 1, &[(0, n - 1, 0)]);
        let claims = [c(3), c(3), c(3), c(3)];
        let asks = [
            Ask {
                batch: 1,
                partitions: 1,
            },
            Ask {
                batch: 5,
                partitions: 2,
            },
        ];
        let a = assign(&claims, &asks, None, false);
        let owners: Vec<Option<usize>> = a.iter().map(|(j, _)| *j).collect();
        assert_eq!(owners, vec![Some(0), Some(1), Some(1), None]);
        assert_eq!(
            a[0].1,
            Share {
                upto: Some(0),
                finish: Some(Finish {
                    committed: -1,
                    release: false,
                    lease_end: 0
                })
            },
            "the first pop takes one message, its lease trimmed to it"
        );
        assert_eq!(a[1].1.upto, Some(2), "the second pop takes a whole claim");
        assert_eq!(
            a[2].1.upto,
            Some(1),
            "and what its budget leaves of the next"
        );
        assert_eq!(
            a[3].1.finish.map(|f| f.release),
            Some(true),
            "a claim left over is released"
        );
    }

    #[test]
    fn a_claim_that_gives_a_pop_nothing_does_not_count_against_it() {
        // The first claim is all too young for its delayed queue; the second is not.
        let young = claim(-1, 2, &[(0, 2, 10)]);
        let old = claim(-1, 2, &[(0, 2, 0)]);
        let asks = [Ask {
            batch: 1,
            partitions: 1,
        }];
        let a = assign(&[young, old], &asks, Some(at(5)), false);
        assert_eq!(a[0].0, None, "nothing delivered, so nobody's");
        assert_eq!(a[0].1.finish.map(|f| f.release), Some(true));
        assert_eq!(a[1].0, Some(0));
        assert_eq!(a[1].1.upto, Some(0));
    }

    #[test]
    fn one_pop_alone_is_served_as_shares_serves_it() {
        let a = claim(-1, 9, &[(0, 5, 0), (6, 12, 1)]);
        let b = claim(-1, 4, &[(0, 4, 0)]);
        let claims = [a, b];
        for batch in [0, 3, 10, 12, 100] {
            let alone = shares(&claims, batch, None, false);
            let asks = [Ask {
                batch,
                partitions: 2,
            }];
            let assigned: Vec<Share> = assign(&claims, &asks, None, false)
                .into_iter()
                .map(|(_, s)| s)
                .collect();
            assert_eq!(assigned, alone, "batch {batch}");
        }
    }

    #[test]
    fn never_claimed_partitions_come_first() {
        let ids = [
            uuid::Uuid::from_u128(1),
            uuid::Uuid::from_u128(2),
            uuid::Uuid::from_u128(3),
        ];
        let mut v = vec![(Some(at(5)), ids[0]), (None, ids[2]), (Some(at(1)), ids[1])];
        claim_order(&mut v, |c| *c);
        assert_eq!(
            v,
            vec![(None, ids[2]), (Some(at(1)), ids[1]), (Some(at(5)), ids[0])]
        );
    }
}
