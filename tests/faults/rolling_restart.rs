//! A rolling restart (issue 36): three brokers on one database behind clients that spread
//! their requests over all three, as Queen's clients do with several URLs; each broker in
//! turn is stopped with SIGTERM, as an orchestrator stops a pod, and started again. Nothing
//! acknowledged is lost, every redelivery has a reason, no lease stays stuck (the drain
//! delivers everything), and no answer is an error other than a 503 with `Retry-After`,
//! which the clients retry.

use std::time::Duration;

use crate::harness::Case;

/// Shorter than the default 20 s, so a restart takes seconds; what it cuts off is answered
/// 503 with `Retry-After`, as at the default.
const GRACE: &str = "5";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_brokers_restarted_in_turn_lose_nothing_and_answer_only_retryable_503s() {
    let env = [("SHUTDOWN_GRACE_SECONDS", GRACE)];
    let mut case = Case::start("rolling_restart", 3, Duration::from_secs(5), &env).await;
    case.steady(Duration::from_secs(3)).await;
    for k in 0..case.brokers.len() {
        case.brokers[k].terminate(Duration::from_secs(15)).await;
        case.brokers[k].restart(&env).await;
        // The others served meanwhile; the restarted one serves again before the next stops.
        case.steady(Duration::from_secs(2)).await;
    }
    case.recovered().await;
    case.finish().await;
}
