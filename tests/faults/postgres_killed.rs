//! The postmaster SIGKILLed under load (its backends exit when they notice; the next start
//! runs crash recovery); the broker is not restarted. Whatever was committed before the kill
//! survives recovery, so every acknowledged push is still delivered.

use std::time::Duration;

use crate::harness::Case;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_crash_under_load_loses_nothing_acknowledged() {
    let mut case = Case::start("postgres_killed", 1, Duration::from_secs(5), &[]).await;
    case.steady(Duration::from_secs(4)).await;
    case.cluster.kill_postmaster().await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    case.cluster
        .start_again()
        .await
        .expect("starting PostgreSQL (crash recovery)");
    case.recovered().await;
    case.finish().await;
}
