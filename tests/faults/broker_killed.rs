//! The broker SIGKILLed under load and started again on the same database: what it had
//! acknowledged is in PostgreSQL; what it had not, the clients push again and it dedups.

use std::time::Duration;

use crate::harness::Case;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_killed_under_load_and_restarted_loses_nothing_it_acknowledged() {
    let mut case = Case::start("broker_killed", 1, Duration::from_secs(5), &[]).await;
    case.steady(Duration::from_secs(4)).await;
    case.brokers[0].kill().await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    case.brokers[0].restart(&[]).await;
    case.recovered().await;
    case.finish().await;
}
