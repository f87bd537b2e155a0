//! `regent serve` stopped by SIGTERM in the middle of load (issue 5): no push it acknowledged
//! is lost, no request gets an error status, and no lease is left held for an answer that
//! never reached a client.
//!
//! Transport errors are expected once the listener closes, and also on a kept-alive
//! connection the server closes as idle at the moment the client sends on it (hyper's
//! graceful shutdown; no server can rule that race out): such a request was never answered,
//! so its push counts as not acknowledged, and its pop as not delivered.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::process::Child;

use crate::support::{acks, fresh_database, serve};

/// SIGTERM, then the exit status within `within`.
async fn terminate(child: &mut Child, within: Duration) -> std::process::ExitStatus {
    let pid = child.id().expect("running") as i32;
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    tokio::time::timeout(within, child.wait())
        .await
        .unwrap_or_else(|_| panic!("regent serve exits within {within:?} of SIGTERM"))
        .unwrap()
}

async fn db(db_url: &str) -> tokio_postgres::Client {
    let (db, conn) = tokio_postgres::connect(db_url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    db
}

#[derive(Default)]
struct Seen {
    acknowledged: HashSet<String>,
    delivered: HashSet<String>,
    leases: HashSet<String>,
    /// Answers with an error status.
    broken: Vec<String>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_under_load_loses_no_acknowledged_push_and_leaves_no_lease_behind() {
    let db_url = fresh_database().await;
    let (mut child, port) = serve(&db_url, &[]).await;

    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut tasks = Vec::new();
    for p in 0..4 {
        let (http, base, seen, stop) = (http.clone(), base.clone(), seen.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            for n in 0.. {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    return;
                }
                let ids: Vec<String> = (0..20).map(|k| format!("p{p}-{n}-{k}")).collect();
                let items: Vec<Value> = ids
                    .iter()
                    .map(|t| {
                        json!({"queue": "jobs", "partition": format!("part-{}", n % 8),
                                    "transactionId": t, "payload": {"t": t}})
                    })
                    .collect();
                match http
                    .post(format!("{base}/api/v1/push"))
                    .json(&json!({ "items": items }))
                    .send()
                    .await
                {
                    Ok(r) if r.status() == 201 => {
                        let v: Value = r.json().await.unwrap();
                        let mut s = seen.lock().unwrap();
                        for item in v.as_array().unwrap() {
                            assert_eq!(item["status"], "queued", "{item}");
                            s.acknowledged
                                .insert(item["transaction_id"].as_str().unwrap().into());
                        }
                    }
                    Ok(r) => {
                        let status = r.status();
                        seen.lock().unwrap().broken.push(format!("push: {status}"));
                    }
                    Err(_) => return,
                }
            }
        }));
    }
    for _ in 0..3 {
        let (http, base, seen) = (http.clone(), base.clone(), seen.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let popped = match http
                    .get(format!(
                        "{base}/api/v1/pop/queue/jobs?batch=50&wait=true&timeout=3000"
                    ))
                    .send()
                    .await
                {
                    Ok(r) if r.status() == 200 => r.json::<Value>().await.unwrap(),
                    Ok(r) => {
                        let status = r.status();
                        seen.lock().unwrap().broken.push(format!("pop: {status}"));
                        return;
                    }
                    Err(_) => return,
                };
                let messages = popped["messages"].as_array().cloned().unwrap_or_default();
                if messages.is_empty() {
                    continue;
                }
                {
                    let mut s = seen.lock().unwrap();
                    s.leases.insert(popped["leaseId"].as_str().unwrap().into());
                    for m in &messages {
                        s.delivered
                            .insert(m["transactionId"].as_str().unwrap().into());
                    }
                }
                let acks = acks(&messages, "completed");
                // An ack refused because the listener closed leaves the lease to expire:
                // the messages were delivered, which is what the check below is about.
                let _ = http
                    .post(format!("{base}/api/v1/ack/batch"))
                    .json(&json!({ "acknowledgments": acks }))
                    .send()
                    .await;
            }
        }));
    }

    // Long-polls parked on a queue nobody pushes to: a graceful stop answers them at once
    // with their empty shape; a process that just dies resets them.
    let parked: Vec<_> = (0..4)
        .map(|_| {
            let (http, base) = (http.clone(), base.clone());
            tokio::spawn(async move {
                let r = http
                    .get(format!(
                        "{base}/api/v1/pop/queue/idle?wait=true&timeout=25000"
                    ))
                    .send()
                    .await?;
                Ok::<_, reqwest::Error>((r.status(), r.json::<Value>().await?))
            })
        })
        .collect();

    tokio::time::sleep(Duration::from_millis(1500)).await;
    let status = terminate(&mut child, Duration::from_secs(20)).await;
    assert!(status.success(), "exit status {status}");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for p in parked {
        let (status, body) = p.await.unwrap().expect("a parked long-poll is answered");
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["messages"], json!([]), "{body}");
    }
    for t in tasks {
        t.await.unwrap();
    }

    let seen = Arc::try_unwrap(seen).ok().unwrap().into_inner().unwrap();
    assert!(seen.broken.is_empty(), "error answers: {:?}", seen.broken);
    assert!(
        seen.acknowledged.len() >= 200,
        "the load ran: {} pushes acknowledged",
        seen.acknowledged.len()
    );
    assert!(!seen.delivered.is_empty(), "the consumers ran");

    // Every acknowledged push is in the log, read back from the database's frames.
    let db = db(&db_url).await;
    let logged: i64 = db
        .query_one(
            "SELECT coalesce(sum(p.next_offset), 0)::bigint FROM partition_heads p
               JOIN queues q ON q.id = p.queue_id WHERE q.name = 'jobs'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(
        logged as usize >= seen.acknowledged.len(),
        "{logged} logged < {} acknowledged",
        seen.acknowledged.len()
    );
    let missing: Vec<&String> = {
        // A fresh group reads every partition from the start, one partition per pop.
        let b = crate::support::Broker::attach(&db_url).await;
        let mut stored = HashSet::new();
        loop {
            let page = b
                .pop(
                    "jobs",
                    "batch=10000&consumerGroup=audit&subscriptionMode=all",
                )
                .await;
            let ids = crate::support::Broker::txids(&page);
            if ids.is_empty() {
                break;
            }
            stored.extend(ids);
        }
        seen.acknowledged
            .iter()
            .filter(|t| !stored.contains(*t))
            .collect()
    };
    assert!(missing.is_empty(), "acknowledged but lost: {missing:?}");

    // No lease is live that no consumer received.
    let live: Vec<String> = db
        .query(
            "SELECT lease_id::text FROM cursor_state
              WHERE lease_id IS NOT NULL AND lease_expires_at > now() AND consumer_group <> 'audit'",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let orphaned: Vec<&String> = live.iter().filter(|l| !seen.leases.contains(*l)).collect();
    assert!(
        orphaned.is_empty(),
        "leases held for answers nobody got: {orphaned:?}"
    );
}

/// A request stuck on the database does not hold the process past `SHUTDOWN_GRACE_SECONDS`:
/// it is answered 503 (safe to retry: pushes are deduplicated) and the broker exits cleanly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_outlives_the_grace_period_is_cut_off_with_503() {
    let db_url = fresh_database().await;
    let (mut child, port) = serve(&db_url, &[("SHUTDOWN_GRACE_SECONDS", "1")]).await;
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    let push = |t: &'static str| {
        let (http, base) = (http.clone(), base.clone());
        async move {
            http.post(format!("{base}/api/v1/push"))
                .json(&json!({"items": [{"queue": "q", "partition": "p", "transactionId": t, "payload": {}}]}))
                .send()
                .await
                .unwrap()
        }
    };
    assert_eq!(push("first").await.status(), 201, "the queue exists");

    // Every push takes its partition's sequencer row lock; holding it stalls the next one.
    let db = db(&db_url).await;
    // (An update that changes nothing: Citus locks with FOR UPDATE only on one shard.)
    db.batch_execute("BEGIN; UPDATE partitions SET first_offset = first_offset")
        .await
        .unwrap();
    let stuck = tokio::spawn(push("stuck"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!stuck.is_finished(), "the push waits on the lock");

    let status = terminate(&mut child, Duration::from_secs(10)).await;
    assert!(status.success(), "exit status {status}");
    let answer = stuck.await.unwrap();
    assert_eq!(answer.status(), 503);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body, json!({"error": "Server is shutting down"}));
    db.batch_execute("ROLLBACK").await.unwrap();
}

/// A pop answer the client never takes in (it stops reading a large answer) is not counted
/// as delivered: at shutdown its lease is released, so the messages are claimable at once
/// instead of after the lease, and the client cannot read a complete answer naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lease_of_an_answer_that_never_reached_its_client_is_released() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let db_url = fresh_database().await;
    let (mut child, port) = serve(&db_url, &[("SHUTDOWN_GRACE_SECONDS", "1")]).await;
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    let r = http
        .post(format!("{base}/api/v1/configure"))
        .json(&json!({"queue": "big", "options": {"leaseTime": 3600}}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success());
    // 10 MB of answer: more than the socket buffers between us hold (the client's receive
    // buffer is pinned small below; the send buffer grows to 4 MB at most).
    let filler = "x".repeat(10_000);
    for round in 0..2 {
        let items: Vec<Value> = (0..500)
            .map(|k| json!({"queue": "big", "partition": "p", "transactionId": format!("{round}-{k}"), "payload": {"f": filler}}))
            .collect();
        let r = http
            .post(format!("{base}/api/v1/push"))
            .json(&json!({ "items": items }))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201);
    }

    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stalled = socket
        .connect(format!("127.0.0.1:{port}").parse().unwrap())
        .await
        .unwrap();
    stalled
        .write_all(b"GET /api/v1/pop/queue/big?batch=1000 HTTP/1.1\r\nHost: regent\r\n\r\n")
        .await
        .unwrap();
    let db = db(&db_url).await;
    let leased = || async {
        db.query_one(
            "SELECT count(*) FROM cursor_state WHERE lease_id IS NOT NULL AND lease_expires_at > now()",
            &[],
        )
        .await
        .unwrap()
        .get::<_, i64>(0)
    };
    let mut waited = 0;
    while leased().await == 0 {
        waited += 1;
        assert!(waited < 100, "the pop claimed its partition");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let status = terminate(&mut child, Duration::from_secs(10)).await;
    assert!(status.success(), "exit status {status}");
    assert_eq!(
        leased().await,
        0,
        "the undelivered answer's lease is released"
    );
    let cursors: Vec<(i64, i32)> = db
        .query("SELECT committed, retry_count FROM cursor_state", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert!(
        cursors.iter().all(|c| *c == (-1, 0)),
        "nothing consumed, nothing charged: {cursors:?}"
    );

    let mut got = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stalled.read_to_end(&mut got)).await;
    let text = String::from_utf8_lossy(&got);
    let head_end = text.find("\r\n\r\n").expect("the head was sent") + 4;
    let length: usize = text[..head_end]
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length: ")
                .map(|v| v.trim().parse().unwrap())
        })
        .expect("a content length");
    assert!(
        got.len() - head_end < length,
        "the client got the whole answer ({} of {length} bytes) for a released lease",
        got.len() - head_end
    );

    // Another broker on the same database hands the messages out at once.
    let b = crate::support::Broker::attach(&db_url).await;
    let page = b.pop("big", "batch=1000").await;
    assert_eq!(crate::support::Broker::txids(&page).len(), 1000);
}
