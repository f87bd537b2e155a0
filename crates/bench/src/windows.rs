//! Tumbling windows for the streams scenarios: the fold a step applies to a partition's open
//! windows (the Python SDK's tumbling window and reducer), the state key the SDK writes, and
//! the window ledger: what the producers pushed into each (partition, window) against what
//! the sink received.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

/// A window's running sum. `seeded`: it was read from the broker's state (so closing it
/// deletes a row); `touched`: this step folded a message into it (so it is written back).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Acc {
    pub sum: i64,
    pub seeded: bool,
    pub touched: bool,
}

/// A partition's open windows by start (epoch ms).
pub type Open = BTreeMap<i64, Acc>;

/// What one step does to a partition's windows.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Step {
    /// Windows that closed: (start, sum, seeded), oldest first.
    pub closed: Vec<(i64, i64, bool)>,
    /// Open windows this step folded into: (start, sum).
    pub upserts: Vec<(i64, i64)>,
}

/// Folds `events` (event time ms, value), in log order, into `open`, and closes every window
/// that ended at or before the latest event time seen, as the SDK's reducer does with its
/// batch clock: a window closes only when a message of a later window arrives. Closed
/// windows leave `open`.
pub fn fold(open: &mut Open, events: impl IntoIterator<Item = (i64, i64)>, width: i64) -> Step {
    let mut clock = None;
    for (t, v) in events {
        let acc = open.entry(start_of(t, width)).or_default();
        acc.sum += v;
        acc.touched = true;
        clock = clock.max(Some(t));
    }
    let mut step = Step::default();
    let Some(clock) = clock else { return step };
    // End = start + width <= clock.
    let closing: Vec<i64> = open.range(..=clock - width).map(|(s, _)| *s).collect();
    for s in closing {
        let acc = open.remove(&s).expect("a key just listed");
        step.closed.push((s, acc.sum, acc.seeded));
    }
    step.upserts = open
        .iter()
        .filter(|(_, a)| a.touched)
        .map(|(s, a)| (*s, a.sum))
        .collect();
    step
}

pub fn start_of(t: i64, width: i64) -> i64 {
    t - t.rem_euclid(width)
}

/// The SDK's operator tag for a tumbling window of `width` ms: `tumb:<seconds>`, the
/// seconds as Python prints the number it was given (`tumb:1`, `tumb:0.5`).
pub fn tag(width: i64) -> String {
    if width % 1000 == 0 {
        format!("tumb:{}", width / 1000)
    } else {
        format!("tumb:{}", width as f64 / 1000.0)
    }
}

/// The SDK's state key of a window: `<tag>\u{1f}<window start, ISO 8601 ms Z>\u{1f}<key>`,
/// the key being the source partition id (the SDK's default `key`).
pub fn state_key(tag: &str, start: i64, partition_id: &str) -> String {
    let iso = chrono::DateTime::from_timestamp_millis(start)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    format!("{tag}\u{1f}{iso}\u{1f}{partition_id}")
}

/// What the producers pushed per (partition name, window start): the sum of the values.
#[derive(Default)]
pub struct Windows {
    pushed: Mutex<HashMap<(String, i64), i64>>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct WindowCheck {
    /// (partition, window)s the producers pushed into.
    pub windows: u64,
    /// Window results the sink held.
    pub emitted: u64,
    /// Windows the sink held exactly once, with the sum pushed.
    pub exact: u64,
    /// Windows none of whose results has the sum pushed (a lost or double-counted message).
    pub wrong_sum: u64,
    /// Windows the sink never received.
    pub missing: u64,
    /// Results beyond the first of a window.
    pub duplicates: u64,
    /// Results for windows nothing was pushed into.
    pub unknown: u64,
}

impl WindowCheck {
    pub fn ok(&self) -> bool {
        self.wrong_sum == 0 && self.missing == 0 && self.duplicates == 0 && self.unknown == 0
    }
}

impl Windows {
    pub fn pushed(&self, partition: &str, start: i64, sum: i64) {
        let mut p = self.pushed.lock().expect("windows");
        *p.entry((partition.to_string(), start)).or_default() += sum;
    }

    /// Checks the sink's results, (partition, window start, sum), against what was pushed.
    pub fn check(&self, sink: &[(String, i64, i64)]) -> WindowCheck {
        let pushed = self.pushed.lock().expect("windows");
        let mut got: HashMap<(&str, i64), Vec<i64>> = HashMap::new();
        for (p, s, sum) in sink {
            got.entry((p.as_str(), *s)).or_default().push(*sum);
        }
        let mut c = WindowCheck {
            windows: pushed.len() as u64,
            emitted: sink.len() as u64,
            ..WindowCheck::default()
        };
        for ((p, s), want) in pushed.iter() {
            match got.get(&(p.as_str(), *s)).map(Vec::as_slice) {
                None | Some([]) => c.missing += 1,
                Some([one]) if one == want => c.exact += 1,
                Some(all) => {
                    c.duplicates += all.len() as u64 - 1;
                    if !all.contains(want) {
                        c.wrong_sum += 1;
                    }
                }
            }
        }
        c.unknown = got
            .iter()
            .filter(|((p, s), _)| !pushed.contains_key(&(p.to_string(), *s)))
            .map(|(_, v)| v.len() as u64)
            .sum();
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_closes_when_a_later_one_gets_a_message() {
        let mut open = Open::new();
        // Two messages of window 1000 and nothing later: it stays open.
        let s = fold(&mut open, [(1000, 2), (1999, 3)], 1000);
        assert_eq!(s.closed, vec![]);
        assert_eq!(s.upserts, vec![(1000, 5)]);
        // As read back from state at the next step.
        for a in open.values_mut() {
            *a = Acc {
                seeded: true,
                touched: false,
                ..*a
            };
        }
        // A message at exactly the window's end opens the next one and closes it.
        let s = fold(&mut open, [(2000, 7)], 1000);
        assert_eq!(s.closed, vec![(1000, 5, true)]);
        assert_eq!(s.upserts, vec![(2000, 7)]);
        // A step spanning three windows emits the two it closed, the middle one never stored.
        let s = fold(&mut open, [(2500, 1), (3100, 4), (4000, 9)], 1000);
        assert_eq!(s.closed, vec![(2000, 8, false), (3000, 4, false)]);
        assert_eq!(s.upserts, vec![(4000, 9)]);
        assert_eq!(fold(&mut open, [], 1000), Step::default());
    }

    #[test]
    fn keys_are_the_sdks() {
        assert_eq!(tag(1000), "tumb:1");
        assert_eq!(tag(500), "tumb:0.5");
        assert_eq!(
            state_key("tumb:1", 1_767_225_600_000, "p-id"),
            "tumb:1\u{1f}2026-01-01T00:00:00.000Z\u{1f}p-id"
        );
        assert_eq!(start_of(1999, 1000), 1000);
    }

    #[test]
    fn the_window_ledger_counts_missing_wrong_duplicate_and_unknown() {
        let w = Windows::default();
        for (p, s, v) in [
            ("a", 0, 1),
            ("a", 0, 2),
            ("a", 1000, 5),
            ("b", 0, 4),
            ("b", 1000, 6),
        ] {
            w.pushed(p, s, v);
        }
        let sink = |v: &[(&str, i64, i64)]| -> Vec<(String, i64, i64)> {
            v.iter().map(|(p, s, x)| (p.to_string(), *s, *x)).collect()
        };
        let all = sink(&[("a", 0, 3), ("a", 1000, 5), ("b", 0, 4), ("b", 1000, 6)]);
        assert!(w.check(&all).ok());
        assert_eq!(w.check(&all).exact, 4);
        let bad = sink(&[("a", 0, 3), ("a", 0, 3), ("a", 1000, 4), ("c", 0, 1)]);
        assert_eq!(
            w.check(&bad),
            WindowCheck {
                windows: 4,
                emitted: 4,
                exact: 0,
                wrong_sum: 1,
                missing: 2,
                duplicates: 1,
                unknown: 1,
            }
        );
    }
}
