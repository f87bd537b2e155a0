//! The command line's contract (issue 50): each documented exit code against its cases, no
//! panic on a closed pipe, retries that say so, and the names and defaults a new user tries
//! first (a scheme-less `--server`, global flags before the subcommand, a token that works,
//! a stream by its name, a queue that does not exist).

use std::time::Duration;

use base64::Engine;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::cli::{command, config_file, run, run_at, Run};
use crate::support::*;

fn no_panic(r: &Run, what: &str) {
    assert!(
        !r.err.contains("panicked") && r.code != 101,
        "{what}: {} {}",
        r.code,
        r.err
    );
}

/// 0 done, 1 the user's mistake (a typo or a bad value included: clap's own 2 would say "no
/// broker"), 2 no broker, 3 refused token, 4 nothing to do.
#[tokio::test]
async fn every_documented_exit_code_has_its_cases() {
    let b = broker().await;
    let usage: &[&[&str]] = &[
        &["status", "--bogus"],
        &["status", "-o", "xml"],
        &["kv", "list", "counters"],
        &["--context", "prod", "status"],
        &["nosuchcommand"],
        &["pop"],
    ];
    for args in usage {
        let r = run(&b, args).await;
        assert_eq!(r.code, 1, "{args:?}: {}", r.err);
        assert!(r.err.contains("error"), "{args:?} says why: {}", r.err);
        no_panic(&r, &format!("{args:?}"));
    }
    let r = run(&b, &["--context", "prod", "status"]).await;
    assert!(r.err.contains("no context named \"prod\""), "{}", r.err);
    for args in [&["--help"][..], &["status", "--help"], &["--version"]] {
        let r = run(&b, args).await;
        assert_eq!(r.code, 0, "{args:?}: {}", r.err);
        assert!(!r.out.is_empty(), "{args:?}");
    }
    assert_eq!(run(&b, &["ping"]).await.code, 0);
    b.push("codes", "p", &["c1"]).await;
    assert_eq!(run(&b, &["pop", "codes", "--cg", "x"]).await.code, 0);
    assert_eq!(run(&b, &["pop", "codes", "--cg", "x"]).await.code, 4);
    let closed = format!("http://127.0.0.1:{}", free_port());
    assert_eq!(
        run_at(&closed, &config_file(), &["status"], "").await.code,
        2
    );
    let authed = authed_broker().await;
    let r = run_at(&authed.url, &config_file(), &["status"], "").await;
    assert_eq!(r.code, 3, "{}", r.err);
}

/// A reader that stops reading (`regent completion bash | head -5`) ends the command quietly:
/// stdout is a pipe whose reading end is closed before the command starts, so every write
/// fails at once.
#[tokio::test]
async fn no_command_panics_on_a_closed_pipe() {
    let b = broker().await;
    b.push("piped", "p", &["m1", "m2"]).await;
    let commands: &[&[&str]] = &[
        &["completion", "bash"],
        &["ping"],
        &["ping", "-o", "json"],
        &["status"],
        &["status", "-o", "json"],
        &["queue", "list"],
        &["queue", "list", "-o", "ndjson"],
        &["tail", "piped"],
        &["cg", "list", "-o", "yaml"],
        &["config", "get-contexts"],
        &["token", "--secret", "s3cret"],
    ];
    for args in commands {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let mut c = command(&b.url, &config_file(), args);
        c.stdout(writer);
        let out = tokio::time::timeout(Duration::from_secs(60), c.output())
            .await
            .expect("ends")
            .unwrap();
        let r = Run {
            code: out.status.code().unwrap_or(-1),
            out: String::new(),
            err: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        no_panic(&r, &format!("{args:?}"));
        assert!(
            r.code == 0 || r.code == 4,
            "{args:?} ends quietly: {}",
            r.err
        );
        assert!(r.err.is_empty(), "{args:?}: {}", r.err);
    }
}

/// An HTTP server that answers every request 503 with `Retry-After: 0`.
async fn always_503() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let (mut s, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf).await;
                let body = r#"{"error":"Database unavailable"}"#;
                let head = format!(
                    "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\n\
                     Content-Type: application/json\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n",
                    body.len()
                );
                let _ = s.write_all(head.as_bytes()).await;
                let _ = s.write_all(body.as_bytes()).await;
            });
        }
    });
    url
}

/// `ping` asks once: nothing listening is an answer at once, with no retry. Other commands
/// retry a 503 and say so on stderr each time, then fail with the broker's text.
#[tokio::test]
async fn ping_asks_once_and_retries_say_so() {
    let closed = format!("http://127.0.0.1:{}", free_port());
    let r = run_at(&closed, &config_file(), &["ping"], "").await;
    assert_eq!(r.code, 2, "{}", r.err);
    assert!(
        !r.err.contains("retrying") && r.err.to_lowercase().contains("connection refused"),
        "{}",
        r.err
    );

    let url = always_503().await;
    let r = run_at(&url, &config_file(), &["status"], "").await;
    assert_eq!(r.code, 2, "{}", r.err);
    let retries: Vec<&str> = r.err.lines().filter(|l| l.contains("retrying")).collect();
    assert_eq!(retries.len(), 5, "{}", r.err);
    assert!(
        retries[0].contains("503 from the broker, retrying in 0 s (2/6)"),
        "{}",
        r.err
    );
    assert!(r.err.contains("503: Database unavailable"), "{}", r.err);
    // The broker down: refused connections are retried the same way, and said so.
    let r = run_at(&closed, &config_file(), &["status"], "").await;
    assert_eq!(r.code, 2, "{}", r.err);
    assert!(
        r.err.contains("connection refused, retrying in 1 s (2/6)"),
        "{}",
        r.err
    );
}

/// The claims of a token, unverified.
fn claims(token: &str) -> Value {
    let body = token.split('.').nth(1).expect("a JWT");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(body)
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// `regent token` without `--tenant` mints a token for the `default` tenant (where `regent
/// dev`'s data lives), which the broker accepts.
#[tokio::test]
async fn a_token_made_without_a_tenant_works() {
    let b = authed_broker().await;
    let mut c = command(&b.url, &config_file(), &["token", "--role", "admin"]);
    c.env("JWT_SECRET", SECRET);
    let out = c.output().await.unwrap();
    assert!(out.status.success(), "{out:?}");
    let token = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert_eq!(claims(&token)["tenant"], "default");
    let (s, v) = b
        .request_as(
            Some(&token),
            reqwest::Method::GET,
            "/api/v1/resources/queues",
            None,
        )
        .await;
    assert_eq!(s, reqwest::StatusCode::OK, "{v}");
    let help = run(&b, &["token", "--help"]).await;
    assert!(help.out.contains("default"), "--help says so: {}", help.out);
}

/// `--server host:port` means http://host:port; the connection flags may come before the
/// subcommand (as kubectl's do); `https://` to a plain-HTTP broker says so.
#[tokio::test]
async fn server_addresses_and_global_flags_as_users_write_them() {
    let b = broker().await;
    let bare = b.url.trim_start_matches("http://").to_string();
    let cfg = config_file();
    let r = run_at("", &cfg, &["ping", "--server", &bare], "").await;
    assert_eq!(r.code, 0, "{}", r.err);
    let r = run_at("", &cfg, &["--server", &bare, "-o", "json", "ping"], "").await;
    assert_eq!(
        (r.code, r.json()["status"].clone()),
        (0, json!("healthy")),
        "{}",
        r.err
    );
    let r = run_at(
        "",
        &cfg,
        &["-o", "json", "queue", "list", "--server", &bare],
        "",
    )
    .await;
    assert_eq!(
        (r.code, r.json()),
        (0, json!([])),
        "no queues yet: {}",
        r.err
    );
    let r = run_at("", &cfg, &["--server", &bare, "serve"], "").await;
    assert_eq!(r.code, 1, "serve takes no connection flags: {}", r.err);

    let https = b.url.replace("http://", "https://");
    let r = run_at(&https, &cfg, &["ping"], "").await;
    assert_eq!(r.code, 2, "{}", r.err);
    assert!(
        r.err
            .contains("the broker answered plain HTTP; use http://"),
        "{}",
        r.err
    );
}

/// `tail` of a queue that does not exist is the user's mistake (1), said so; of one that is
/// empty, nothing to do (4). A stream query is named by its name as well as its id.
#[tokio::test]
async fn a_missing_queue_is_an_error_and_a_stream_is_found_by_name() {
    let b = broker().await;
    let r = run(&b, &["tail", "nosuchqueue"]).await;
    assert_eq!(r.code, 1, "{}", r.err);
    assert!(r.err.contains("nosuchqueue"), "{}", r.err);
    b.configure("emptyq", json!({})).await;
    assert_eq!(run(&b, &["tail", "emptyq"]).await.code, 4);

    b.push("clicks", "p", &["k1"]).await;
    let (s, v) = b
        .post(
            "/streams/v1/queries",
            json!({"name": "clicks-per-second", "source_queue": "clicks",
                   "config_hash": "h1"}),
        )
        .await;
    assert!(s.is_success(), "{v}");
    let r = run(
        &b,
        &["stream", "partitions", "clicks-per-second", "-o", "json"],
    )
    .await;
    assert!(r.code == 0 || r.code == 4, "{} {}", r.out, r.err);
    let (s, v) = b
        .get("/streams/v1/queries/clicks-per-second/partitions")
        .await;
    assert_eq!(s, reqwest::StatusCode::OK, "{v}");
    assert_eq!(v["query"]["name"], "clicks-per-second", "{v}");
    // A name no query can have is not found, whatever bytes it holds (a NUL never reaches
    // PostgreSQL, which refuses it in text).
    for key in ["nosuch", "a%00b", "%FF"] {
        let (s, v) = b
            .get(&format!("/streams/v1/queries/{key}/partitions"))
            .await;
        assert!(
            s == reqwest::StatusCode::NOT_FOUND || s == reqwest::StatusCode::BAD_REQUEST,
            "{key}: {s} {v}"
        );
    }
}

/// `get-contexts` marks the current context with `*`; deleting the current context says what
/// the command line talks to next.
#[tokio::test]
async fn contexts_mark_the_current_one_and_deleting_it_says_what_is_next() {
    let b = broker().await;
    let cfg = config_file();
    for (name, server) in [("prod", "http://prod:6632"), ("dev", b.url.as_str())] {
        let r = run_at(
            "",
            &cfg,
            &["config", "set-context", name, "--server", server],
            "",
        )
        .await;
        assert_eq!(r.code, 0, "{}", r.err);
    }
    let r = run_at("", &cfg, &["config", "get-contexts", "-o", "table"], "").await;
    let prod = r
        .out
        .lines()
        .find(|l| l.contains("prod"))
        .unwrap_or_default();
    let dev = r
        .out
        .lines()
        .find(|l| l.contains("dev"))
        .unwrap_or_default();
    assert!(
        prod.trim_start().starts_with('*') && !dev.contains('*'),
        "{}",
        r.out
    );
    let mut c = command("", &cfg, &["config", "delete-context", "prod"]);
    c.env_remove("REGENT_SERVER");
    let out = c.output().await.unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("no current context") && err.contains("http://127.0.0.1:6632"),
        "{err}"
    );
}

/// One scenario, every view of it agreeing (issue 50, item 2): two messages, one of them
/// leased. `status` prints whole rates and seconds and says "1 queue"; `queue describe`'s
/// header is the sum of its rows, says that processing is part of pending, and has the
/// OLDEST column docs/cli.md promises; `messages list` shows one pending and one processing.
#[tokio::test]
async fn the_views_of_one_scenario_agree() {
    let b = broker().await;
    b.push("agree", "p1", &["a1", "a2"]).await;
    let leased = b.pop("agree", "batch=1").await;
    assert_eq!(Broker::txids(&leased), ["a1"]);
    b.refresh_stats().await;

    let r = run(&b, &["status", "-o", "table"]).await;
    assert_eq!(r.code, 0, "{}", r.err);
    let head = r.out.lines().next().unwrap_or_default();
    assert!(head.contains(": 1 queue, 1 partition;"), "{head}");
    assert!(
        head.contains("messages 2 (2 pending, 1 of them processing, 0 dead letters)"),
        "{head}"
    );
    for figure in head
        .split(|c: char| c.is_whitespace() || c == '/')
        .filter(|w| w.contains('.'))
    {
        let decimals = figure.split('.').nth(1).unwrap_or("");
        assert!(
            decimals
                .trim_end_matches(|c: char| !c.is_ascii_digit())
                .len()
                <= 1,
            "{figure} in {head}"
        );
    }

    let r = run(&b, &["queue", "describe", "agree", "-o", "table"]).await;
    assert_eq!(r.code, 0, "{}", r.err);
    let mut lines = r.out.lines();
    let head = lines.next().unwrap_or_default();
    assert!(
        head.contains("2 messages, 2 pending (1 of them processing)"),
        "{}",
        r.out
    );
    let header = lines.next().unwrap_or_default();
    assert!(
        header.contains("OLDEST") && header.contains("OF WHICH PROCESSING"),
        "{header}"
    );
    let row: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(&row[..4], ["p1", "2", "2", "1"], "{}", r.out);

    // The group list says how many messages each group is behind, as `lag` does: queue mode
    // has both messages still to read (one of them leased).
    let r = run(&b, &["cg", "list", "-o", "table"]).await;
    assert_eq!(r.code, 0, "{}", r.err);
    let mut lines = r.out.lines();
    let header: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    let row: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    let at = header
        .iter()
        .position(|h| *h == "MESSAGES BEHIND")
        .expect("the column");
    assert_eq!(row.get(at), Some(&"2"), "{}", r.out);

    // A group's partitions show what the broker keeps (messages consumed), never a column
    // that is always empty (Regent keeps no time of the last consumption).
    let r = run(&b, &["cg", "describe", "__QUEUE_MODE__", "-o", "table"]).await;
    assert_eq!(r.code, 0, "{}", r.err);
    let header = r.out.lines().next().unwrap_or_default();
    assert!(
        header.contains("CONSUMED") && !header.contains("LAST CONSUMED"),
        "{}",
        r.out
    );

    let r = run(&b, &["messages", "list", "--queue", "agree", "-o", "json"]).await;
    assert_eq!(r.code, 0, "{}", r.err);
    let mut statuses: Vec<String> = r
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["status"].as_str().unwrap_or("?").to_string())
        .collect();
    statuses.sort();
    assert_eq!(statuses, ["pending", "processing"], "{}", r.out);
}

/// A replay that moves nothing says why (the README's replay, on a group that has not popped
/// yet): exit 4 and "group billing has no cursors on orders".
#[tokio::test]
async fn a_replay_of_a_group_without_cursors_says_so() {
    let b = broker().await;
    b.push("orders", "p", &["o1"]).await;
    let r = run(
        &b,
        &["replay", "orders", "--cg", "billing", "--to", "15m ago"],
    )
    .await;
    assert_eq!(r.code, 4, "{} {}", r.out, r.err);
    assert!(
        r.err.contains("group \"billing\" has no cursors on orders"),
        "{}",
        r.err
    );
    b.pop("orders", "consumerGroup=billing&autoAck=true").await;
    let r = run(
        &b,
        &["replay", "orders", "--cg", "billing", "--to", "15m ago"],
    )
    .await;
    assert_eq!(r.code, 0, "{} {}", r.out, r.err);
    assert!(!r.err.contains("no cursors"), "{}", r.err);
}
