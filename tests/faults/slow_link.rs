//! A slow, lossy link to PostgreSQL (issue 36): every byte between the broker and the
//! database delayed 10 ms each way, and one chunk in 25 per direction held back another
//! 200 ms, as a lost TCP segment is until its retransmission (`harness::slow_link`; `tc
//! netem` is not on the test machines). Service slows with the link and nothing fails: no 503,
//! no transport error, no other 5xx, every acknowledged push delivered, the ledger clean.
//! What the link costs in rate and latency is printed, not asserted (timing is for benches).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use regent::private_pg::PrivateCluster;

use crate::harness::broker::Broker;
use crate::harness::slow_link::{Link, SlowLink};
use crate::harness::Case;

const LINK: Link = Link {
    delay: Duration::from_millis(10),
    lose_every: 25,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_lossy_database_link_slows_service_and_fails_nothing() {
    let turn = Case::turn().await;
    let started = Instant::now();
    let cluster = PrivateCluster::start(None)
        .await
        .expect("a private cluster");
    let upstream = SocketAddr::from(([127, 0, 0, 1], cluster.port()));
    let link = SlowLink::start(upstream, LINK).await;
    let db_url = format!("postgres://postgres@127.0.0.1:{}/postgres", link.port);
    let log = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("faults-slow_link.log");
    let broker = Broker::serve(&db_url, &[], log).await;
    let lease = Duration::from_secs(10);
    let mut case = Case::run("slow_link", cluster, vec![broker], lease, turn, started).await;
    case.calm();
    let before = case.ledger.acknowledged();
    let period = Duration::from_secs(8);
    case.steady(period).await;
    let rate = (case.ledger.acknowledged() - before) as f64 / period.as_secs_f64();
    println!(
        "slow_link: {:?} each way, one chunk in {} held {:?} more: {rate:.0} pushes acknowledged/s",
        LINK.delay,
        LINK.lose_every,
        Duration::from_millis(200)
    );
    case.finish().await;
    drop(link);
}
