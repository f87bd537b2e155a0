//! Per-tenant limits, as one broker enforces them: a token bucket per tenant for its request
//! rate, and an account of what each capped tenant stores.
//!
//! Both are per broker. The rate is each broker's share (N brokers admit up to N times the
//! rate). The stored count is read from the log at most once a second per tenant, plus what
//! this broker committed since and what its requests in flight may still add; other brokers'
//! pushes are seen at the next read, so a fleet can overshoot a cap by at most about one
//! second of the other brokers' pushes. A refusal is always whole: nothing of the request is
//! written.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::broker::limits::{fits, Bucket, LimitTable, Limits};
use crate::store::{queues::stored_messages, Store, StoreError};

/// How stale a tenant's stored count may be before a push reads it again.
const RECOUNT: Duration = Duration::from_secs(1);

/// Why a request was refused.
#[derive(Debug, PartialEq)]
pub enum Refusal {
    /// Over the request rate: a token is back after the wait.
    Rate { wait: Duration },
    /// The push would take the tenant past its stored-message cap.
    Stored { cap: i64, stored: i64 },
}

#[derive(Default)]
pub struct Limiter {
    table: LimitTable,
    buckets: Mutex<HashMap<Arc<str>, Bucket>>,
    stored: Mutex<HashMap<Arc<str>, Account>>,
}

/// One capped tenant's stored messages, as far as this broker knows.
struct Account {
    /// The count last read from the log.
    read: i64,
    read_at: Instant,
    /// Messages this broker committed since that read.
    since: i64,
    /// What requests in flight may still add.
    reserved: i64,
}

/// Room held for a push in flight. Dropped without [`Reservation::committed`], it gives the
/// room back (the request failed or was refused later on).
pub struct Reservation<'a> {
    held: Option<(&'a Limiter, Arc<str>, i64)>,
}

impl Reservation<'_> {
    /// The push committed `added` new messages (duplicates add none): they now count as
    /// stored, and the rest of the room is given back.
    pub fn committed(mut self, added: i64) {
        if let Some((l, tenant, n)) = self.held.take() {
            if let Some(a) = l.stored.lock().unwrap().get_mut(&tenant) {
                a.reserved -= n;
                a.since += added;
            }
        }
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if let Some((l, tenant, n)) = self.held.take() {
            if let Some(a) = l.stored.lock().unwrap().get_mut(&tenant) {
                a.reserved -= n;
            }
        }
    }
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
        let mut buckets = self.buckets.lock().unwrap();
        buckets
            .entry(tenant.clone())
            .or_insert_with(|| Bucket::full(limits, now))
            .take(limits, now)
            .map_err(|wait| Refusal::Rate { wait })
    }

    /// Holds room for `adding` messages under the tenant's cap, reading the stored count from
    /// the log when this broker's is more than a second old.
    pub async fn reserve(
        &self,
        store: &Store,
        tenant: &Arc<str>,
        adding: i64,
    ) -> Result<Result<Reservation<'_>, Refusal>, StoreError> {
        let Some(cap) = self.limits(tenant).and_then(|l| l.max_messages) else {
            return Ok(Ok(Reservation { held: None }));
        };
        let fresh = |a: &Account| a.read_at.elapsed() < RECOUNT;
        let stale = !self.stored.lock().unwrap().get(tenant).is_some_and(fresh);
        if stale {
            // Commits that land while the count is read are counted twice (in `read` and in
            // `since`) until the next read: an overcount, never an undercount.
            let since_before = self.stored.lock().unwrap().get(tenant).map(|a| a.since);
            let read = stored_messages(&store.client().await?, tenant).await?;
            let mut accounts = self.stored.lock().unwrap();
            let a = accounts.entry(tenant.clone()).or_insert(Account {
                read,
                read_at: Instant::now(),
                since: 0,
                reserved: 0,
            });
            a.read = read;
            a.read_at = Instant::now();
            a.since -= since_before.unwrap_or(0);
        }
        let mut accounts = self.stored.lock().unwrap();
        let a = accounts
            .get_mut(tenant)
            .expect("an account exists once read");
        if !fits(cap, a.read + a.since, a.reserved, adding) {
            return Ok(Err(Refusal::Stored {
                cap,
                stored: a.read + a.since,
            }));
        }
        a.reserved += adding;
        Ok(Ok(Reservation {
            held: Some((self, tenant.clone(), adding)),
        }))
    }
}
