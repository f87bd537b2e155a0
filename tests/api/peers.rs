//! Wakeups between brokers on one database (issue 5): a push through one broker wakes the
//! parked pops of another and hints their claims, over each broker's dedicated notification
//! connection. The check listens on broker B's own wakeup notifier, which only announcements
//! fire (never a timer), so a wakeup seen there came from broker A's note.

use std::time::{Duration, Instant};

use reqwest::StatusCode;

use crate::support::{broker, Broker};

/// Waits until `b`'s notifier for (queue, group) fires, after `push` runs.
async fn woken_by(b: &Broker, queue: &str, group: &str, push: impl std::future::Future) -> bool {
    let state = b.runtime();
    let notify = state.wakeups.for_group("default", queue, group);
    let woken = notify.notified();
    tokio::pin!(woken);
    woken.as_mut().enable();
    push.await;
    tokio::time::timeout(Duration::from_secs(10), woken)
        .await
        .is_ok()
}

/// How many notification connections ("regent peers" sessions) the test's database has.
async fn peer_sessions(db: &tokio_postgres::Client) -> i64 {
    db.query_one(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'regent peers'
            AND datname = current_database()",
        &[],
    )
    .await
    .unwrap()
    .get(0)
}

/// Two brokers on one database, each having heard the other (a broker alone announces
/// nothing).
async fn two_in_view() -> (Broker, Broker) {
    let a = broker().await;
    let b = Broker::attach(&a.db_url).await;
    for _ in 0..200 {
        if [&a, &b].iter().all(|x| x.runtime().peers.others_in_view()) {
            return (a, b);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the brokers never heard each other's hello");
}

/// Waits until `b` answers `/health` with `healthy`.
async fn healthy(b: &Broker) {
    for _ in 0..200 {
        let (s, v) = b.get("/health").await;
        if s == StatusCode::OK && v["status"] == "healthy" {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the broker at {} never became healthy", b.url);
}

/// How many times `b`'s parked long-polls were woken `by` a wakeup or by their timer.
async fn rechecks(b: &Broker, by: &str) -> f64 {
    b.metric(&format!("regent_pop_rechecks_total{{by=\"{by}\"}}"))
        .await
}

/// Issue 15: two brokers started together know each other at once, not at the older one's
/// next hello round (up to 5 s later): the older one answers the newer one's hello. So a
/// push through B in the first second after both are healthy wakes a long-poll parked on A
/// through B's note, as it would a minute later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brokers_started_together_wake_each_other_from_the_first_second() {
    let a = broker().await;
    let b = Broker::attach(&a.db_url).await;
    healthy(&a).await;
    healthy(&b).await;
    let parked = park(&a, 10_000);
    while a.runtime().parked.is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Past the parked pop's rechecks at 100, 300 and 700 ms its next is at 1.5 s, so the
    // timer cannot answer it first (on a loaded machine) and pass for a wakeup; still well
    // inside the 5 s before A's next hello round.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let (woken, timed) = (rechecks(&a, "wakeup").await, rechecks(&a, "timer").await);

    let pushed = Instant::now();
    b.push("q", "p", &["m"]).await;
    let answer = parked.await.unwrap();
    let took = pushed.elapsed();

    assert_eq!(Broker::txids(&answer), ["m"]);
    let timer = rechecks(&a, "timer").await - timed;
    assert!(
        rechecks(&a, "wakeup").await > woken,
        "A's parked pop is woken by B's note, not by its timer (timer rechecks since the push: \
         {timer}, answered {took:?} after it)"
    );
    // Timed by A itself, from the message's append on B to its delivery on A: the wakeup's
    // path, without the test client's own scheduling on a busy machine.
    let within = a
        .metric("regent_first_delivery_seconds_bucket{le=\"0.1\"}")
        .await;
    assert_eq!(
        within, 1.0,
        "A delivers the message within 100 ms of its push through B (the test saw the \
         answer {took:?} after sending the push)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_through_one_broker_wakes_and_hints_pops_on_another() {
    let (a, b) = two_in_view().await;
    // Waited for, so that its note cannot be mistaken for the next one's.
    assert!(woken_by(&b, "q", "g", a.push("q", "p0", &["first"])).await);
    // B's group sweeps now, so the partition created below is one B can only learn of
    // from A's note (or its next full sweep, a second later).
    assert_eq!(
        Broker::txids(&b.pop("q", "consumerGroup=g&autoAck=true").await),
        ["first"]
    );

    assert!(
        woken_by(&b, "q", "g", a.push("q", "p-new", &["second"])).await,
        "a push through A wakes B's pops"
    );
    assert_eq!(
        Broker::txids(&b.pop("q", "consumerGroup=g&autoAck=true").await),
        ["second"],
        "B claims from the partition A created"
    );

    // A parked long-poll on B answers with a message pushed through A (the earlier pops
    // auto-acked, so nothing holds the partition).
    let parked = park(&b, 20_000);
    tokio::time::sleep(Duration::from_millis(200)).await;
    a.push("q", "p0", &["third"]).await;
    assert_eq!(Broker::txids(&parked.await.unwrap()), ["third"]);
}

/// A nack through A that leaves a message to retry wakes B's parked pops of that group: the
/// retry is B's to claim at once, not at its next recheck.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nack_through_one_broker_wakes_that_group_on_another() {
    let (a, b) = two_in_view().await;
    // Waited for, so that its note cannot be mistaken for the nack's.
    let pushed = a.push("q", "p", &["m"]);
    assert!(woken_by(&b, "q", "g", pushed).await);
    let popped = a.pop("q", "consumerGroup=g").await;
    assert_eq!(Broker::txids(&popped), ["m"]);
    let nack = a.ack_batch(
        Some("g"),
        serde_json::json!([{"transactionId": "m", "partitionId": popped["partitionId"],
            "leaseId": popped["leaseId"], "status": "failed"}]),
    );
    assert!(
        woken_by(&b, "q", "g", nack).await,
        "B's pops of g hear of the retry"
    );
    assert_eq!(Broker::txids(&b.pop("q", "consumerGroup=g").await), ["m"]);
}

/// The notification connection is a hint channel with its own life: killed by an operator
/// or a failover, it comes back and wakeups resume.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wakeups_resume_after_the_notification_connection_is_killed() {
    let (a, b) = two_in_view().await;
    let db = a.db().await;
    let peers_sessions = || peer_sessions(&db);
    for _ in 0..100 {
        if peers_sessions().await == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        peers_sessions().await,
        2,
        "one notification connection per broker"
    );
    db.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
          WHERE application_name = 'regent peers' AND datname = current_database()",
        &[],
    )
    .await
    .unwrap();
    let mut back = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if peers_sessions().await == 2 {
            back = true;
            break;
        }
    }
    assert!(back, "both brokers reconnect");
    assert!(
        woken_by(&b, "q", "g", a.push("q", "p", &["after"])).await,
        "a push through A wakes B again"
    );
}

/// `PEER_WAKEUPS=false` opens no notification connection and says no hello. A broker with
/// them on, started after it on the same database, is the yardstick: once its connection
/// is up, the first broker has had longer than that to open one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peer_wakeups_can_be_turned_off() {
    let off = crate::support::broker_with(|c| c.peer_wakeups = false).await;
    let on = Broker::attach(&off.db_url).await;
    let db = off.db().await;
    let sessions = || peer_sessions(&db);
    for _ in 0..100 {
        if sessions().await > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Past the first hello of `on`, which `off` would have answered with its own.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        sessions().await,
        1,
        "only the broker with peer wakeups listens"
    );
    let in_view = |b: &Broker| b.runtime().peers.others_in_view();
    assert!(!in_view(&on), "the other broker said no hello");
    assert!(!in_view(&off));
    off.push("q", "p", &["m"]).await;
    assert_eq!(Broker::txids(&off.pop("q", "").await), ["m"]);
}

/// A long-poll of group `g` on `q` parked on `broker` in a task of its own; its answer.
fn park(broker: &Broker, timeout_ms: u64) -> tokio::task::JoinHandle<serde_json::Value> {
    let (url, http) = (broker.url.clone(), broker.http.clone());
    tokio::spawn(async move {
        http.get(format!(
            "{url}/api/v1/pop/queue/q?wait=true&timeout={timeout_ms}&consumerGroup=g"
        ))
        .send()
        .await
        .unwrap()
        .json::<serde_json::Value>()
        .await
        .unwrap()
    })
}
