//! `--interval`: the messages pushed and delivered in each interval of the measured window,
//! counted exactly (the shared counters read at each interval's end, so every push answered
//! and every delivery received falls in one interval), to see a rate change during a run (a
//! long transaction elsewhere, a vacuum, a backlog growing) that the window's mean hides.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::workers::unix_micros;
use super::Shared;

/// The shortest and longest `--interval`: a shorter one would sample in a tight loop and
/// keep a sample per tick, a longer one (1e30) would overflow the timer's arithmetic.
const EVERY: std::ops::RangeInclusive<f64> = 0.1..=1_000_000.0;

/// Parses `--interval`: seconds, within [`EVERY`].
pub(crate) fn every(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if EVERY.contains(&v) => Ok(v),
        _ => Err(format!(
            "{s:?} is not a number of seconds from {} to {}",
            EVERY.start(),
            EVERY.end()
        )),
    }
}

/// One interval of the measured window.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Interval {
    /// When it started: wall clock (Unix ms), to line it up with events outside the generator,
    /// and seconds from the start of the measured window.
    pub start_unix_ms: u64,
    pub start_s: f64,
    /// Its length, seconds: `--interval`, except the last, which the window's end closes.
    pub seconds: f64,
    /// Messages the broker acknowledged as pushed, and deliveries (all groups), in it.
    pub pushed: u64,
    pub delivered: u64,
    pub push_rate: f64,
    pub delivery_rate: f64,
}

/// The counters' totals at one instant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Sample {
    /// Seconds since the measured window started, and the wall clock then (Unix ms).
    pub at_s: f64,
    pub unix_ms: u64,
    pub pushed: u64,
    pub delivered: u64,
}

/// Samples of the totals, the first at the window's start.
#[derive(Debug, Default)]
pub(crate) struct Samples(Vec<Sample>);

impl Samples {
    /// Closes the last interval at the window's end (`last`): an interval that would be
    /// shorter than a tenth of `every` (the window ended just after a tick) is folded into the
    /// one before it instead.
    pub fn close(&mut self, last: Sample, every: f64) {
        let n = self.0.len();
        match self.0.last_mut() {
            Some(prev) if n > 1 && last.at_s - prev.at_s < every / 10.0 => *prev = last,
            _ => self.0.push(last),
        }
    }

    /// The intervals between consecutive samples.
    pub fn intervals(&self) -> Vec<Interval> {
        let start = self.0.first().map_or(0.0, |s| s.at_s);
        self.0
            .windows(2)
            .map(|w| {
                let (a, b) = (w[0], w[1]);
                let seconds = (b.at_s - a.at_s).max(1e-9);
                let pushed = b.pushed.saturating_sub(a.pushed);
                let delivered = b.delivered.saturating_sub(a.delivered);
                Interval {
                    start_unix_ms: a.unix_ms,
                    start_s: a.at_s - start,
                    seconds,
                    pushed,
                    delivered,
                    push_rate: pushed as f64 / seconds,
                    delivery_rate: delivered as f64 / seconds,
                }
            })
            .collect()
    }
}

/// Reads the shared counters every `every` seconds from the window's start until finished.
pub(crate) struct Sampler {
    shared: Arc<Shared>,
    started: Instant,
    every: f64,
    samples: Arc<Mutex<Samples>>,
    task: tokio::task::JoinHandle<()>,
}

impl Sampler {
    /// Call at the window's start (`started`), the counters not yet moved by the window.
    pub fn start(shared: Arc<Shared>, started: Instant, every: f64) -> Sampler {
        let samples = Arc::new(Mutex::new(Samples(vec![sample(&shared, started)])));
        let task = tokio::spawn({
            let (shared, samples) = (shared.clone(), samples.clone());
            async move {
                for k in 1u32.. {
                    let due = started + Duration::from_secs_f64(every) * k;
                    tokio::time::sleep_until(due.into()).await;
                    let s = sample(&shared, started);
                    samples.lock().expect("samples").0.push(s);
                }
            }
        });
        Sampler {
            shared,
            started,
            every,
            samples,
            task,
        }
    }

    /// Call at the window's end: its intervals.
    pub fn finish(self) -> Vec<Interval> {
        self.task.abort();
        let last = sample(&self.shared, self.started);
        let mut samples = self.samples.lock().expect("samples");
        samples.close(last, self.every);
        samples.intervals()
    }
}

fn sample(shared: &Shared, started: Instant) -> Sample {
    Sample {
        at_s: started.elapsed().as_secs_f64(),
        unix_ms: unix_micros() / 1000,
        pushed: shared.pushed.load(Relaxed),
        delivered: shared.delivered.load(Relaxed),
    }
}

/// A line per interval, for the text report.
pub(crate) fn text(intervals: &[Interval]) -> String {
    intervals
        .iter()
        .map(|i| {
            format!(
                "interval {:>7.1} s +{:>5.1} s  in {:>9.0} msg/s  out {:>9.0} msg/s  ({} pushed, {} delivered)\n",
                i.start_s, i.seconds, i.push_rate, i.delivery_rate, i.pushed, i.delivered
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(at_s: f64, pushed: u64, delivered: u64) -> Sample {
        Sample {
            at_s,
            unix_ms: 1_000_000 + (at_s * 1000.0) as u64,
            pushed,
            delivered,
        }
    }

    #[test]
    fn the_interval_is_bounded_before_any_time_arithmetic() {
        for bad in ["0", "-1", "NaN", "inf", "1e30", "0.01", "x", ""] {
            assert!(every(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(every("0.5"), Ok(0.5));
        assert_eq!(every("60"), Ok(60.0));
    }

    #[test]
    fn intervals_count_what_happened_between_samples() {
        // Totals before the window (a prefill) are not the first interval's.
        let mut samples = Samples(vec![s(0.0, 500, 0), s(5.0, 1500, 800), s(10.0, 2000, 2000)]);
        samples.close(s(12.5, 2250, 2500), 5.0);
        let got = samples.intervals();
        assert_eq!(got.len(), 3);
        assert_eq!(
            got[0],
            Interval {
                start_unix_ms: 1_000_000,
                start_s: 0.0,
                seconds: 5.0,
                pushed: 1000,
                delivered: 800,
                push_rate: 200.0,
                delivery_rate: 160.0,
            }
        );
        assert_eq!((got[1].start_s, got[1].delivered), (5.0, 1200));
        assert_eq!(got[1].start_unix_ms, 1_005_000);
        // The last is as long as the window left it.
        assert_eq!((got[2].seconds, got[2].pushed), (2.5, 250));
        assert_eq!(got[2].delivery_rate, 200.0);
        // Every delivery is in exactly one interval.
        let total: u64 = got.iter().map(|i| i.delivered).sum();
        assert_eq!(total, 2500);
    }

    #[test]
    fn a_sliver_at_the_end_joins_the_last_interval() {
        let mut samples = Samples(vec![s(0.0, 0, 0), s(5.0, 100, 100)]);
        samples.close(s(5.2, 110, 104), 5.0);
        let got = samples.intervals();
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].seconds, got[0].delivered), (5.2, 104));
        // A window shorter than a tenth of an interval still has its one interval.
        let mut samples = Samples(vec![s(0.0, 0, 0)]);
        samples.close(s(0.3, 3, 2), 5.0);
        assert_eq!(samples.intervals().len(), 1);
        assert_eq!(Samples::default().intervals(), vec![]);
    }
}
