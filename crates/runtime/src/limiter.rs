//! Per-tenant limits, as one broker enforces them: a token bucket per tenant for its request
//! rate, and an account of what each capped tenant stores.
//!
//! Both are per broker. The rate is each broker's share (N brokers admit up to N times the
//! rate). The stored count is read from the log at most once a second per tenant, plus what
//! this broker committed since and what its requests in flight may still add; other brokers'
//! pushes are seen at the next read, so a fleet can overshoot a cap by at most about one
//! second of the other brokers' pushes. A refusal is always whole: nothing of the request is
//! written. Reading the log is the caller's: this module says when ([`Reserve::Count`]).
//!
//! Bounded: past [`MAX_TENANTS`] buckets (or accounts), the full buckets (idle accounts) are
//! forgotten; both are then the same as new ones.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use regent_rules::limits::{Account, Bucket, LimitTable, Limits};

use crate::lock;

/// How stale a tenant's stored count may be before a push reads it again.
const RECOUNT: Duration = Duration::from_secs(1);
/// Buckets, and accounts, kept before the forgettable ones are dropped.
pub const MAX_TENANTS: usize = 10_000;

/// Why a request was refused.
#[derive(Clone, Debug, PartialEq)]
pub enum Refusal {
    /// Over the request rate: a token is back after the wait.
    Rate { wait: Duration },
    /// The push would take the tenant past its stored-message cap.
    Stored { cap: i64, stored: i64 },
    /// The push alone holds more than the cap: no wait makes it fit.
    Larger { cap: i64, adding: i64 },
}

#[derive(Default)]
pub struct Limiter {
    table: LimitTable,
    buckets: Mutex<HashMap<Arc<str>, Bucket>>,
    stored: Mutex<HashMap<Arc<str>, Account>>,
}

/// The first answer to a reservation.
pub enum Reserve<'a> {
    Held(Reservation<'a>),
    Refused(Refusal),
    /// The tenant's stored count must be read from the log first: hand it to
    /// [`Recount::done`].
    Count(Recount<'a>),
}

/// Room held for a push in flight. Dropped without [`Reservation::committed`] (the request
/// failed, or its client went away while the fused push it handed over may still commit),
/// the room counts as stored: an overcount until the next read of the log, never a way past
/// the cap.
pub struct Reservation<'a> {
    held: Option<(&'a Limiter, Arc<str>, i64)>,
}

impl Reservation<'_> {
    /// No limit applies: nothing is held.
    pub fn none() -> Reservation<'static> {
        Reservation { held: None }
    }

    /// The push committed `added` new messages (duplicates add none): they now count as
    /// stored, and the rest of the room is given back.
    pub fn committed(mut self, added: i64) {
        self.settle(added);
    }

    /// Nothing was written (the request was refused after the reservation): the room is
    /// given back at once.
    pub fn released(mut self) {
        self.settle(0);
    }

    fn settle(&mut self, added: i64) {
        if let Some((l, tenant, held)) = self.held.take() {
            if let Some(a) = lock(&l.stored).get_mut(&tenant) {
                a.settle(held, added);
            }
        }
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if let Some((_, _, held)) = self.held {
            self.settle(held);
        }
    }
}

/// A read of the tenant's stored count that this request must make. If it is dropped
/// unfinished (the read failed, or the client went away), the next request may read instead.
pub struct Recount<'a> {
    limiter: &'a Limiter,
    tenant: Arc<str>,
    cap: i64,
    adding: i64,
    /// The account's mark when it exists; `None` for a tenant's first read.
    mark: Option<i64>,
    done: bool,
}

impl<'a> Recount<'a> {
    /// The log holds `stored` messages of the tenant: records it, then holds the room.
    pub fn done(mut self, stored: i64) -> Result<Reservation<'a>, Refusal> {
        self.done = true;
        let now = Instant::now();
        let mut accounts = lock(&self.limiter.stored);
        match (accounts.get_mut(&self.tenant), self.mark) {
            (Some(a), Some(mark)) => a.read_done(mark, stored, now),
            // Another request's first read landed first: its answer is kept.
            (Some(_), None) => {}
            (None, _) => {
                if accounts.len() >= MAX_TENANTS {
                    accounts.retain(|_, a| !a.idle());
                }
                accounts.insert(self.tenant.clone(), Account::new(stored, now));
            }
        }
        let a = accounts.get_mut(&self.tenant).expect("present above");
        hold(self.limiter, a, &self.tenant, self.cap, self.adding)
    }
}

impl Drop for Recount<'_> {
    fn drop(&mut self) {
        if self.mark.is_some() && !self.done {
            if let Some(a) = lock(&self.limiter.stored).get_mut(&self.tenant) {
                a.read_failed();
            }
        }
    }
}

fn hold<'a>(
    limiter: &'a Limiter,
    a: &mut Account,
    tenant: &Arc<str>,
    cap: i64,
    adding: i64,
) -> Result<Reservation<'a>, Refusal> {
    a.reserve(cap, adding)
        .map_err(|stored| Refusal::Stored { cap, stored })?;
    Ok(Reservation {
        held: Some((limiter, tenant.clone(), adding)),
    })
}

impl Limiter {
    pub fn new(table: LimitTable) -> Limiter {
        Limiter {
            table,
            ..Default::default()
        }
    }

    fn limits(&self, tenant: &str) -> Option<&Limits> {
        if self.table.is_empty() {
            return None;
        }
        self.table.of(tenant)
    }

    /// How many of the tenant's requests may be worked on at once, if it is limited.
    pub fn concurrency(&self, tenant: &str) -> Option<u32> {
        self.limits(tenant)?.concurrency
    }

    /// Takes one request from the tenant's bucket.
    pub fn admit(&self, tenant: &Arc<str>) -> Result<(), Refusal> {
        let Some(limits) = self.limits(tenant).filter(|l| l.rate.is_some()) else {
            return Ok(());
        };
        let now = Instant::now();
        let mut buckets = lock(&self.buckets);
        if !buckets.contains_key(tenant) && buckets.len() >= MAX_TENANTS {
            buckets.retain(|t, b| self.limits(t).is_some_and(|l| !b.is_full(l, now)));
        }
        buckets
            .entry(tenant.clone())
            .or_insert_with(|| Bucket::full(limits, now))
            .take(limits, now)
            .map_err(|wait| Refusal::Rate { wait })
    }

    /// Holds room for `adding` messages under the tenant's cap, or says that the tenant's
    /// stored count must be read first (more than a second old, and no read in flight).
    pub fn reserve(&self, tenant: &Arc<str>, adding: i64) -> Reserve<'_> {
        let Some(cap) = self.limits(tenant).and_then(|l| l.max_messages) else {
            return Reserve::Held(Reservation::none());
        };
        // Nothing to store (an ack-only transaction) is never refused, even over the cap.
        if adding == 0 {
            return Reserve::Held(Reservation::none());
        }
        if adding > cap {
            return Reserve::Refused(Refusal::Larger { cap, adding });
        }
        let mut accounts = lock(&self.stored);
        let recount = |mark| {
            Reserve::Count(Recount {
                limiter: self,
                tenant: tenant.clone(),
                cap,
                adding,
                mark,
                done: false,
            })
        };
        let Some(a) = accounts.get_mut(tenant) else {
            // A tenant's first requests all read; the first answer is kept.
            return recount(None);
        };
        if let Some(mark) = a.begin_read(RECOUNT, Instant::now()) {
            return recount(Some(mark));
        }
        match hold(self, a, tenant, cap, adding) {
            Ok(r) => Reserve::Held(r),
            Err(refusal) => Reserve::Refused(refusal),
        }
    }

    /// The largest share of its stored-message cap that any tenant holds, as this broker last
    /// counted (0 when no tenant with a cap has pushed through it): a fleet-wide alert
    /// needs no tenant's name to say that one is near its cap.
    pub fn fullest(&self) -> f64 {
        lock(&self.stored)
            .iter()
            .filter_map(|(tenant, a)| {
                let cap = self.limits(tenant)?.max_messages?;
                (cap > 0).then(|| a.stored() as f64 / cap as f64)
            })
            .fold(0.0, f64::max)
    }

    /// Tenants with a bucket or an account.
    pub fn tenants(&self) -> usize {
        lock(&self.buckets).len() + lock(&self.stored).len()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    fn table(rate: Option<f64>, max_messages: Option<i64>) -> LimitTable {
        LimitTable {
            default: Some(Limits {
                rate,
                burst: None,
                max_messages,
                concurrency: None,
            }),
            tenants: Default::default(),
        }
    }

    fn held(r: Reserve<'_>) -> Reservation<'_> {
        match r {
            Reserve::Held(r) => r,
            Reserve::Count(c) => c.done(0).expect("room"),
            Reserve::Refused(x) => panic!("refused: {x:?}"),
        }
    }

    #[test]
    fn a_first_reservation_asks_for_a_count_and_then_holds_room() {
        let l = Limiter::new(table(None, Some(10)));
        let t: Arc<str> = "t".into();
        let Reserve::Count(c) = l.reserve(&t, 4) else {
            panic!("a first reservation reads the log");
        };
        let r = c.done(5).unwrap();
        // Fresh now: 5 stored + 4 held leaves room for 1.
        assert!(matches!(
            l.reserve(&t, 2),
            Reserve::Refused(Refusal::Stored { cap: 10, stored: 5 })
        ));
        r.committed(4);
        assert!(matches!(l.reserve(&t, 1), Reserve::Held(_)));
        assert!(matches!(
            l.reserve(&t, 11),
            Reserve::Refused(Refusal::Larger { .. })
        ));
    }

    #[test]
    fn a_dropped_recount_lets_the_next_request_read() {
        let l = Limiter::new(table(None, Some(10)));
        let t: Arc<str> = "t".into();
        drop(held(l.reserve(&t, 1)));
        std::thread::sleep(RECOUNT);
        let Reserve::Count(first) = l.reserve(&t, 1) else {
            panic!("stale: a read is due");
        };
        drop(first);
        assert!(
            matches!(l.reserve(&t, 1), Reserve::Count(_)),
            "the abandoned read is someone else's to make"
        );
    }

    /// How many tenants `map` holds beside `want`, and which of `want` it does not hold.
    fn kept_beside<V>(
        map: &Mutex<HashMap<Arc<str>, V>>,
        want: &HashSet<Arc<str>>,
    ) -> (usize, Vec<Arc<str>>) {
        let kept = lock(map);
        let beside = kept.keys().filter(|t| !want.contains(*t)).count();
        let lost = want.iter().filter(|t| !kept.contains_key(*t)).cloned();
        (beside, lost.collect())
    }

    /// Past the bound, a new tenant makes the limiter forget what no longer matters: full
    /// buckets (the same as new ones) and idle accounts (no room held: the next request reads
    /// the log afresh). A bucket still refilling, and an account with a push in flight, are
    /// kept whole. Time is made not to matter: the busy tenants' buckets take 1,000 s to get
    /// a token back, the others' a nanosecond, so the pause below (which only guarantees that
    /// some time passed) fills every idle bucket and no busy one, however slow the machine.
    #[test]
    fn many_tenants_keep_only_what_matters() {
        const BUSY: usize = 100;
        let busy: Vec<Arc<str>> = (0..BUSY).map(|i| format!("busy-{i}").into()).collect();
        let slow = Limits {
            rate: Some(0.001),
            burst: None,
            max_messages: None,
            concurrency: None,
        };
        let l = Limiter::new(LimitTable {
            default: Some(Limits {
                rate: Some(1e9),
                burst: None,
                max_messages: None,
                concurrency: None,
            }),
            tenants: busy.iter().map(|t| (t.to_string(), slow.clone())).collect(),
        });
        for t in &busy {
            l.admit(t).unwrap();
        }
        for i in BUSY..MAX_TENANTS {
            l.admit(&format!("idle-{i}").into()).unwrap();
        }
        assert_eq!(
            l.tenants(),
            MAX_TENANTS,
            "nothing is forgotten up to the bound"
        );
        std::thread::sleep(Duration::from_millis(1));
        let newcomer: Arc<str> = "newcomer".into();
        l.admit(&newcomer).unwrap();
        let want: HashSet<Arc<str>> = busy.iter().chain([&newcomer]).cloned().collect();
        assert_eq!(
            kept_beside(&l.buckets, &want),
            (0, vec![]),
            "(idle buckets kept, busy ones forgotten)"
        );
        // The busy buckets were kept as they were, empty: a forgotten one would be full again.
        for t in &busy {
            assert!(matches!(l.admit(t), Err(Refusal::Rate { .. })), "{t}");
        }

        // Accounts: those with room held for a push in flight are kept, the settled ones
        // forgotten.
        let l = Limiter::new(table(None, Some(10)));
        let mut in_flight = Vec::new();
        for i in 0..MAX_TENANTS {
            let t: Arc<str> = format!("tenant-{i}").into();
            let room = held(l.reserve(&t, 1));
            if i < BUSY {
                in_flight.push((t, room));
            } else {
                room.committed(1);
            }
        }
        assert_eq!(
            l.tenants(),
            MAX_TENANTS,
            "nothing is forgotten up to the bound"
        );
        let Reserve::Count(c) = l.reserve(&newcomer, 1) else {
            panic!("a first reservation reads the log");
        };
        c.done(0).unwrap().committed(1);
        let want: HashSet<Arc<str>> = in_flight
            .iter()
            .map(|(t, _)| t.clone())
            .chain([newcomer])
            .collect();
        assert_eq!(
            kept_beside(&l.stored, &want),
            (0, vec![]),
            "(idle accounts kept, accounts in use forgotten)"
        );
        for (t, _) in &in_flight {
            // Its room is still held: 0 stored + 1 held + 10 is over the cap of 10. (Should
            // its count be a second old by now, it is read again: the log holds nothing.)
            let refusal = match l.reserve(t, 10) {
                Reserve::Held(_) => None,
                Reserve::Refused(r) => Some(r),
                Reserve::Count(c) => c.done(0).err(),
            };
            assert_eq!(refusal, Some(Refusal::Stored { cap: 10, stored: 0 }), "{t}");
        }
        // A forgotten tenant is new again: its next reservation reads the log.
        assert!(matches!(
            l.reserve(&format!("tenant-{BUSY}").into(), 1),
            Reserve::Count(_)
        ));
    }
}
