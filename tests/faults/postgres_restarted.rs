//! PostgreSQL restarted (`pg_ctl restart -m fast`) under load; the broker is not restarted:
//! its pool's connections are cut, and it must serve again on new ones.

use std::time::Duration;

use crate::harness::Case;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_restart_under_load_loses_nothing_and_the_broker_serves_again() {
    let mut case = Case::start("postgres_restarted", 1, Duration::from_secs(5), &[]).await;
    case.steady(Duration::from_secs(4)).await;
    case.cluster
        .restart_fast()
        .await
        .expect("restarting PostgreSQL");
    case.recovered().await;
    case.finish().await;
}
