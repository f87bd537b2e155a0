//! A few seconds of `regent bench` against a test broker: the generator works end to end and
//! its ledger finds every pushed message delivered. Not a performance test: no figure is
//! asserted.

use regent::bench::{run, AckMode, BenchArgs, Scenario};

use crate::support::broker;

fn args(url: &str, scenario: Scenario) -> BenchArgs {
    BenchArgs {
        url: url.to_string(),
        scenario,
        queue: None,
        producers: 2,
        consumers: 2,
        push_batch: 20,
        pop_batch: 50,
        pop_partitions: 2,
        payload: 64,
        partitions: 5,
        groups: None,
        duration: 1.5,
        ack: AckMode::Explicit,
        rate: 0.0,
        prefill: 500,
        drain_timeout: 20.0,
        pg_url: None,
        json: false,
        quiet: true,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_scenarios_deliver_every_pushed_message() {
    let b = broker().await;
    let e2e = run(args(&b.url, Scenario::EndToEnd)).await.unwrap();
    let l = e2e.ledger.clone().expect("a ledger");
    assert!(e2e.pushed > 0 && l.pushed >= e2e.pushed, "{}", e2e.text());
    assert!(l.ok(), "{}", e2e.text());
    assert_eq!(l.delivered_unique, l.pushed);

    let mut fan = args(&b.url, Scenario::FanOut);
    fan.groups = Some(3);
    fan.ack = AckMode::Auto;
    let r = run(fan).await.unwrap();
    let l = r.ledger.clone().unwrap();
    assert!(l.ok(), "{}", r.text());
    // Every group received every message: the ledger sums the three groups.
    assert_eq!(l.delivered_unique, l.pushed);
    assert_eq!(r.groups, 3);

    let mut open_loop = args(&b.url, Scenario::EndToEnd);
    open_loop.rate = 400.0;
    let r = run(open_loop).await.unwrap();
    assert!(r.ledger.clone().unwrap().ok(), "{}", r.text());
    assert!(
        r.pushed <= 800,
        "an open loop at 400 msg/s for 1.5 s: {}",
        r.text()
    );

    let r = run(args(&b.url, Scenario::PopAck)).await.unwrap();
    let l = r.ledger.clone().unwrap();
    assert!(l.ok() && l.pushed == 500, "{}", r.text());
}
