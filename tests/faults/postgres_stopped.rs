//! PostgreSQL stopped for 20 s under load, then started; the broker is not restarted. Meanwhile
//! every request is a 503 that says when to retry, and leases (5 s) run out: acks of
//! messages delivered before the outage are refused after it, and those messages redeliver.

use std::time::Duration;

use crate::harness::Case;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_down_for_20_s_under_load_is_503s_then_service_with_nothing_lost() {
    let mut case = Case::start("postgres_stopped", 1, Duration::from_secs(5), &[]).await;
    case.steady(Duration::from_secs(4)).await;
    case.cluster.shut_down().await;
    tokio::time::sleep(Duration::from_secs(20)).await;
    case.cluster
        .start_again()
        .await
        .expect("starting PostgreSQL");
    case.recovered().await;
    case.finish().await;
}
