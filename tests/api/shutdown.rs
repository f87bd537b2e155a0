//! `regent serve` stopped by SIGTERM in the middle of load (issue 5): no push it acknowledged
//! is lost, no request gets an error status, and no lease is left held for an answer that
//! never reached a client.
//!
//! Transport errors are expected once the listener closes, and also on a kept-alive
//! connection the server closes as idle at the moment the client sends on it (hyper's
//! graceful shutdown; no server can rule that race out): such a request was never answered,
//! so its push counts as not acknowledged, and its pop as not delivered.

use std::collections::HashSet;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use crate::support::fresh_database;

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
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut child = Command::new(env!("CARGO_BIN_EXE_regent"))
        .arg("serve")
        .env("DATABASE_URL", &db_url)
        .env("HOST", "127.0.0.1")
        .env("PORT", port.to_string())
        .env("NO_COLOR", "1")
        .env_remove("JWT_ENABLED")
        .env_remove("TENANT_LIMITS")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("regent serve starts");
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    tokio::time::timeout(Duration::from_secs(30), async {
        while let Ok(Some(line)) = out.next_line().await {
            if line.contains("Regent is serving on") {
                return;
            }
        }
        panic!("regent serve exited before serving");
    })
    .await
    .expect("regent serve starts within 30 s");

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
                let acks: Vec<Value> = messages
                    .iter()
                    .map(|m| {
                        json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                                    "leaseId": m["leaseId"], "status": "completed"})
                    })
                    .collect();
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
    let pid = child.id().expect("running") as i32;
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("regent serve exits within 20 s of SIGTERM")
        .unwrap();
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
    let (db, conn) = tokio_postgres::connect(&db_url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let logged: i64 = db
        .query_one(
            "SELECT coalesce(sum(p.next_offset), 0)::bigint FROM partitions p
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
            "SELECT lease_id::text FROM cursors
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
