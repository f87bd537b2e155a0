//! What one broker holds in memory, in one room. Everything here is a hint or a counter:
//! the database is the truth, so losing any of it (a restart, an eviction) costs latency or a
//! recount, never a message. No I/O happens here; the service layer does it and tells this
//! crate what happened.
//!
//! Architecture Invariant: every map keyed by something a client names (queues, consumer
//! groups, tenants) is bounded. Entries live while they are in use or recent, and a map past
//! its bound forgets first what is cheapest to rebuild. [`Runtime::sizes`] reports how many
//! entries each holds (`/metrics/prometheus`).

pub mod activity;
pub mod announcement;
pub mod counters;
pub mod deliveries;
pub mod ephemeral;
pub mod handovers;
pub mod histogram;
pub mod known;
pub mod kv;
pub mod lanes;
pub mod limiter;
pub mod parked;
pub mod peers;
pub mod placements;
pub mod queue_totals;
pub mod quiet;
pub mod ready;
pub mod streams;
pub mod sweeps;
pub mod switches;
pub mod tallies;
pub mod timers;
pub mod turns;
pub mod wakeups;

use std::sync::{Mutex, MutexGuard};

use regent_rules::limits::LimitTable;

pub use activity::{Op, Outcome, Recheck};
pub use announcement::Announcement;

/// What the runtime state is built from.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    pub limits: LimitTable,
    /// Whether announcements go to the other brokers at all (`PEER_WAKEUPS`).
    pub peer_wakeups: bool,
    /// Whether the database keeps partitions on more than one node (Citus).
    pub spread: bool,
}

/// One broker's in-memory state.
pub struct Runtime {
    /// Parked long-polls, by what would wake them.
    pub wakeups: wakeups::Wakeups,
    /// Parked long-polls counted per (tenant, queue), for the fleet's samples.
    pub parked: parked::Parked,
    /// Partitions pushed to since each group last looked.
    pub ready: ready::Ready,
    /// Groups whose last walk found nothing, not woken since: their waiting pops park.
    pub quiet: quiet::Quiet,
    /// When each group last gave itself cursors on every partition.
    pub sweeps: sweeps::Sweeps,
    /// What each live lease delivered, so its acks resolve without the index.
    pub deliveries: deliveries::Deliveries,
    /// Per-tenant request buckets and stored-message accounts.
    pub limiter: limiter::Limiter,
    /// Per-tenant turns, for tenants whose requests run `concurrency` at a time.
    pub turns: turns::Turns,
    /// Requests and messages since start.
    pub activity: activity::Activity,
    /// This broker's identity among its peers, and its outbox.
    pub peers: peers::Peers,
    /// Pop answers whose lease is not yet handed to a connection.
    pub handovers: handovers::Handovers,
    /// The maintenance switches, per tenant, as last read.
    pub switches: switches::Switches,
    /// What happened to each queue's messages since the series was last written.
    pub tallies: tallies::Tallies,
    /// Messages pushed and delivered per queue since start, as the series flush wrote them.
    pub queue_totals: queue_totals::QueueTotals,
    /// Which node holds each partition, for fusion to keep a transaction on one.
    pub placements: placements::Placements,
    /// The partitions pushed to, by name, for pushes that need no lookup.
    pub known: known::KnownNames,
    /// The queues popped from, by name, for pops that need no lookup.
    pub known_queues: known::KnownNames,
    /// What each stream query's cycles did since start.
    pub streams: streams::Streams,
    /// What each tenant's key/value operations did since start.
    pub kv: kv::KvTotals,
    /// What timer operations and fires did since start, and the firing loop's wake-up.
    pub timers: timers::Timers,
    /// Parked pops of ephemeral queues: a namespace of their own, so an ephemeral queue
    /// and a durable one of the same name never wake each other's pops.
    pub ephemeral_wakeups: wakeups::Wakeups,
    /// What each tenant's ephemeral queues did since start.
    pub ephemeral: ephemeral::Ephemeral,
}

impl Runtime {
    pub fn new(s: Settings) -> Runtime {
        Runtime {
            wakeups: Default::default(),
            parked: Default::default(),
            ready: Default::default(),
            quiet: Default::default(),
            sweeps: Default::default(),
            deliveries: Default::default(),
            limiter: limiter::Limiter::new(s.limits),
            turns: Default::default(),
            activity: Default::default(),
            peers: peers::Peers::new(s.peer_wakeups),
            handovers: Default::default(),
            switches: Default::default(),
            tallies: Default::default(),
            queue_totals: Default::default(),
            placements: placements::Placements::new(s.spread),
            known: Default::default(),
            known_queues: Default::default(),
            streams: Default::default(),
            kv: Default::default(),
            timers: Default::default(),
            ephemeral_wakeups: Default::default(),
            ephemeral: Default::default(),
        }
    }

    /// Applies an announcement, this broker's or another's: sweeps learn new partitions, ready
    /// lists the written ones and the reopened ones (for their groups), parked pops wake (as
    /// many per consumer group as partitions were written, and one of each group an ack left
    /// something to claim). Quiet groups stay quiet through what comes with its partitions
    /// (their pops claim it from the ready lists) and walk again after what does not; a
    /// reopened partition is listed only for a group that is quiet.
    pub fn hint(&self, a: &Announcement) {
        for &(q, p) in &a.created {
            self.sweeps.created(q, p);
        }
        for &(q, p) in &a.partitions {
            self.ready.pushed(q, p);
        }
        // A group that found nothing stays quiet through what is announced with its
        // partitions: its pops claim them from the ready lists, no walk needed.
        for (q, partitions) in &a.queues {
            if a.partitions.is_empty() {
                self.quiet.woke(&a.tenant, q);
            }
            self.wakeups.notify(&a.tenant, q, *partitions);
        }
        let at = (a.reopened_at.len() == a.reopened.len()).then_some(&a.reopened_at);
        for (i, (q, group)) in a.reopened.iter().enumerate() {
            match at.map(|at| &at[i]) {
                // A quiet group does not walk: its pops need the partition listed.
                Some((id, p)) if self.quiet.skips_walk(&a.tenant, q, group) => {
                    self.ready.reopened(*id, group, *p)
                }
                // Any other walks and meets the partition in claim order, least recently
                // served first: listed, it would go ahead of the group's other backlogs.
                _ => self.quiet.woke(&a.tenant, q),
            }
            self.wakeups.reopened(&a.tenant, q, group);
        }
        for (q, group, pops) in &a.ephemeral {
            match group.as_str() {
                "" => self.ephemeral_wakeups.notify(&a.tenant, q, *pops),
                g => self.ephemeral_wakeups.reopened(&a.tenant, q, g),
            }
        }
    }

    /// How many entries each map holds now, by name.
    pub fn sizes(&self) -> Vec<(&'static str, usize)> {
        vec![
            ("wakeups", self.wakeups.len()),
            ("parked_queues", self.parked.len()),
            ("ready_queues", self.ready.queues()),
            ("ready_groups", self.ready.groups()),
            ("ready_entries", self.ready.entries()),
            ("quiet_queues", self.quiet.len()),
            ("sweep_looks", self.sweeps.looks()),
            ("sweep_created", self.sweeps.created_len()),
            ("deliveries", self.deliveries.len()),
            ("limiter_tenants", self.limiter.tenants()),
            ("turn_tenants", self.turns.tenants()),
            ("peer_outbox", self.peers.outbox_len()),
            ("peers", self.peers.known_len()),
            ("handovers", self.handovers.pending()),
            ("maintenance_tenants", self.switches.len()),
            ("series_queues", self.tallies.len()),
            ("queue_totals", self.queue_totals.len()),
            ("placements", self.placements.len()),
            ("known_partitions", self.known.len()),
            ("known_queues", self.known_queues.len()),
            ("stream_queries", self.streams.len()),
            ("kv_tenants", self.kv.len()),
            ("timer_tenants", self.timers.len()),
            ("ephemeral_wakeups", self.ephemeral_wakeups.len()),
            ("ephemeral_tenants", self.ephemeral.len()),
        ]
    }
}

/// A mutex whose holder panicked is still usable: everything behind these locks is a hint or
/// a counter, so one request's panic must not turn every later use into another panic.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use uuid::Uuid;

    use super::*;

    /// A runtime where group g of (t, q) just found nothing, with a place in q's ready list.
    fn quiet_group(q: Uuid) -> Runtime {
        let rt = Runtime::new(Settings::default());
        assert!(rt.ready.take(q, "g", 1).is_empty());
        let stamp = rt.quiet.stamp("t", "q");
        rt.quiet.found_nothing("t", "q", "g", stamp, Instant::now());
        assert!(rt.quiet.skips_walk("t", "q", "g"));
        rt
    }

    #[test]
    fn what_is_announced_with_its_partitions_leaves_a_quiet_group_quiet_with_a_hint() {
        let (q, p, r) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        let rt = quiet_group(q);
        rt.hint(&Announcement {
            tenant: "t".into(),
            queues: vec![("q".into(), 1)],
            partitions: vec![(q, p)],
            ..Default::default()
        });
        let reopened = [("q".to_string(), q, r, "g".to_string())];
        rt.hint(&Announcement::reopened_partitions("t", reopened));
        assert!(rt.quiet.skips_walk("t", "q", "g"), "still quiet");
        assert_eq!(
            rt.ready.take(q, "g", 4),
            vec![p, r],
            "both hinted, in order"
        );
    }

    #[test]
    fn a_reopened_partition_is_listed_only_for_a_quiet_group() {
        let (q, r) = (Uuid::now_v7(), Uuid::now_v7());
        let rt = quiet_group(q);
        rt.quiet.woke("t", "q");
        let reopened = [("q".to_string(), q, r, "g".to_string())];
        rt.hint(&Announcement::reopened_partitions("t", reopened));
        assert!(
            rt.ready.take(q, "g", 4).is_empty(),
            "a group that walks finds it in claim order"
        );
    }

    #[test]
    fn what_is_announced_without_partitions_makes_a_quiet_group_walk() {
        let q = Uuid::now_v7();
        let rt = quiet_group(q);
        let released = vec![("q".to_string(), "g".to_string())];
        rt.hint(&Announcement::reopened("t", released));
        assert!(!rt.quiet.skips_walk("t", "q", "g"), "a release: walk");
        let rt = quiet_group(q);
        rt.hint(&Announcement {
            tenant: "t".into(),
            queues: vec![("q".into(), 1)],
            ..Default::default()
        });
        assert!(
            !rt.quiet.skips_walk("t", "q", "g"),
            "a peer's push whose partitions did not fit its note: walk"
        );
    }
}
