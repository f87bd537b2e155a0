//! A few seconds of `regent bench` against a test broker: the generator works end to end and
//! its ledger finds every pushed message delivered. Not a performance test: no figure is
//! asserted.

use regent::bench::{run, AckMode, BenchArgs, Scenario};

use crate::support::{authed_broker, broker, token, Broker};

fn args(url: &str, scenario: Scenario) -> BenchArgs {
    BenchArgs {
        url: url.to_string(),
        pop_url: None,
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
        nack_every: 0,
        nack_backoff: 0,
        rate: 0.0,
        prefill: 500,
        window_ms: 1000,
        max_backlog: 10_000,
        timer_delay_ms: 1000,
        timer_batch: 20,
        pending: 0,
        drain_timeout: 20.0,
        token: None,
        pg_url: None,
        trace_slower_than: None,
        interval: None,
        json: false,
        quiet: true,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_scenarios_deliver_every_pushed_message() {
    let b = broker().await;
    let mut a = args(&b.url, Scenario::EndToEnd);
    a.interval = Some(0.5);
    let e2e = run(a).await.unwrap();
    let l = e2e.ledger.clone().expect("a ledger");
    assert!(e2e.pushed > 0 && l.pushed >= e2e.pushed, "{}", e2e.text());
    assert!(l.ok(), "{}", e2e.text());
    assert_eq!(l.delivered_unique, l.pushed);
    // The intervals cover the measured window and what it pushed.
    let iv = e2e.intervals.as_deref().expect("intervals");
    let seconds: f64 = iv.iter().map(|i| i.seconds).sum();
    assert!((seconds - e2e.seconds).abs() < 0.1, "{}", e2e.text());
    let pushed: u64 = iv.iter().map(|i| i.pushed).sum();
    assert!(pushed > 0 && pushed <= e2e.pushed, "{}", e2e.text());

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

/// `--nack-every`: the nacked batches come back (duplicate deliveries in the ledger) and
/// every message is still delivered. The queue's retry budget is large, so no batch nacked
/// again and again is dead-lettered (the ledger would count it lost).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_nacks_are_redelivered() {
    let b = broker().await;
    b.configure("nacks", serde_json::json!({"retryLimit": 1000}))
        .await;
    let mut nacking = args(&b.url, Scenario::EndToEnd);
    nacking.queue = Some("nacks".into());
    nacking.nack_every = 3;
    nacking.nack_backoff = 20;
    let r = run(nacking).await.unwrap();
    let l = r.ledger.clone().unwrap();
    assert!(r.pushed > 0 && l.ok(), "{}", r.text());
    assert_eq!(l.delivered_unique, l.pushed, "{}", r.text());
    assert!(l.duplicates > 0, "nacked batches redeliver: {}", r.text());
}

/// `--token` reaches every request: against a broker with authentication on, the run has no
/// errors and its ledger is whole; without the token every push fails, and the report says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_sends_its_token() {
    let b = authed_broker().await;
    let mut with = args(&b.url, Scenario::EndToEnd);
    with.token = Some(token("read-write").tenant("bench").mint());
    let r = run(with).await.unwrap();
    assert_eq!(r.errors, 0, "{}", r.text());
    assert!(
        r.pushed > 0 && r.ledger.clone().unwrap().ok(),
        "{}",
        r.text()
    );

    let mut without = args(&b.url, Scenario::Push);
    without.duration = 0.5;
    let r = run(without).await.unwrap();
    assert_eq!(r.pushed, 0, "{}", r.text());
    let first = r.first_error.clone().unwrap_or_default();
    assert!(
        first.contains("401") && first.contains("Authentication required"),
        "{first}"
    );
}

/// `--pop-url`: consumers on a second broker over the same database receive every message
/// pushed through the first; pointed at a broker on another database they receive none, so
/// the pops really went where `--pop-url` said.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_consumers_follow_pop_url() {
    let a = broker().await;
    let b = Broker::attach(&a.db_url).await;
    let mut cross = args(&a.url, Scenario::EndToEnd);
    cross.pop_url = Some(b.url.clone());
    let r = run(cross).await.unwrap();
    let l = r.ledger.clone().unwrap();
    assert!(r.pushed > 0 && l.ok(), "{}", r.text());
    assert_eq!(l.delivered_unique, l.pushed);
    assert_eq!(r.args.pop_url.as_deref(), Some(b.url.as_str()));
    assert!(r.text().contains(&format!("consumers on {}", b.url)));

    let elsewhere = broker().await;
    let mut wrong = args(&a.url, Scenario::EndToEnd);
    wrong.pop_url = Some(elsewhere.url.clone());
    wrong.duration = 0.5;
    wrong.drain_timeout = 0.5;
    let r = run(wrong).await.unwrap();
    let l = r.ledger.clone().unwrap();
    assert!(r.pushed > 0 && l.delivered_unique == 0, "{}", r.text());
}

/// The streams scenarios: every source message is in exactly one committed step, and every
/// (partition, window) reaches the sink exactly once with the sum pushed into it, through
/// `/streams/v1/cycle` (a state read and a cycle per popped partition, two partitions per
/// pop) and through `/api/v1/transaction`, with producers and on a pre-filled backlog.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_streams_emit_every_window_once() {
    let b = broker().await;
    let runs = [
        (Scenario::Streams, 2),
        (Scenario::StreamsTx, 2),
        (Scenario::Streams, 0),
    ];
    for (scenario, producers) in runs {
        let mut a = args(&b.url, scenario);
        a.producers = producers;
        // Several windows close in the run's 1.5 s, or in the few milliseconds the prefill's
        // 500 messages take.
        a.window_ms = if producers == 0 { 2 } else { 250 };
        a.pg_url = Some(b.db_url.clone());
        let r = run(a).await.unwrap();
        let l = r.ledger.clone().unwrap();
        let w = l.windows.clone().expect("a window ledger");
        let s = r.streams.clone().expect("the streams figures");
        assert!(l.ok() && r.errors == 0, "{}", r.text());
        assert_eq!(
            (l.delivered_unique, l.duplicates),
            (l.pushed, 0),
            "{}",
            r.text()
        );
        assert!(w.windows > 0 && w.exact == w.windows, "{}", r.text());
        assert!(
            l.pushed > 0 && s.cycles > 0 && s.windows > 0,
            "{}",
            r.text()
        );
        assert_eq!(r.pushed > 0, producers > 0, "{}", r.text());
        assert_eq!(
            s.state_reads > 0,
            scenario == Scenario::Streams,
            "{}",
            r.text()
        );
        assert!(s.commits_per_cycle.is_some_and(|c| c > 0.0), "{}", r.text());
    }
}

/// The timers scenario: every timer scheduled at the rate is delivered exactly once, not
/// before its `deliverAt`, beside pending timers loaded first (still pending afterwards), and
/// the broker's lateness histogram counted the fires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_timers_deliver_each_timer_once() {
    let b = broker().await;
    let mut a = args(&b.url, Scenario::Timers);
    a.rate = 200.0;
    a.timer_delay_ms = 300;
    a.timer_batch = 10;
    a.partitions = 2;
    a.pending = 2_500;
    let r = run(a).await.unwrap();
    let t = r.timers.clone().expect("the timer figures");
    assert!(t.ok() && r.errors == 0, "{}", r.text());
    assert!(r.ledger.is_none(), "{}", r.text());
    // 200/s for 1.5 s, in requests of 10 from two producers.
    assert!(
        (200..=320).contains(&t.scheduled),
        "{} scheduled: {}",
        t.scheduled,
        r.text()
    );
    assert_eq!((t.delivered, t.missing), (t.scheduled, 0), "{}", r.text());
    assert_eq!(t.lateness.count, t.scheduled, "{}", r.text());
    assert_eq!(r.end_to_end_latency.count, t.scheduled, "{}", r.text());
    assert!(t.schedule_latency.count > 0, "{}", r.text());
    assert_eq!(t.pending_loaded, 2_500, "{}", r.text());
    assert_eq!(t.pending_at_start, Some(2_500), "{}", r.text());
    let broker = t.broker_lateness.clone().expect("the broker's histogram");
    assert_eq!(broker.fired, t.scheduled, "{}", r.text());
    let pending: i64 = b
        .db()
        .await
        .query_one("SELECT count(*) FROM timers", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(pending, 2_500, "the pending timers are still pending");
    assert!(r.text().contains("timers OK"), "{}", r.text());
}
