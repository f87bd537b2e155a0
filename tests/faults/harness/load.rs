//! The load of a case: producers pushing unique transaction ids (one a request, and ten a
//! request), consumers long-polling and acking everything they get, all through careful
//! clients and into the ledger.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::task::JoinHandle;

use super::client::{Client, Until};
use super::common::acks;
use super::ledger::{payload, Ack, Ledger};

pub const QUEUE: &str = "jobs";
/// Messages are spread over this many partitions, so pushes of ten write several.
const PARTITIONS: u64 = 4;
/// A producer's pause between pushes: load enough to matter, not so much that the two cores
/// shared with the consumers, the broker and PostgreSQL fall behind.
const PACE: Duration = Duration::from_millis(20);
/// Items per push, one producer each.
const PRODUCERS: [usize; 3] = [1, 10, 10];
const CONSUMERS: usize = 3;
const POP: &str = "/api/v1/pop/queue/jobs?batch=20&wait=true&timeout=1000";

pub struct Load {
    producing: Arc<AtomicBool>,
    consuming: Arc<AtomicBool>,
    producers: Vec<JoinHandle<()>>,
    consumers: Vec<JoinHandle<()>>,
}

impl Load {
    /// Starts producers and consumers; `client(k)` is the k-th worker's client.
    pub fn start(client: impl Fn(usize) -> Client, ledger: &Arc<Ledger>, lease: Duration) -> Load {
        let producing = Arc::new(AtomicBool::new(false));
        let consuming = Arc::new(AtomicBool::new(false));
        let producers = PRODUCERS
            .iter()
            .enumerate()
            .map(|(p, &batch)| {
                let (c, l, stop) = (client(p), ledger.clone(), producing.clone());
                tokio::spawn(async move { produce(p, batch, c, l, stop).await })
            })
            .collect();
        // Acks go to the next broker after the one a consumer pops from, as Queen's clients
        // spread their requests: an ack must work on any broker.
        let consumers = (0..CONSUMERS)
            .map(|k| {
                let home = PRODUCERS.len() + k;
                let (pops, acks) = (client(home), client(home + 1));
                let (l, stop) = (ledger.clone(), consuming.clone());
                tokio::spawn(async move { consume(pops, acks, l, stop, lease).await })
            })
            .collect();
        Load {
            producing,
            consuming,
            producers,
            consumers,
        }
    }

    /// Stops the producers, then lets the consumers run until every acknowledged push was
    /// delivered, for at most `within`; then stops them. Returns how long the drain took, or
    /// how many were still undelivered.
    pub async fn finish(self, ledger: &Ledger, within: Duration) -> Result<Duration, usize> {
        self.producing.store(true, Ordering::Relaxed);
        for p in self.producers {
            p.await.expect("a producer panicked");
        }
        let start = Instant::now();
        let drained = loop {
            let left = ledger.undelivered();
            if left == 0 {
                break Ok(start.elapsed());
            }
            if start.elapsed() >= within {
                break Err(left);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        self.consuming.store(true, Ordering::Relaxed);
        for c in self.consumers {
            c.await.expect("a consumer panicked");
        }
        drained
    }
}

/// The transaction id of producer `p`'s `n`-th message.
pub fn txid(p: usize, n: u64) -> String {
    format!("p{p}-{n}")
}

/// A push item of the load's queue.
pub fn item(txid: &str, n: u64) -> Value {
    json!({"queue": QUEUE, "partition": format!("p{}", n % PARTITIONS),
           "transactionId": txid, "payload": payload(txid, n)})
}

async fn produce(
    p: usize,
    batch: usize,
    client: Client,
    ledger: Arc<Ledger>,
    stop: Arc<AtomicBool>,
) {
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let ns: Vec<u64> = (n..n + batch as u64).collect();
        n += batch as u64;
        let txids: Vec<String> = ns.iter().map(|&k| txid(p, k)).collect();
        let items: Vec<Value> = txids.iter().zip(&ns).map(|(t, &k)| item(t, k)).collect();
        ledger.sent(&txids);
        // The same items until a broker answers them (or the load stops).
        let body = json!({ "items": items });
        if let Some(reply) = client
            .post("/api/v1/push", &body, Until::Stopped(&stop))
            .await
        {
            ledger.answered(&reply.body);
        }
        tokio::time::sleep(PACE).await;
    }
}

async fn consume(
    pops: Client,
    acks: Client,
    ledger: Arc<Ledger>,
    stop: Arc<AtomicBool>,
    lease: Duration,
) {
    while !stop.load(Ordering::Relaxed) {
        let Some(reply) = pops.get(POP, Until::Stopped(&stop)).await else {
            continue;
        };
        let messages = reply.body["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if messages.is_empty() {
            continue;
        }
        let deliveries = ledger.delivered(reply.sent, &messages);
        ack(&acks, &ledger, &messages, &deliveries, reply.sent + lease).await;
    }
}

/// Acks a pop's messages as completed, retrying until the lease is over (after that the ack
/// can only be refused and the messages redeliver).
async fn ack(
    client: &Client,
    ledger: &Ledger,
    messages: &[Value],
    deliveries: &[usize],
    until: Instant,
) {
    let body = json!({ "acknowledgments": acks(messages, "completed") });
    let answer = client
        .post("/api/v1/ack/batch", &body, Until::Deadline(until))
        .await;
    for (k, &d) in deliveries.iter().enumerate() {
        let item = answer.as_ref().map(|r| &r.body[k]);
        let outcome = match item {
            None => Ack::Lost,
            Some(item) if item["success"] == true => Ack::Committed,
            Some(item) => Ack::Refused(
                item["error"]
                    .as_str()
                    .unwrap_or("no error text")
                    .to_string(),
            ),
        };
        ledger.acked(d, outcome);
    }
}
