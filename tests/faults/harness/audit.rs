//! The log read back whole, after the drain, by a consumer group of its own: every message
//! stored was sent by a producer, is stored once, and is intact; every acknowledged push is
//! there. It also sees what the drain need not wait for (pushes whose every answer was lost).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::client::{Client, Until};
use super::ledger::{corrupt, Book};

const READ: &str =
    "/api/v1/pop/queue/jobs?batch=1000&consumerGroup=audit&subscriptionMode=all&autoAck=true";

/// How many messages the log holds, and what is wrong with them.
pub async fn audit(client: &Client, book: &Book) -> (usize, Vec<String>) {
    let mut stored: HashMap<String, usize> = HashMap::new();
    let mut failures = Vec::new();
    let until = Until::Deadline(Instant::now() + Duration::from_secs(20));
    loop {
        let Some(reply) = client.get(READ, until).await else {
            failures.push("the audit could not read the log".to_string());
            break;
        };
        let page = reply.body["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if page.is_empty() {
            break;
        }
        for m in &page {
            let txid = m["transactionId"].as_str().unwrap_or_default().to_string();
            if let Some(why) = corrupt(&txid, &m["data"]) {
                failures.push(format!("stored corrupt: {why}"));
            }
            *stored.entry(txid).or_default() += 1;
        }
    }
    let total = stored.values().sum();
    for (txid, n) in &stored {
        if !book.sent.contains(txid) {
            failures.push(format!("stored {txid}, which no producer sent"));
        }
        if *n > 1 {
            failures.push(format!("{txid} stored {n} times"));
        }
    }
    let mut missing: Vec<&String> = book
        .acknowledged
        .keys()
        .filter(|t| !stored.contains_key(*t))
        .collect();
    missing.sort();
    if !missing.is_empty() {
        failures.push(format!(
            "{} acknowledged pushes not in the log: {:?}",
            missing.len(),
            &missing[..missing.len().min(20)]
        ));
    }
    (total, failures)
}
