//! The ledger of one case: every transaction id a producer sent, which of them a broker
//! acknowledged (and as which message), every delivery with when its pop was sent and
//! answered and what became of its ack; and the checks over all of it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;
use std::time::Instant;

use serde_json::{json, Value};

/// What one pushed message carries: its own transaction id, its number and a checksum of
/// both, and padding whose length the number gives, so a delivery proves its payload intact.
pub fn payload(txid: &str, n: u64) -> Value {
    json!({ "t": txid, "n": n, "sum": checksum(txid, n), "pad": "x".repeat((n % 32) as usize) })
}

/// FNV-1a over the transaction id and the number.
fn checksum(txid: &str, n: u64) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in txid.bytes().chain(n.to_le_bytes()) {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Why a delivered payload is not the one pushed, if it is not.
pub fn corrupt(txid: &str, data: &Value) -> Option<String> {
    let n = data["n"].as_u64()?;
    let intact = data["t"] == txid
        && data["sum"] == checksum(txid, n)
        && data["pad"].as_str().map(str::len) == Some((n % 32) as usize);
    (!intact).then(|| format!("{txid}: {data}"))
}

/// What became of a delivery's ack.
#[derive(Clone, Debug, PartialEq)]
pub enum Ack {
    Pending,
    /// Answered `success: true`: committed.
    Committed,
    /// Answered `success: false`, with its error.
    Refused(String),
    /// No answer (transport errors, 503s) before the lease was over.
    Lost,
}

#[derive(Clone, Debug)]
pub struct Delivery {
    pub txid: String,
    pub message_id: String,
    pub pop_sent: Instant,
    pub received: Instant,
    pub ack: Ack,
}

#[derive(Default)]
pub struct Ledger(Mutex<Book>);

#[derive(Default, Clone)]
pub struct Book {
    /// Every transaction id a producer sent at least once.
    pub sent: HashSet<String>,
    /// Acknowledged pushes (`queued` or `duplicate` in a 201): their message ids.
    pub acknowledged: HashMap<String, String>,
    /// Push items answered `duplicate`: retries of pushes whose first answer was lost.
    pub duplicates: usize,
    pub deliveries: Vec<Delivery>,
    delivered: HashSet<String>,
    /// Broken promises found as answers arrived: push items with another status, a
    /// transaction id acknowledged as two messages, corrupt payloads.
    pub broken: Vec<String>,
}

impl Ledger {
    pub fn sent(&self, txids: &[String]) {
        let mut b = self.0.lock().unwrap();
        b.sent.extend(txids.iter().cloned());
    }

    /// A push's 201 answer, an array of item verdicts.
    pub fn answered(&self, items: &Value) {
        let mut b = self.0.lock().unwrap();
        for item in items.as_array().into_iter().flatten() {
            let txid = item["transaction_id"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            match (item["status"].as_str(), item["message_id"].as_str()) {
                (Some(status @ ("queued" | "duplicate")), Some(id)) => {
                    b.duplicates += (status == "duplicate") as usize;
                    let known = b.acknowledged.entry(txid.clone()).or_insert(id.to_string());
                    if known != id {
                        let line = format!("{txid} acknowledged as {known} and as {id}");
                        b.broken.push(line);
                    }
                }
                _ => b.broken.push(format!("push item answered {item}")),
            }
        }
    }

    /// A pop's messages: recorded and checked; returns their delivery numbers, for the ack.
    pub fn delivered(&self, pop_sent: Instant, messages: &[Value]) -> Vec<usize> {
        let received = Instant::now();
        let mut b = self.0.lock().unwrap();
        let mut numbers = Vec::with_capacity(messages.len());
        for m in messages {
            let txid = m["transactionId"].as_str().unwrap_or_default().to_string();
            if let Some(why) = corrupt(&txid, &m["data"]) {
                b.broken.push(format!("corrupt payload: {why}"));
            }
            numbers.push(b.deliveries.len());
            b.delivered.insert(txid.clone());
            b.deliveries.push(Delivery {
                txid,
                message_id: m["id"].as_str().unwrap_or_default().to_string(),
                pop_sent,
                received,
                ack: Ack::Pending,
            });
        }
        numbers
    }

    pub fn acked(&self, delivery: usize, ack: Ack) {
        self.0.lock().unwrap().deliveries[delivery].ack = ack;
    }

    pub fn acknowledged(&self) -> usize {
        self.0.lock().unwrap().acknowledged.len()
    }

    /// Acknowledged pushes not delivered yet.
    pub fn undelivered(&self) -> usize {
        let b = self.0.lock().unwrap();
        b.acknowledged
            .keys()
            .filter(|t| !b.delivered.contains(*t))
            .count()
    }

    pub fn book(&self) -> Book {
        self.0.lock().unwrap().clone()
    }
}

/// What the checks found.
#[derive(Default, Debug)]
pub struct Findings {
    pub acknowledged: usize,
    pub duplicates: usize,
    /// Sent, never acknowledged (every answer lost), and of those how many were delivered.
    pub unconfirmed: usize,
    pub unconfirmed_delivered: usize,
    pub unique_delivered: usize,
    pub deliveries: usize,
    /// Redeliveries by what became of the earlier delivery's ack.
    pub redelivered: BTreeMap<String, u64>,
    pub failures: Vec<String>,
}

impl Book {
    pub fn deliveries_of(&self, txid: &str) -> Vec<&Delivery> {
        self.deliveries.iter().filter(|d| d.txid == txid).collect()
    }

    pub fn check(&self) -> Findings {
        let mut f = Findings {
            acknowledged: self.acknowledged.len(),
            duplicates: self.duplicates,
            deliveries: self.deliveries.len(),
            unique_delivered: self.delivered.len(),
            failures: self.broken.clone(),
            ..Findings::default()
        };
        let mut lost: Vec<&String> = self
            .acknowledged
            .keys()
            .filter(|t| !self.delivered.contains(*t))
            .collect();
        lost.sort();
        if !lost.is_empty() {
            f.failures.push(format!(
                "{} acknowledged pushes never delivered: {:?}",
                lost.len(),
                &lost[..lost.len().min(20)]
            ));
        }
        for t in self
            .sent
            .iter()
            .filter(|t| !self.acknowledged.contains_key(*t))
        {
            f.unconfirmed += 1;
            f.unconfirmed_delivered += self.delivered.contains(t) as usize;
        }
        let mut by_txid: HashMap<&str, Vec<&Delivery>> = HashMap::new();
        for d in &self.deliveries {
            by_txid.entry(&d.txid).or_default().push(d);
        }
        for (txid, ds) in by_txid {
            self.check_message(txid, &ds, &mut f);
        }
        f
    }

    /// One transaction id's deliveries: pushed, one message, and redelivered only after an
    /// ack that did not commit.
    fn check_message(&self, txid: &str, ds: &[&Delivery], f: &mut Findings) {
        if !self.sent.contains(txid) {
            f.failures
                .push(format!("delivered {txid}, which no producer sent"));
        }
        let ids: HashSet<&str> = ds
            .iter()
            .map(|d| d.message_id.as_str())
            .chain(self.acknowledged.get(txid).map(String::as_str))
            .collect();
        if ids.len() > 1 {
            f.failures
                .push(format!("{txid} stored as several messages: {ids:?}"));
        }
        let committed: Vec<&&Delivery> = ds.iter().filter(|d| d.ack == Ack::Committed).collect();
        if committed.len() > 1 {
            f.failures.push(format!(
                "{txid}: {} deliveries to one group were each acked as committed",
                committed.len()
            ));
        }
        // An ack that committed moved the cursor past the message (and another claim in the
        // meantime would have made that ack fail): no later claim may deliver it again.
        for c in &committed {
            if ds.iter().any(|d| d.pop_sent > c.received) {
                f.failures.push(format!(
                    "{txid} delivered again after its ack was committed"
                ));
            }
        }
        // The one delivery that needs no explanation: the committed one, else the last.
        let last = ds.iter().max_by_key(|d| d.received).expect("one at least");
        let kept = committed.first().map_or(*last, |c| **c);
        for d in ds.iter().filter(|d| !std::ptr::eq(**d, kept)) {
            let why = match &d.ack {
                Ack::Refused(error) => format!("ack refused ({error})"),
                Ack::Lost => "ack unanswered".to_string(),
                Ack::Pending => "never acked".to_string(),
                Ack::Committed => "ack committed".to_string(),
            };
            *f.redelivered.entry(why).or_default() += 1;
        }
    }
}

/// The checks themselves, on made-up ledgers: each must catch what it is there for.
#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn message(txid: &str, id: &str) -> Value {
        json!({"transactionId": txid, "id": id, "data": payload(txid, 7)})
    }

    fn pushed(l: &Ledger, txid: &str, id: &str, status: &str) {
        l.sent(&[txid.to_string()]);
        l.answered(&json!([{"transaction_id": txid, "status": status, "message_id": id}]));
    }

    fn failures(l: &Ledger) -> Vec<String> {
        l.book().check().failures
    }

    #[test]
    fn a_clean_run_has_no_findings_and_explains_its_redelivery() {
        let l = Ledger::default();
        pushed(&l, "a", "m1", "queued");
        pushed(&l, "a", "m1", "duplicate");
        let first = l.delivered(Instant::now(), &[message("a", "m1")]);
        l.acked(first[0], Ack::Refused("invalid or expired lease".into()));
        let again = l.delivered(Instant::now(), &[message("a", "m1")]);
        l.acked(again[0], Ack::Committed);
        let f = l.book().check();
        assert!(f.failures.is_empty(), "{:?}", f.failures);
        assert_eq!(f.duplicates, 1);
        assert_eq!(
            f.redelivered,
            BTreeMap::from([("ack refused (invalid or expired lease)".to_string(), 1)])
        );
    }

    #[test]
    fn an_acknowledged_push_never_delivered_is_lost() {
        let l = Ledger::default();
        pushed(&l, "a", "m1", "queued");
        assert!(failures(&l)[0].contains("never delivered"));
    }

    #[test]
    fn a_delivery_nobody_pushed_is_found() {
        let l = Ledger::default();
        l.delivered(Instant::now(), &[message("ghost", "m9")]);
        assert!(failures(&l)[0].contains("no producer sent"));
    }

    #[test]
    fn an_altered_payload_is_found() {
        let l = Ledger::default();
        pushed(&l, "a", "m1", "queued");
        let mut m = message("a", "m1");
        m["data"]["pad"] = json!("tampered");
        l.delivered(Instant::now(), &[m]);
        assert!(failures(&l)[0].contains("corrupt payload"));
    }

    #[test]
    fn one_transaction_id_stored_twice_is_found() {
        let l = Ledger::default();
        pushed(&l, "a", "m1", "queued");
        pushed(&l, "a", "m2", "duplicate");
        l.delivered(Instant::now(), &[message("a", "m1")]);
        assert!(failures(&l)[0].contains("acknowledged as m1 and as m2"));
        let l = Ledger::default();
        pushed(&l, "a", "m1", "queued");
        l.delivered(Instant::now(), &[message("a", "m1"), message("a", "m2")]);
        assert!(failures(&l)[0].contains("several messages"));
    }

    #[test]
    fn a_redelivery_after_a_committed_ack_is_found() {
        let l = Ledger::default();
        pushed(&l, "a", "m1", "queued");
        let first = l.delivered(Instant::now(), &[message("a", "m1")]);
        l.acked(first[0], Ack::Committed);
        std::thread::sleep(Duration::from_millis(2));
        let again = l.delivered(Instant::now(), &[message("a", "m1")]);
        l.acked(again[0], Ack::Lost);
        assert!(failures(&l)
            .iter()
            .any(|f| f.contains("delivered again after its ack was committed")));
    }

    #[test]
    fn a_push_item_that_is_not_stored_is_found() {
        let l = Ledger::default();
        l.sent(&["a".to_string()]);
        l.answered(&json!([{"transaction_id": "a", "status": "failed", "error": "no"}]));
        assert!(failures(&l)[0].contains("push item answered"));
    }
}
