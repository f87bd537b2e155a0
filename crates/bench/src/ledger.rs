//! Which pushed messages were delivered, and how often: every transaction id the generator
//! pushes is `<scramble>-<producer>-<sequence>`, so the ledger is one counter per (producer,
//! sequence), with no string set to grow.

use std::sync::Mutex;

use super::windows::WindowCheck;

#[derive(Default)]
pub struct Ledger {
    /// pushed[p] = how many messages producer p had acknowledged as queued.
    pushed: Mutex<Vec<u64>>,
    /// delivered[p][seq] = deliveries of that message (saturating).
    delivered: Mutex<Vec<Vec<u8>>>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LedgerCheck {
    pub pushed: u64,
    pub delivered_unique: u64,
    /// Pushed (acknowledged) but never delivered.
    pub lost: u64,
    /// Deliveries beyond the first (at-least-once redeliveries).
    pub duplicates: u64,
    /// Deliveries of ids the generator never had acknowledged (should be 0).
    pub unknown: u64,
    /// Streams scenarios: every window in the sink exactly once, with the sum pushed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub windows: Option<WindowCheck>,
}

impl LedgerCheck {
    pub fn ok(&self) -> bool {
        self.lost == 0 && self.unknown == 0 && self.windows.as_ref().is_none_or(WindowCheck::ok)
    }
}

/// Every group's ledger checked, summed: one group losing a message is the run losing it.
pub fn check_all(ledgers: &[Ledger]) -> LedgerCheck {
    ledgers
        .iter()
        .map(Ledger::check)
        .fold(LedgerCheck::default(), |mut a, c| {
            a.pushed += c.pushed;
            a.delivered_unique += c.delivered_unique;
            a.lost += c.lost;
            a.duplicates += c.duplicates;
            a.unknown += c.unknown;
            a
        })
}

/// The transaction id of a producer's `seq`-th message. It starts with 16 hex digits that
/// look random, as the reference client's UUIDv4 ids do: ids that sort in push order would
/// flatter any index keyed by them (every insert would land on the same few pages).
pub fn txid(producer: usize, seq: u64) -> String {
    format!("{:016x}-{producer}-{seq}", scramble(producer, seq))
}

/// splitmix64 of (producer, seq): cheap, and spread over the whole key space.
fn scramble(producer: usize, seq: u64) -> u64 {
    let mut z = (producer as u64) << 40 ^ seq;
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn parse(txid: &str) -> Option<(usize, u64)> {
    let mut parts = txid.splitn(3, '-');
    let (mix, p, s) = (parts.next()?, parts.next()?, parts.next()?);
    let (p, s) = (p.parse().ok()?, s.parse().ok()?);
    (u64::from_str_radix(mix, 16).ok()? == scramble(p, s)).then_some((p, s))
}

impl Ledger {
    /// Records that producer `p` had messages up to `upto` (exclusive) acknowledged.
    pub fn pushed(&self, p: usize, upto: u64) {
        let mut v = self.pushed.lock().expect("ledger");
        if v.len() <= p {
            v.resize(p + 1, 0);
        }
        v[p] = v[p].max(upto);
    }

    pub fn delivered<'a>(&self, txids: impl Iterator<Item = &'a str>) -> u64 {
        let mut unknown = 0;
        let mut d = self.delivered.lock().expect("ledger");
        for t in txids {
            match parse(t) {
                Some((p, s)) => {
                    if d.len() <= p {
                        d.resize(p + 1, Vec::new());
                    }
                    let row = &mut d[p];
                    if row.len() <= s as usize {
                        row.resize(s as usize + 1, 0);
                    }
                    row[s as usize] = row[s as usize].saturating_add(1);
                }
                None => unknown += 1,
            }
        }
        unknown
    }

    /// Messages acknowledged as pushed that no delivery has covered yet.
    pub fn outstanding(&self) -> u64 {
        self.check().lost
    }

    pub fn check(&self) -> LedgerCheck {
        let pushed = self.pushed.lock().expect("ledger").clone();
        let d = self.delivered.lock().expect("ledger");
        let mut c = LedgerCheck::default();
        for (p, &n) in pushed.iter().enumerate() {
            c.pushed += n;
            let row = d.get(p).map(Vec::as_slice).unwrap_or(&[]);
            for s in 0..n as usize {
                match row.get(s).copied().unwrap_or(0) {
                    0 => c.lost += 1,
                    k => {
                        c.delivered_unique += 1;
                        c.duplicates += k as u64 - 1;
                    }
                }
            }
        }
        for (p, row) in d.iter().enumerate() {
            let n = pushed.get(p).copied().unwrap_or(0) as usize;
            c.unknown += row.iter().skip(n).filter(|&&k| k > 0).count() as u64;
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_lost_duplicates_and_unknown() {
        let l = Ledger::default();
        l.pushed(0, 3);
        l.pushed(1, 1);
        let ids = [txid(0, 0), txid(0, 1), txid(0, 1), txid(1, 0), txid(1, 5)];
        // A well-formed id whose scramble does not match is not the generator's.
        let forged = "0000000000000000-0-2".to_string();
        assert_eq!(
            l.delivered(
                ids.iter()
                    .chain([&forged, &"junk".to_string()])
                    .map(|s| s.as_str())
            ),
            2
        );
        let c = l.check();
        assert_eq!(
            c,
            LedgerCheck {
                pushed: 4,
                delivered_unique: 3,
                lost: 1,
                duplicates: 1,
                unknown: 1,
                windows: None,
            }
        );
        assert!(!c.ok());
        l.delivered([txid(0, 2).as_str()].into_iter());
        assert_eq!(l.outstanding(), 0);
    }
}
