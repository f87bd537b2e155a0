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

use crate::broker::limits::{Account, Bucket, LimitTable, Limits};
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
    /// The push alone holds more than the cap: no wait makes it fit.
    Larger { cap: i64, adding: i64 },
}

#[derive(Default)]
pub struct Limiter {
    table: LimitTable,
    buckets: Mutex<HashMap<Arc<str>, Bucket>>,
    stored: Mutex<HashMap<Arc<str>, Account>>,
}

/// Room held for a push in flight. Dropped without [`Reservation::committed`] (the request
/// failed, or its client went away while the fused push it handed over may still commit),
/// the room counts as stored: an overcount until the next read of the log, never a way past
/// the cap.
pub struct Reservation<'a> {
    held: Option<(&'a Limiter, Arc<str>, i64)>,
}

impl Reservation<'_> {
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
            if let Some(a) = l.stored.lock().unwrap().get_mut(&tenant) {
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

/// A marked read of the log in flight for one tenant: if the request is dropped (the client
/// went away) or the read fails, the next request may read instead.
struct Reading<'a> {
    limiter: &'a Limiter,
    tenant: &'a Arc<str>,
    marked: bool,
    done: bool,
}

impl Drop for Reading<'_> {
    fn drop(&mut self) {
        if self.marked && !self.done {
            if let Some(a) = self.limiter.stored.lock().unwrap().get_mut(self.tenant) {
                a.read_failed();
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
        // Nothing to store (an ack-only transaction) is never refused, even over the cap.
        if adding == 0 {
            return Ok(Ok(Reservation { held: None }));
        }
        if adding > cap {
            return Ok(Err(Refusal::Larger { cap, adding }));
        }
        self.read_if_stale(store, tenant).await?;
        let mut accounts = self.stored.lock().unwrap();
        let a = accounts.get_mut(tenant).expect("read above");
        if let Err(stored) = a.reserve(cap, adding) {
            return Ok(Err(Refusal::Stored { cap, stored }));
        }
        Ok(Ok(Reservation {
            held: Some((self, tenant.clone(), adding)),
        }))
    }

    /// Reads the tenant's stored count from the log when it is stale and no other request
    /// is reading it (see `Account::begin_read`).
    async fn read_if_stale(&self, store: &Store, tenant: &Arc<str>) -> Result<(), StoreError> {
        let mark = match self.stored.lock().unwrap().get_mut(tenant) {
            Some(a) => match a.begin_read(RECOUNT, Instant::now()) {
                Some(mark) => Some(mark),
                None => return Ok(()),
            },
            // A tenant's first requests all read; the first answer is kept.
            None => None,
        };
        let mut reading = Reading {
            limiter: self,
            tenant,
            marked: mark.is_some(),
            done: false,
        };
        let read = stored_messages(&store.client().await?, tenant).await?;
        reading.done = true;
        let now = Instant::now();
        let mut accounts = self.stored.lock().unwrap();
        match (accounts.get_mut(tenant), mark) {
            (Some(a), Some(mark)) => a.read_done(mark, read, now),
            (Some(_), None) => {}
            (None, _) => {
                accounts.insert(tenant.clone(), Account::new(read, now));
            }
        }
        Ok(())
    }
}
