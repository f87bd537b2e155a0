//! Queen's timers, in one broker's memory: what this broker's timer operations and fires did
//! since it started, per tenant (the Prometheus families `regent_timers_*_total` and
//! `regent_timer_lateness_seconds`), and when its firing loop means to wake, so that a
//! schedule with an earlier deadline wakes it at once.
//!
//! The counts are bounded as every [`PerTenant`] map is.

use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::counters::PerTenant;
use crate::lock;

/// The lateness histogram's upper bounds, in milliseconds (fired at, minus `deliver_at`).
pub const LATENESS_BUCKETS_MS: [f64; 12] = [
    5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0, 60000.0,
];

/// One tenant's counts.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TimerTotal {
    /// Timers stored under a key with no pending timer.
    pub scheduled: u64,
    /// Timers stored in place of a pending one.
    pub rescheduled: u64,
    pub cancelled: u64,
    /// Schedules and cancels that found a fire holding their timer.
    pub too_late: u64,
    /// Timers whose message this broker pushed.
    pub fired: u64,
    /// Their lateness, summed, in milliseconds.
    pub lateness_ms: f64,
    /// How many fired within each of [`LATENESS_BUCKETS_MS`] (not cumulative); the last is
    /// the ones later than every bound.
    pub lateness: [u64; LATENESS_BUCKETS_MS.len() + 1],
}

impl TimerTotal {
    fn fired(&mut self, lateness_ms: f64) {
        let ms = lateness_ms.max(0.0);
        self.fired += 1;
        self.lateness_ms += ms;
        let i = LATENESS_BUCKETS_MS
            .iter()
            .position(|&b| ms <= b)
            .unwrap_or(LATENESS_BUCKETS_MS.len());
        self.lateness[i] += 1;
    }
}

#[derive(Default)]
pub struct Timers {
    totals: PerTenant<TimerTotal>,
    /// When the firing loop sleeps until (`None`: it is not asleep).
    plan: Mutex<Option<Instant>>,
    wake: Notify,
}

impl Timers {
    /// Adds to `tenant`'s counts with `f`.
    pub fn count(&self, tenant: &str, f: impl FnOnce(&mut TimerTotal)) {
        self.totals.count(tenant, f);
    }

    /// Counts timers of `tenant` fired this late (milliseconds each).
    pub fn fired(&self, tenant: &str, lateness_ms: &[f64]) {
        self.count(tenant, |t| lateness_ms.iter().for_each(|&ms| t.fired(ms)));
    }

    /// Every tenant counted: (tenant, counts), by tenant.
    pub fn all(&self) -> Vec<(String, TimerTotal)> {
        self.totals.all()
    }

    pub fn len(&self) -> usize {
        self.totals.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A timer due in `delay` committed: the firing loop wakes now if it means to sleep past
    /// that.
    pub fn scheduled_in(&self, delay: Duration) {
        let due = Instant::now() + delay;
        let wake = match *lock(&self.plan) {
            Some(plan) => due < plan,
            None => false,
        };
        if wake {
            self.wake.notify_one();
        }
    }

    /// The firing loop sleeps until `at`, or until [`Timers::scheduled_in`] wakes it
    /// earlier; returns when either comes.
    pub async fn sleep_until(&self, at: Instant) {
        *lock(&self.plan) = Some(at);
        tokio::select! {
            _ = tokio::time::sleep_until(at) => {}
            _ = self.wake.notified() => {}
        }
        *lock(&self.plan) = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters::MAX_KEYS;
    use std::collections::HashMap;

    #[test]
    fn lateness_falls_in_its_bucket() {
        let t = Timers::default();
        t.fired("a", &[0.0, 5.0, 7.0, -3.0, 1e9]);
        let all = t.all();
        let a = all[0].1;
        assert_eq!(a.fired, 5);
        assert_eq!(
            a.lateness[0], 3,
            "0, 5 and a negative one (clock skew) are on time"
        );
        assert_eq!(a.lateness[1], 1);
        assert_eq!(a.lateness[LATENESS_BUCKETS_MS.len()], 1);
        assert_eq!(a.lateness_ms, 1e9 + 12.0);
    }

    #[test]
    fn the_counts_stay_bounded_and_a_busy_tenant_keeps_its_own() {
        let t = Timers::default();
        for i in 0..MAX_KEYS + 5 {
            t.count(&format!("t{i}"), |c| c.scheduled += 1);
            t.count("busy", |c| c.scheduled += 1);
        }
        assert!(t.len() <= MAX_KEYS, "{}", t.len());
        let all: HashMap<String, TimerTotal> = t.all().into_iter().collect();
        assert_eq!(all["busy"].scheduled, (MAX_KEYS + 5) as u64);
    }

    #[tokio::test]
    async fn an_earlier_deadline_wakes_the_sleeping_loop() {
        let t = std::sync::Arc::new(Timers::default());
        let far = Instant::now() + Duration::from_secs(60);
        let sleeper = t.clone();
        let slept = tokio::spawn(async move { sleeper.sleep_until(far).await });
        while lock(&t.plan).is_none() {
            tokio::task::yield_now().await;
        }
        t.scheduled_in(Duration::from_secs(120));
        assert!(!slept.is_finished(), "a later deadline leaves it asleep");
        t.scheduled_in(Duration::from_millis(1));
        tokio::time::timeout(Duration::from_secs(5), slept)
            .await
            .expect("woken")
            .unwrap();
    }
}
