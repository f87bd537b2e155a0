//! The fleet's metrics (spec §13.6, §13.7): every broker's samples answered by any broker,
//! bucketed by the window's width; PostgreSQL's own statistics; the tenant's push buffer; and
//! the admin level of the fleet-wide routes.

use std::collections::BTreeSet;
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, TimeZone, Utc};

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::support::{authed_broker_with, broker_with, single_only, token, Broker};

/// Long enough that the background sampler never writes during a test: the tests sample
/// when they mean to.
const NEVER: u64 = 3_600_000;

async fn quiet() -> Broker {
    broker_with(|c| c.metrics_sample_interval = NEVER).await
}

fn port_of(b: &Broker) -> i64 {
    b.url.rsplit(':').next().unwrap().parse().unwrap()
}

fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Every sample of the database copied to each of `at`, the originals deleted.
async fn move_samples_to(b: &Broker, at: &[DateTime<Utc>]) {
    let db = b.db().await;
    let at = at.to_vec();
    db.execute(
        "INSERT INTO broker_samples
         SELECT (jsonb_populate_record(s, jsonb_build_object('sampled_at', t))).*
           FROM broker_samples s, unnest($1::timestamptz[]) t",
        &[&at],
    )
    .await
    .unwrap();
    db.execute(
        "DELETE FROM broker_samples WHERE sampled_at <> ALL ($1::timestamptz[])",
        &[&at],
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn two_brokers_on_one_database_both_answer_for_both() {
    let a = quiet().await;
    let b = Broker::attach_with(&a.db_url, |c| {
        c.db_pool_size = 4;
        c.metrics_sample_interval = NEVER;
    })
    .await;
    a.push("fleet-q", "p", &["x", "y", "z"]).await;
    a.sample_now().await;
    b.sample_now().await;
    let host = regent::memory::activity::hostname();
    for answering in [&a, &b] {
        let (s, v) = answering.get("/api/v1/analytics/system-metrics").await;
        assert_eq!(s, StatusCode::OK, "{v}");
        assert_eq!(
            (&v["replicaCount"], &v["bucketMinutes"]),
            (&json!(2), &json!(1))
        );
        let replicas = v["replicas"].as_array().unwrap();
        let ids: BTreeSet<&str> = replicas
            .iter()
            .map(|r| r["workerId"].as_str().unwrap())
            .collect();
        let want: BTreeSet<String> = [a.broker_id(), b.broker_id()].into();
        assert_eq!(
            ids,
            want.iter().map(String::as_str).collect(),
            "both brokers, whichever answers: {v}"
        );
        let mut points = 0;
        for r in replicas {
            let me = if r["workerId"] == json!(a.broker_id()) {
                &a
            } else {
                &b
            };
            let (pool, pushed) = if std::ptr::eq(me, &a) { (8, 3) } else { (4, 0) };
            assert_eq!(
                (&r["hostname"], &r["port"]),
                (&json!(host), &json!(port_of(me)))
            );
            let series = r["timeSeries"].as_array().unwrap();
            points += series.len();
            let last = &series.last().unwrap()["metrics"];
            assert!(
                series.iter().all(|p| p["sampleCount"].as_i64() >= Some(1)),
                "{r}"
            );
            assert!(
                last["memory"]["rss_bytes"]["last"].as_i64().unwrap() > 1_000_000,
                "{r}"
            );
            assert_eq!(last["database"]["pool_size"]["last"], json!(pool), "{r}");
            assert!(last["cpu"]["user_percent"]["avg"].is_number(), "{r}");
            assert!(last["runtime"]["wakeups"]["last"].is_i64(), "{r}");
            let sum: i64 = series
                .iter()
                .map(|p| p["metrics"]["messages"]["push"].as_i64().unwrap())
                .sum();
            assert_eq!(sum, pushed, "pushes through this broker: {r}");
        }
        assert_eq!(v["pointCount"], json!(points), "{v}");
    }
    // Narrowed to one broker, then to a host that is not there.
    let (_, v) = a
        .get(&format!(
            "/api/v1/analytics/system-metrics?workerId={}",
            b.broker_id()
        ))
        .await;
    assert_eq!(v["replicaCount"], json!(1), "{v}");
    assert_eq!(v["replicas"][0]["workerId"], json!(b.broker_id()));
    let (_, v) = a
        .get("/api/v1/analytics/system-metrics?hostname=no-such-host")
        .await;
    assert_eq!(
        (&v["replicaCount"], &v["pointCount"]),
        (&json!(0), &json!(0))
    );
}

#[tokio::test]
async fn buckets_widen_with_the_window_and_each_sample_falls_in_its_own() {
    let b = quiet().await;
    b.sample_now().await;
    // An instant three days back on a 6-hour boundary (and so on every narrower one), and
    // samples at known offsets from it.
    let six_hours = 6 * 3600;
    let back = Utc::now().timestamp() - 3 * 86_400;
    let t0 = Utc
        .timestamp_opt(back - back.rem_euclid(six_hours), 0)
        .unwrap();
    let at = |secs: i64| t0 + chrono::Duration::seconds(secs);
    move_samples_to(&b, &[at(10), at(70), at(130), at(20 * 60), at(90 * 60)]).await;
    let h = chrono::Duration::hours;
    let m = |n: i64| iso(t0 + chrono::Duration::minutes(n));
    // (window, bucket width, [(bucket start, samples)])
    type Buckets = Vec<(String, i64)>;
    let cases: Vec<(DateTime<Utc>, DateTime<Utc>, i64, Buckets)> = vec![
        (
            t0,
            t0 + h(1),
            1,
            vec![(m(0), 1), (m(1), 1), (m(2), 1), (m(20), 1)],
        ),
        (at(60), t0 + h(1), 1, vec![(m(1), 1), (m(2), 1), (m(20), 1)]),
        (t0, t0 + h(6), 5, vec![(m(0), 3), (m(20), 1), (m(90), 1)]),
        (t0, t0 + h(24), 15, vec![(m(0), 3), (m(15), 1), (m(90), 1)]),
        (t0, t0 + h(72), 60, vec![(m(0), 4), (m(60), 1)]),
        (t0, t0 + h(240), 360, vec![(m(0), 5)]),
    ];
    for (from, to, width, want) in cases {
        let q = format!("from={}&to={}", iso(from), iso(to));
        let (s, v) = b
            .get(&format!("/api/v1/analytics/system-metrics?{q}"))
            .await;
        assert_eq!(s, StatusCode::OK, "{v}");
        assert_eq!(v["bucketMinutes"], json!(width), "{q}: {v}");
        assert_eq!(v["timeRange"], json!({"from": iso(from), "to": iso(to)}));
        let got: Vec<(String, i64)> = v["replicas"][0]["timeSeries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let t = p["timestamp"].as_str().unwrap().to_string();
                (t, p["sampleCount"].as_i64().unwrap())
            })
            .collect();
        assert_eq!(got, want, "{q}");
        assert_eq!(v["pointCount"], json!(want.len()), "{q}");

        // The worker metrics bucket the same window the same way, newest first.
        let (s, v) = b
            .get(&format!("/api/v1/analytics/worker-metrics?{q}"))
            .await;
        assert_eq!(s, StatusCode::OK, "{v}");
        assert_eq!(v["bucketMinutes"], json!(width), "{q}: {v}");
        let got: Vec<(String, i64)> = v["timeSeries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let t = p["timestamp"].as_str().unwrap().to_string();
                (t, p["sampleCount"].as_i64().unwrap())
            })
            .collect();
        let mut newest_first = want.clone();
        newest_first.reverse();
        assert_eq!(got, newest_first, "{q}");
    }
    let (s, v) = b
        .get("/api/v1/analytics/system-metrics?from=2030-01-01T00:00:00Z&to=2029-01-01T00:00:00Z")
        .await;
    assert_eq!(
        (s, v),
        (
            StatusCode::BAD_REQUEST,
            json!({"error": "from must not be after to"})
        )
    );
    let (s, _) = b
        .get("/api/v1/analytics/worker-metrics?from=yesterday")
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn worker_metrics_count_what_the_fleet_did() {
    let b = quiet().await;
    b.push("work-q", "p", &["1", "2", "3"]).await;
    let popped = b.pop("work-q", "batch=2").await;
    b.ack_all(None, &popped).await;
    b.flush_series().await;
    b.sample_now().await;
    // A second sample counts only what happened since the first.
    b.push("work-q", "p", &["4"]).await;
    b.flush_series().await;
    b.sample_now().await;

    let (s, v) = b.get("/api/v1/analytics/worker-metrics").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    for key in [
        "timeRange",
        "bucketMinutes",
        "pointCount",
        "timeSeries",
        "workers",
        "queues",
        "summary",
    ] {
        assert!(v.get(key).is_some(), "{key} in {v}");
    }
    let summary = &v["summary"];
    assert_eq!(
        [
            &summary["totalPushMessages"],
            &summary["totalPopMessages"],
            &summary["totalAckMessages"],
            &summary["totalPushRequests"],
            &summary["totalPopRequests"],
            &summary["totalAckRequests"],
        ],
        [
            &json!(4),
            &json!(2),
            &json!(2),
            &json!(2),
            &json!(1),
            &json!(1)
        ],
        "{v}"
    );
    // What Regent does not measure is null, not zero.
    assert!(summary["totalDbErrors"].is_null() && summary["pendingMessages"].is_null());
    // Both samples in one minute's bucket, or one each when a minute began between them.
    let series = v["timeSeries"].as_array().unwrap();
    let total = |key: &str| series.iter().map(|p| p[key].as_i64().unwrap()).sum::<i64>();
    assert_eq!((total("pushMessages"), total("sampleCount")), (4, 2), "{v}");
    for point in series {
        assert_eq!(point["brokers"], json!(1), "{point}");
        let per_second = point["pushMessages"].as_f64().unwrap() / 60.0;
        let rounded = (per_second * 100.0).round() / 100.0;
        assert_eq!(
            point["pushPerSecond"],
            json!(rounded),
            "over a 1-minute bucket: {point}"
        );
        assert!(
            point.get("avgEventLoopLagMs").is_some_and(Value::is_null),
            "{point}"
        );
        assert!(point["dbConnections"].as_f64().unwrap() >= 0.0, "{point}");
    }

    let workers = v["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 1, "{v}");
    assert_eq!(workers[0]["workerId"], json!(b.broker_id()));
    assert_eq!(workers[0]["port"], json!(port_of(&b)));
    assert_eq!(
        workers[0]["messagesProcessed"],
        json!(6),
        "pushed + acked: {v}"
    );
    assert!(workers[0]["rssBytes"].as_i64().unwrap() > 1_000_000);

    assert_eq!(
        v["queues"],
        json!([{"queueName": "work-q", "popCount": 2, "pushCount": 4, "completedCount": 2,
                "failedCount": 0, "deadLetterCount": 0, "avgLagMs": null, "maxLagMs": null}]),
        "{v}"
    );
}

#[tokio::test]
async fn postgres_stats_are_the_servers_own_and_name_no_statement() {
    if single_only(
        "the statistics of the node the broker is connected to, whose tables hold \
                    every row only on one PostgreSQL (on Citus the coordinator's are empty shells)",
    )
    .await
    {
        return;
    }
    let b = quiet().await;
    b.push("pg-q", "p", &["1", "2"]).await;
    // A table past its autovacuum threshold (autovacuum off for it, so none clears it
    // meanwhile), and one with HOT updates; the backend exits, so its counts are reported.
    {
        let db = b.db().await;
        db.batch_execute(
            "CREATE TABLE scratch (x int) WITH (autovacuum_enabled = false);
             INSERT INTO scratch SELECT generate_series(1, 1000);
             ANALYZE scratch;
             DELETE FROM scratch;
             CREATE TABLE hot (x int, y int) WITH (autovacuum_enabled = false);
             INSERT INTO hot SELECT generate_series(1, 100), 0;
             UPDATE hot SET y = 1;",
        )
        .await
        .unwrap();
    }
    // A statement running long in another session, its text carrying data.
    let slow = b.db().await;
    let sleeping = tokio::spawn(async move {
        slow.query("SELECT 'secret-payload-text', pg_sleep(60)", &[])
            .await
            .map(|_| ())
    });
    tokio::time::sleep(Duration::from_millis(1800)).await;

    let mut v = Value::Null;
    for _ in 0..50 {
        let (s, got) = b.get("/api/v1/analytics/postgres-stats").await;
        assert_eq!(s, StatusCode::OK, "{got}");
        v = got;
        let listed = |key: &str, table: &str, field: &str, n: i64| {
            v[key]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["table"] == table && t[field] == n)
        };
        // Backends report their counts within a second or so of going idle.
        if listed("deadTuples", "scratch", "deadTuples", 1000)
            && listed("tableSizes", "segments", "rows", 1)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for key in [
        "timestamp",
        "database",
        "databaseCache",
        "tableCache",
        "indexCache",
        "cacheSummary",
        "deadTuples",
        "hotUpdates",
        "activeQueries",
        "autovacuumStatus",
        "bufferConfig",
        "bufferUsage",
        "tableSizes",
    ] {
        assert!(v.get(key).is_some(), "{key} in {v}");
    }
    let db_name = b.db_url.rsplit('/').next().unwrap();
    assert_eq!(v["database"], json!(db_name));
    let ratio = v["databaseCache"]["cacheHitRatio"].as_f64().unwrap();
    assert!((0.0..=100.0).contains(&ratio) && ratio > 50.0, "{v}");
    assert!(
        v["databaseCache"]["transactionsCommitted"]
            .as_i64()
            .unwrap()
            > 0
    );
    assert!(
        v["bufferConfig"]["sharedBuffersBytes"].as_i64().unwrap() >= 128 << 20,
        "{v}"
    );
    assert!(v["bufferConfig"]["sharedBuffersSize"].is_string(), "{v}");

    let sizes = v["tableSizes"].as_array().unwrap();
    assert!(sizes.len() <= 20);
    let segments = sizes
        .iter()
        .find(|t| t["table"] == "segments")
        .expect("segments listed");
    assert!(segments["totalBytes"].as_i64().unwrap() > 0, "{segments}");
    assert_eq!(
        segments["rows"],
        json!(1),
        "one push, one segment: {segments}"
    );

    let scratch = v["deadTuples"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"] == "scratch")
        .unwrap_or_else(|| panic!("scratch's dead tuples: {v}"));
    assert_eq!(
        (&scratch["deadTuples"], &scratch["deadPercentage"]),
        (&json!(1000), &json!(100.0))
    );
    let due = v["autovacuumStatus"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"] == "scratch")
        .unwrap_or_else(|| panic!("scratch past its threshold: {v}"));
    assert_eq!(
        (&due["vacuumThreshold"], &due["autovacuumEnabled"]),
        (&json!(250), &json!(false)),
        "50 + 0.2 × 1000 rows: {due}"
    );
    let hot = v["hotUpdates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"] == "hot")
        .unwrap_or_else(|| panic!("hot's updates: {v}"));
    assert_eq!(hot["totalUpdates"], json!(100), "{hot}");
    assert!(hot["hotUpdatePercentage"].as_f64().unwrap() > 0.0, "{hot}");

    // The sleeping session is listed by its first keyword; no statement text is.
    let active = v["activeQueries"].as_array().unwrap();
    assert!(
        active.iter().any(|q| q["queryKind"] == "SELECT"
            && q["state"] == "active"
            && q["duration"].as_f64().unwrap() >= 1.0
            && q["query"].is_null()),
        "{v}"
    );
    assert!(!v.to_string().contains("secret-payload"), "{v}");

    // What the shared buffers hold, once the database has pg_buffercache.
    assert_eq!(
        (&v["bufferUsage"], &v["bufferUsageAvailable"]),
        (&json!([]), &json!(false))
    );
    b.db()
        .await
        .batch_execute("CREATE EXTENSION pg_buffercache")
        .await
        .unwrap();
    let (_, v) = b.get("/api/v1/analytics/postgres-stats").await;
    assert_eq!(v["bufferUsageAvailable"], json!(true), "{v}");
    let usage = v["bufferUsage"].as_array().unwrap();
    assert!(!usage.is_empty() && usage.len() <= 20, "{v}");
    assert!(usage[0]["percentOfCache"].as_f64().unwrap() > 0.0, "{v}");
    let db = b.db().await;
    db.execute(
        "SELECT pg_cancel_backend(pid) FROM pg_stat_activity
          WHERE query LIKE '%secret-payload-text%' AND pid <> pg_backend_pid()",
        &[],
    )
    .await
    .unwrap();
    assert!(sleeping.await.unwrap().is_err(), "cancelled");
}

#[tokio::test]
async fn status_buffers_counts_the_tenants_buffered_pushes() {
    let b = quiet().await;
    let (s, v) = b.get("/api/v1/status/buffers").await;
    assert_eq!(
        (s, v),
        (
            StatusCode::OK,
            json!({"pending": 0, "failed": 0, "dbHealthy": true, "worker": 0})
        )
    );
    let (s, _) = b
        .post("/api/v1/system/maintenance", json!({"enabled": true}))
        .await;
    assert_eq!(s, StatusCode::OK);
    let (s, v) = b
        .post(
            "/api/v1/push",
            json!({"items": [{"queue": "held", "payload": 1}, {"queue": "held", "payload": 2}]}),
        )
        .await;
    assert_eq!(
        (s, &v[0]["status"]),
        (StatusCode::CREATED, &json!("buffered")),
        "{v}"
    );
    let (_, v) = b.get("/api/v1/status/buffers").await;
    assert_eq!(v["pending"], json!(2), "{v}");
}

#[tokio::test]
async fn samples_expire_in_bounded_batches_and_the_sampler_writes_and_expires_on_its_own() {
    let b = quiet().await;
    b.sample_now().await;
    let db = b.db().await;
    let old = "sampled_at < now() - interval '24 hours'";
    // 10,050 samples past the 24 hours kept, beside the fresh one.
    db.execute(
        "INSERT INTO broker_samples
         SELECT (jsonb_populate_record(s, jsonb_build_object(
                   'sampled_at', now() - interval '25 hours' - make_interval(secs => i)))).*
           FROM broker_samples s, generate_series(1, 10050) i",
        &[],
    )
    .await
    .unwrap();
    let count = |filter: &'static str| {
        let db = &db;
        async move {
            let sql = format!("SELECT count(*) FROM broker_samples WHERE {filter}");
            db.query_one(&sql, &[]).await.unwrap().get::<_, i64>(0)
        }
    };
    assert_eq!(b.expire_samples().await, 10_000, "one batch at most");
    assert_eq!(count(old).await, 50);
    assert_eq!(b.expire_samples().await, 50);
    assert_eq!(b.expire_samples().await, 0);
    assert_eq!(count("true").await, 1, "the fresh sample stays");

    // The background task samples every METRICS_SAMPLE_INTERVAL and expires as it goes.
    let fast = Broker::attach_with(&b.db_url, |c| c.metrics_sample_interval = 100).await;
    db.execute(
        "INSERT INTO broker_samples
         SELECT (jsonb_populate_record(s, jsonb_build_object(
                   'sampled_at', now() - interval '30 hours' - make_interval(secs => i)))).*
           FROM broker_samples s, generate_series(1, 100) i",
        &[],
    )
    .await
    .unwrap();
    let mine = format!("broker_id = '{}'", fast.broker_id());
    let mine: &'static str = Box::leak(mine.into_boxed_str());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while count(old).await > 0 || count(mine).await < 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the sampler did not run"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn the_fleets_figures_are_admin_only_and_the_buffer_is_the_tenants() {
    let b = authed_broker_with(|c| {
        c.metrics_sample_interval = NEVER;
    })
    .await;
    let call = |t: String, path: &'static str| {
        let b = &b;
        async move { b.request_as(Some(&t), Method::GET, path, None).await }
    };
    for path in [
        "/api/v1/analytics/system-metrics",
        "/api/v1/analytics/worker-metrics",
        "/api/v1/analytics/postgres-stats",
    ] {
        for role in ["read-only", "read-write"] {
            let (s, v) = call(token(role).tenant("acme").mint(), path).await;
            assert_eq!(
                (s, v),
                (
                    StatusCode::FORBIDDEN,
                    json!({"error": "Insufficient permissions"})
                ),
                "{path} with {role}"
            );
        }
        let (s, v) = call(token("admin").tenant("acme").mint(), path).await;
        assert_eq!(s, StatusCode::OK, "{path}: {v}");
    }
    let (s, v) = call(
        token("read-only").tenant("acme").mint(),
        "/api/v1/status/buffers",
    )
    .await;
    assert_eq!((s, &v["pending"]), (StatusCode::OK, &json!(0)), "{v}");

    // Acme's buffered push is acme's alone.
    let acme = token("admin").tenant("acme").mint();
    let (s, _) = b
        .request_as(
            Some(&acme),
            Method::POST,
            "/api/v1/system/maintenance",
            Some(r#"{"enabled": true}"#),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    let (s, v) = b
        .request_as(
            Some(&acme),
            Method::POST,
            "/api/v1/push",
            Some(r#"{"items": [{"queue": "acme-only", "payload": 1}]}"#),
        )
        .await;
    assert_eq!(
        (s, &v[0]["status"]),
        (StatusCode::CREATED, &json!("buffered")),
        "{v}"
    );
    let (_, v) = call(
        token("read-only").tenant("acme").mint(),
        "/api/v1/status/buffers",
    )
    .await;
    assert_eq!(v["pending"], json!(1), "{v}");
    let (_, v) = call(
        token("read-only").tenant("zenith").mint(),
        "/api/v1/status/buffers",
    )
    .await;
    assert_eq!(v["pending"], json!(0), "{v}");
}
