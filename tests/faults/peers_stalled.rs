//! Wakeups between brokers lost (issue 36's broker-to-broker cut): two brokers on one
//! database, producers and consumers spread over both, and the connection that carries
//! their wakeups to each other (one per broker, `regent peers`: LISTEN and `pg_notify`)
//! silenced for 8 s by stopping its PostgreSQL backend (SIGSTOP): its socket stays open and
//! nothing on it answers, as across a link that drops packets. Brokers talk to each other
//! only through PostgreSQL, so this is the cut between them. A pop parked on one broker then
//! hears nothing of the other's pushes and finds them on its recheck timer (at most a second
//! later); no request may fail or wait on the silent connection, and nothing is lost.

use std::time::{Duration, Instant};

use crate::harness::{database, Case};

const SILENT: Duration = Duration::from_secs(8);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silenced_wakeups_between_brokers_fail_nothing_and_lose_nothing() {
    let mut case = Case::start("peers_stalled", 2, Duration::from_secs(5), &[]).await;
    case.calm();
    case.steady(Duration::from_secs(3)).await;

    let db = database(&case.cluster.url()).await;
    let peers = peer_backends(&db).await;
    for &pid in &peers {
        signal(pid, libc::SIGSTOP);
    }
    let before = case.ledger.acknowledged();
    let silent = Instant::now();
    tokio::time::sleep(SILENT).await;
    let during = case.ledger.acknowledged() - before;
    for &pid in &peers {
        signal(pid, libc::SIGCONT);
    }
    println!(
        "peers_stalled: {} wakeup connections silent {:.1} s; {during} pushes acknowledged meanwhile",
        peers.len(),
        silent.elapsed().as_secs_f64()
    );
    assert!(
        during > 100,
        "service went on while the wakeups were silent"
    );
    case.finish().await;
}

/// The backends of both brokers' wakeup connections (10 s at most for both to be open).
async fn peer_backends(db: &tokio_postgres::Client) -> Vec<i32> {
    let give_up = Instant::now() + Duration::from_secs(10);
    loop {
        let pids: Vec<i32> = db
            .query(
                "SELECT pid FROM pg_stat_activity WHERE application_name = 'regent peers'",
                &[],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        if pids.len() == 2 {
            return pids;
        }
        assert!(Instant::now() < give_up, "two wakeup connections: {pids:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn signal(pid: i32, sig: libc::c_int) {
    // SAFETY: kill(2) with a pid read from pg_stat_activity; no memory is involved.
    let r = unsafe { libc::kill(pid, sig) };
    assert_eq!(
        r,
        0,
        "kill({pid}, {sig}): {}",
        std::io::Error::last_os_error()
    );
}
