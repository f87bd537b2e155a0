//! What bounds the broker's sockets (issue 15): a connection that does not send a whole
//! request header within `HTTP_HEADER_TIMEOUT_MS`, after it opened or after its last answer,
//! is closed (half-sent headers, idle keep-alives), while a request in flight (a long-poll)
//! runs its course; and at most `HTTP_MAX_CONNECTIONS` are served at once, the next waiting
//! until one closes.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{broker_with, Broker};

async fn connect(b: &Broker) -> TcpStream {
    TcpStream::connect(b.url.trim_start_matches("http://"))
        .await
        .unwrap()
}

/// Reads until the peer closes (or `limit` passes): the bytes read and whether it closed.
async fn until_closed(s: &mut TcpStream, limit: Duration) -> (Vec<u8>, bool) {
    let mut got = Vec::new();
    let deadline = Instant::now() + limit;
    let mut buf = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (got, true),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_) => return (got, false),
        }
    }
}

const HEALTH: &[u8] = b"GET /health HTTP/1.1\r\nHost: regent\r\n\r\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_sent_headers_and_idle_keep_alives_are_closed() {
    let b = broker_with(|c| c.http_header_timeout_ms = 300).await;
    // Half a header, then nothing.
    let mut half = connect(&b).await;
    half.write_all(b"GET /health HTTP/1.1\r\nHost: regent\r\n")
        .await
        .unwrap();
    let (_, closed) = until_closed(&mut half, Duration::from_secs(5)).await;
    assert!(closed, "a half-sent header holds its socket");
    // A whole request answered, then the connection idles.
    let mut idle = connect(&b).await;
    idle.write_all(HEALTH).await.unwrap();
    let (got, closed) = until_closed(&mut idle, Duration::from_secs(5)).await;
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(closed, "an idle keep-alive holds its socket");
    // Opened and never used.
    let mut silent = connect(&b).await;
    let (_, closed) = until_closed(&mut silent, Duration::from_secs(5)).await;
    assert!(closed, "a silent connection holds its socket");
}

/// The header timeout runs only while a connection waits for a header: a long-poll parked
/// for five times that answers normally, and keep-alive requests in a row are served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_in_flight_is_not_cut_by_the_header_timeout() {
    let b = broker_with(|c| c.http_header_timeout_ms = 300).await;
    let started = Instant::now();
    let (s, v) = b
        .get("/api/v1/pop/queue/nothing?wait=true&timeout=1500")
        .await;
    assert!(s.is_success(), "{s} {v}");
    assert!(started.elapsed() >= Duration::from_millis(1400));
    let mut conn = connect(&b).await;
    for _ in 0..3 {
        conn.write_all(HEALTH).await.unwrap();
        let mut buf = [0u8; 1024];
        let n = conn.read(&mut buf).await.unwrap();
        assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// With two connections held open, a third is not served until one of them closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_maximum_wait_for_a_slot() {
    let b = broker_with(|c| c.http_max_connections = 2).await;
    let mut first = connect(&b).await;
    first.write_all(HEALTH).await.unwrap();
    let mut buf = [0u8; 1024];
    assert!(first.read(&mut buf).await.unwrap() > 0);
    let second = connect(&b).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut third = connect(&b).await;
    third.write_all(HEALTH).await.unwrap();
    let waited = tokio::time::timeout(Duration::from_millis(700), third.read(&mut buf)).await;
    assert!(
        waited.is_err(),
        "the third connection was served beside two others"
    );
    drop(first);
    let n = tokio::time::timeout(Duration::from_secs(5), third.read(&mut buf))
        .await
        .expect("served once a slot is free")
        .unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"), "{:?}", &buf[..n]);
    drop(second);
}
