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

use regent_broker::limits::{Account, Bucket, LimitTable, Limits};

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

    /// Tenants with a bucket or an account.
    pub fn tenants(&self) -> usize {
        lock(&self.buckets).len() + lock(&self.stored).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(rate: Option<f64>, max_messages: Option<i64>) -> LimitTable {
        LimitTable {
            default: Some(Limits {
                rate,
                burst: None,
                max_messages,
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

    #[test]
    fn many_tenants_keep_only_what_matters() {
        let l = Limiter::new(table(Some(1000.0), None));
        for i in 0..(3 * MAX_TENANTS) {
            let t: Arc<str> = format!("tenant-{i}").into();
            l.admit(&t).unwrap();
        }
        // Every bucket just lost a token, so none is full yet: the map may exceed the bound
        // only by what is really in use. A millisecond later they have refilled.
        std::thread::sleep(Duration::from_millis(5));
        l.admit(&"one-more".into()).unwrap();
        assert!(l.tenants() <= MAX_TENANTS, "{}", l.tenants());
    }
}
