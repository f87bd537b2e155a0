//! Per-tenant limits as rules: which limits apply to a tenant, the token bucket that paces its
//! requests, and whether a push fits under its stored-message cap. The state they act on
//! lives in `crate::limits`; nothing here reads a clock or the database.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// One tenant's limits; `None` means unlimited.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Limits {
    /// Requests per second, refilled continuously.
    pub rate: Option<f64>,
    /// How many requests may arrive at once after a quiet spell; defaults to one second's
    /// worth of `rate` (at least 1).
    pub burst: Option<f64>,
    /// Messages the tenant may hold in the log.
    pub max_messages: Option<i64>,
    /// Requests of the tenant one broker works on at once; more wait their turn. A
    /// long-poll waiting for messages is not working and holds no turn.
    pub concurrency: Option<u32>,
}

impl Limits {
    fn burst(&self, rate: f64) -> f64 {
        self.burst.unwrap_or(rate).max(1.0)
    }
}

/// Limits by tenant, with an optional entry for every tenant not named.
#[derive(Clone, Debug, Default)]
pub struct LimitTable {
    pub default: Option<Limits>,
    pub tenants: HashMap<String, Limits>,
}

impl LimitTable {
    pub fn is_empty(&self) -> bool {
        self.default.is_none() && self.tenants.is_empty()
    }

    /// A named tenant's own entry replaces the default entry whole, so a tenant can be given
    /// no limit at all with `{}`.
    pub fn of(&self, tenant: &str) -> Option<&Limits> {
        self.tenants.get(tenant).or(self.default.as_ref())
    }
}

/// A token bucket: full when created, one token per request.
#[derive(Clone, Debug)]
pub struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    pub fn full(limits: &Limits, now: Instant) -> Bucket {
        let rate = limits.rate.unwrap_or(f64::INFINITY);
        Bucket {
            tokens: limits.burst(rate),
            at: now,
        }
    }

    /// Takes a token, or says how long until one is there.
    pub fn take(&mut self, limits: &Limits, now: Instant) -> Result<(), Duration> {
        let Some(rate) = limits.rate else {
            return Ok(());
        };
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * rate).min(limits.burst(rate));
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            // A tiny rate can make the wait too long for a Duration: that is "not soon".
            let wait = Duration::try_from_secs_f64((1.0 - self.tokens) / rate);
            Err(wait.unwrap_or(Duration::MAX))
        }
    }

    /// Whether the bucket has refilled to its burst by `now`: then it is the same as a new
    /// one, and may be forgotten.
    pub fn is_full(&self, limits: &Limits, now: Instant) -> bool {
        let Some(rate) = limits.rate else {
            return true;
        };
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens + elapsed * rate >= limits.burst(rate)
    }
}

/// Whether `adding` more messages fit: `stored` is the last count read from the log plus what
/// this broker committed since, `reserved` what its requests in flight may still add.
pub fn fits(cap: i64, stored: i64, reserved: i64, adding: i64) -> bool {
    stored.saturating_add(reserved).saturating_add(adding) <= cap
}

/// One capped tenant's stored messages, as far as one broker knows: the count last read from
/// the log, what this broker committed since, and what its requests in flight may still add.
///
/// One read of the log at a time: a read that started while another was in flight would
/// subtract the same `since` twice when it finished, and under a herd of requests the error
/// compounds with every read (a benchmark drove it to 10^13).
#[derive(Debug)]
pub struct Account {
    read: i64,
    read_at: Instant,
    since: i64,
    reserved: i64,
    reading: bool,
}

impl Account {
    /// The account after its first read of the log.
    pub fn new(read: i64, now: Instant) -> Account {
        Account {
            read,
            read_at: now,
            since: 0,
            reserved: 0,
            reading: false,
        }
    }

    /// What this broker believes is stored.
    pub fn stored(&self) -> i64 {
        self.read.saturating_add(self.since)
    }

    /// Whether the caller should read the log now (older than `every`, and no read in
    /// flight): then it gets the mark to hand back to [`Account::read_done`] or
    /// [`Account::read_failed`]. Everyone else uses the figure as it is.
    pub fn begin_read(&mut self, every: Duration, now: Instant) -> Option<i64> {
        if self.reading || now.saturating_duration_since(self.read_at) < every {
            return None;
        }
        self.reading = true;
        Some(self.since)
    }

    /// A read that began at `mark` found `read`. Commits that landed while it ran are counted
    /// in both: an overcount until the next read, never an undercount.
    pub fn read_done(&mut self, mark: i64, read: i64, now: Instant) {
        self.read = read;
        self.since -= mark;
        self.read_at = now;
        self.reading = false;
    }

    pub fn read_failed(&mut self) {
        self.reading = false;
    }

    /// No room held and no read in flight: forgetting the account loses nothing, since the
    /// next request reads the log afresh (what this broker committed is in the log).
    pub fn idle(&self) -> bool {
        self.reserved == 0 && !self.reading
    }

    /// Holds room for `adding` under `cap`, or says what is stored.
    pub fn reserve(&mut self, cap: i64, adding: i64) -> Result<(), i64> {
        if !fits(cap, self.stored(), self.reserved, adding) {
            return Err(self.stored());
        }
        self.reserved += adding;
        Ok(())
    }

    /// A reservation of `held` ended, having written `added` new messages (0 if it failed).
    pub fn settle(&mut self, held: i64, added: i64) {
        self.reserved -= held;
        self.since += added;
    }
}

/// `Retry-After` in whole seconds, never 0 (a client reads 0 as "at once").
pub fn retry_after_secs(wait: Duration) -> u64 {
    (wait.as_secs_f64().ceil() as u64).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(rate: f64, burst: Option<f64>) -> Limits {
        Limits {
            rate: Some(rate),
            burst,
            max_messages: None,
            concurrency: None,
        }
    }

    #[test]
    fn a_bucket_allows_its_burst_then_paces_at_its_rate() {
        let l = limits(10.0, Some(3.0));
        let t0 = Instant::now();
        let mut b = Bucket::full(&l, t0);
        for _ in 0..3 {
            assert_eq!(b.take(&l, t0), Ok(()));
        }
        let wait = b.take(&l, t0).unwrap_err();
        assert!((wait.as_secs_f64() - 0.1).abs() < 1e-9, "{wait:?}");
        // 100 ms later one token is back, and only one.
        let t1 = t0 + Duration::from_millis(100);
        assert_eq!(b.take(&l, t1), Ok(()));
        assert!(b.take(&l, t1).is_err());
        // A long quiet spell refills to the burst, not beyond.
        let t2 = t1 + Duration::from_secs(60);
        for _ in 0..3 {
            assert_eq!(b.take(&l, t2), Ok(()));
        }
        assert!(b.take(&l, t2).is_err());
    }

    #[test]
    fn the_burst_defaults_to_one_seconds_worth_and_at_least_one() {
        let t0 = Instant::now();
        let l = limits(5.0, None);
        let mut b = Bucket::full(&l, t0);
        assert_eq!((0..10).filter(|_| b.take(&l, t0).is_ok()).count(), 5);
        let slow = limits(0.5, None);
        let mut b = Bucket::full(&slow, t0);
        assert!(b.take(&slow, t0).is_ok());
        assert_eq!(b.take(&slow, t0), Err(Duration::from_secs(2)));
        let glacial = limits(1e-20, None);
        let mut b = Bucket::full(&glacial, t0);
        assert!(b.take(&glacial, t0).is_ok());
        assert_eq!(b.take(&glacial, t0), Err(Duration::MAX), "no panic");
        assert_eq!(retry_after_secs(Duration::MAX), u64::MAX);
        let none = Limits::default();
        let mut b = Bucket::full(&none, t0);
        assert!((0..1000).all(|_| b.take(&none, t0).is_ok()));
    }

    #[test]
    fn a_bucket_is_full_again_once_its_burst_has_refilled() {
        let l = limits(10.0, Some(2.0));
        let t0 = Instant::now();
        let mut b = Bucket::full(&l, t0);
        assert!(b.is_full(&l, t0));
        b.take(&l, t0).unwrap();
        assert!(!b.is_full(&l, t0));
        assert!(!b.is_full(&l, t0 + Duration::from_millis(50)));
        assert!(b.is_full(&l, t0 + Duration::from_millis(100)));
    }

    #[test]
    fn an_account_is_idle_without_room_held_or_a_read_in_flight() {
        let t0 = Instant::now();
        let mut a = Account::new(0, t0);
        assert!(a.idle());
        a.reserve(10, 3).unwrap();
        assert!(!a.idle());
        a.settle(3, 3);
        assert!(a.idle());
        let mark = a.begin_read(Duration::ZERO, t0).unwrap();
        assert!(!a.idle());
        a.read_done(mark, 3, t0);
        assert!(a.idle());
    }

    #[test]
    fn a_tenants_entry_replaces_the_default() {
        let mut t = LimitTable::default();
        assert!(t.is_empty());
        assert_eq!(t.of("x"), None);
        t.default = Some(limits(1.0, None));
        t.tenants.insert("vip".into(), Limits::default());
        assert_eq!(t.of("x"), Some(&limits(1.0, None)));
        assert_eq!(t.of("vip"), Some(&Limits::default()));
    }

    #[test]
    fn the_cap_counts_what_is_stored_and_in_flight() {
        assert!(fits(10, 5, 0, 5));
        assert!(!fits(10, 5, 1, 5));
        assert!(!fits(10, 11, 0, 0));
        assert!(fits(10, 10, 0, 0));
        assert!(!fits(i64::MAX - 1, i64::MAX, 1, 1), "no overflow");
    }

    #[test]
    fn one_read_at_a_time_keeps_the_count_exact_under_a_herd() {
        let t0 = Instant::now();
        let every = Duration::from_secs(1);
        let mut a = Account::new(100, t0);
        a.reserve(1_000, 10).unwrap();
        a.settle(10, 10);
        assert_eq!(a.stored(), 110);
        assert_eq!(a.begin_read(every, t0), None, "fresh");
        let t1 = t0 + every;
        let mark = a.begin_read(every, t1).expect("stale: read");
        // The herd that arrives while the read is in flight uses the figure it has.
        for _ in 0..64 {
            assert_eq!(a.begin_read(every, t1), None);
        }
        // 5 more commit during the read; the log then holds 115, of which the read sees 112.
        a.reserve(1_000, 5).unwrap();
        a.settle(5, 5);
        a.read_done(mark, 112, t1);
        assert_eq!(
            a.stored(),
            117,
            "the 2 seen twice are an overcount, never an undercount"
        );
        let t2 = t1 + every;
        let mark = a.begin_read(every, t2).unwrap();
        a.read_done(mark, 115, t2);
        assert_eq!(a.stored(), 115, "the next read settles it");
        // A failed read lets the next caller try.
        let t3 = t2 + every;
        assert!(a.begin_read(every, t3).is_some());
        a.read_failed();
        assert!(a.begin_read(every, t3).is_some());
    }

    #[test]
    fn reservations_hold_room_until_settled() {
        let mut a = Account::new(0, Instant::now());
        a.reserve(10, 6).unwrap();
        assert_eq!(a.reserve(10, 6), Err(0), "6 in flight");
        a.settle(6, 0);
        a.reserve(10, 6).unwrap();
        a.settle(6, 4);
        assert_eq!(a.stored(), 4);
        assert_eq!(a.reserve(10, 7), Err(4));
    }

    #[test]
    fn retry_after_rounds_up_and_is_never_zero() {
        assert_eq!(retry_after_secs(Duration::from_millis(1)), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(1000)), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(1001)), 2);
        assert_eq!(retry_after_secs(Duration::ZERO), 1);
    }
}
