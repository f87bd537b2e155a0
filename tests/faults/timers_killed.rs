//! Timers firing on two brokers while each is SIGKILLed and started again, under the usual
//! load: every timer scheduled is delivered as a message of its queue exactly once, with the
//! id its schedule promised, and none is appended before its `deliverAt` (a fire takes its
//! timer, pushes the message and deletes the timer in one transaction, so a broker killed
//! mid-fire leaves the timer for the next fire).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};

use crate::harness::{call, Case};

const QUEUE: &str = "timers-killed";
const TIMERS: usize = 600;
const GROUP: &str = "audit";

/// Schedules the timers in batches of 50 through `url`, their delays spread over 0.2 to 2.6
/// s: (txn, (messageId, deliverAt)).
async fn schedule(url: &str) -> HashMap<String, (Value, String)> {
    let payload = base64::engine::general_purpose::STANDARD.encode(r#"{"due": true}"#);
    let mut promised = HashMap::new();
    for batch in 0..TIMERS / 50 {
        let ops: Vec<Value> = (0..50)
            .map(|i| {
                let n = batch * 50 + i;
                json!({"op": "schedule", "queue": QUEUE, "timerKey": format!("t/{n}"),
                       "payload": payload, "delayMs": 200 + (n * 4) as i64, "txn": format!("tx-{n}")})
            })
            .collect();
        let body = json!({ "operations": ops });
        let v = call(url, reqwest::Method::POST, "/api/v1/timers", Some(&body)).await;
        for r in v["results"].as_array().expect("results") {
            assert_eq!(r["status"], "scheduled", "{r}");
            let txn = r["txn"].as_str().unwrap().to_string();
            let at = r["deliverAt"].as_str().unwrap().to_string();
            promised.insert(txn, (r["messageId"].clone(), at));
        }
    }
    promised
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timers_fire_exactly_once_while_their_brokers_are_killed_and_restarted() {
    let mut case = Case::start("timers_killed", 2, Duration::from_secs(5), &[]).await;
    case.steady(Duration::from_secs(1)).await;
    let promised = schedule(&case.brokers[0].url()).await;
    assert_eq!(promised.len(), TIMERS);
    // Both brokers fire; each is killed while timers are due, then started again.
    for k in [1, 0] {
        tokio::time::sleep(Duration::from_millis(400)).await;
        case.brokers[k].kill().await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        case.brokers[k].restart(&[]).await;
    }
    case.recovered().await;

    // Every timer is due by now; read the queue to its end.
    let url = case.brokers[1].url();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let until = Instant::now() + Duration::from_secs(20);
    while seen.len() < TIMERS && Instant::now() < until {
        let pop = call(
            &url,
            reqwest::Method::GET,
            &format!("/api/v1/pop/queue/{QUEUE}?wait=true&timeout=1000&batch=200&autoAck=true&consumerGroup={GROUP}"),
            None,
        )
        .await;
        for m in pop["messages"].as_array().cloned().unwrap_or_default() {
            let txn = m["transactionId"].as_str().unwrap().to_string();
            let (id, deliver_at) = promised
                .get(&txn)
                .unwrap_or_else(|| panic!("never scheduled: {m}"));
            assert_eq!(&m["id"], id, "the promised id: {m}");
            let created = m["createdAt"].as_str().unwrap();
            assert!(
                instant(created) >= instant(deliver_at),
                "appended before its deliverAt ({deliver_at}): {m}"
            );
            *seen.entry(txn).or_default() += 1;
        }
    }
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "delivered more than once: {twice:?}");
    assert_eq!(seen.len(), TIMERS, "every timer delivered");
    case.finish().await;
}

fn instant(text: &str) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(text)
        .expect("an instant")
        .to_utc()
}
