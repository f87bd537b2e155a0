//! Two brokers on one database, one SIGKILLed mid-load. The clients move to the other; the
//! leases the dead one held for answers that never reached a client expire (2 s), and the
//! other broker delivers those messages too.
//!
//! So that the dead broker surely holds such a lease, a client pops a queue of large
//! messages through it and reads nothing (its receive buffer pinned small): the answer
//! stalls in the socket buffers with its lease claimed when the broker is killed.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;

use crate::harness::ledger::payload;
use crate::harness::{configure, database, Case};

const LEASE: Duration = Duration::from_secs(2);
const HELD: &str = "held";
/// 200 messages of 50 kB: 10 MB of answer, more than the socket buffers between a broker and
/// a client that reads nothing hold.
const HELD_MESSAGES: usize = 200;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_killed_beside_another_loses_nothing_and_its_leases_expire_to_the_other() {
    let mut case = Case::start("two_brokers", 2, LEASE, &[]).await;
    let (a, b) = (case.brokers[0].url(), case.brokers[1].url());
    configure(&a, HELD, LEASE).await;
    push_held(&a).await;
    case.steady(Duration::from_secs(4)).await;

    let asked = Instant::now();
    let stalled = stall_a_pop(case.brokers[0].port).await;
    let db = database(&case.cluster.url()).await;
    wait_for_held_lease(&db).await;
    case.brokers[0].kill().await;
    drop(stalled);
    // The lease was claimed after the pop was sent, so it cannot have run out before this
    // (less a little for the clocks' grain).
    let expiry = asked + LEASE - Duration::from_millis(50);

    // The lease outlives its broker until it expires; then the other broker delivers.
    let http = reqwest::Client::new();
    let early: Value = pop_held(&http, &b, false).await;
    assert_eq!(
        early["messages"],
        json!([]),
        "the dead broker's lease still holds"
    );
    let mut got = HashSet::new();
    while got.len() < HELD_MESSAGES {
        assert!(
            asked.elapsed() < LEASE * 5,
            "the held messages were delivered: {} of {HELD_MESSAGES}",
            got.len()
        );
        let page = pop_held(&http, &b, true).await;
        for m in page["messages"].as_array().into_iter().flatten() {
            assert!(
                Instant::now() >= expiry,
                "delivered before the lease ran out"
            );
            let t = m["transactionId"].as_str().unwrap().to_string();
            assert_eq!(m["data"]["t"], t.as_str(), "intact");
            got.insert(t);
        }
    }
    case.recovered().await;
    case.finish().await;
}

async fn push_held(url: &str) {
    let http = reqwest::Client::new();
    for round in 0..4 {
        let items: Vec<Value> = (0..HELD_MESSAGES / 4)
            .map(|k| {
                let t = format!("held-{round}-{k}");
                let mut data = payload(&t, k as u64);
                data["pad"] = json!("y".repeat(50_000));
                json!({"queue": HELD, "partition": "p", "transactionId": t, "payload": data})
            })
            .collect();
        let r = http
            .post(format!("{url}/api/v1/push"))
            .json(&json!({ "items": items }))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201);
    }
}

/// A pop of every held message through the broker on `port`, by a client that reads nothing.
async fn stall_a_pop(port: u16) -> tokio::net::TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket
        .connect(format!("127.0.0.1:{port}").parse().unwrap())
        .await
        .unwrap();
    let request = format!(
        "GET /api/v1/pop/queue/{HELD}?batch={HELD_MESSAGES} HTTP/1.1\r\nHost: regent\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    stream
}

async fn wait_for_held_lease(db: &tokio_postgres::Client) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let live: i64 = db
            .query_one(
                "SELECT count(*) FROM cursor_state c JOIN partitions p ON p.id = c.partition_id
                   JOIN queues q ON q.id = p.queue_id
                  WHERE q.name = $1 AND c.lease_id IS NOT NULL AND c.lease_expires_at > now()",
                &[&HELD],
            )
            .await
            .unwrap()
            .get(0);
        if live > 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the stalled pop claimed its lease"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn pop_held(http: &reqwest::Client, url: &str, wait: bool) -> Value {
    let r = http
        .get(format!(
            "{url}/api/v1/pop/queue/{HELD}?batch={HELD_MESSAGES}&wait={wait}&timeout=1000"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}
