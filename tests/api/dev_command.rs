//! `regent dev`, the quick start's first command, as a user runs it: a private PostgreSQL,
//! a serving broker, and a clean stop on SIGTERM that takes the private PostgreSQL with it.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

#[tokio::test]
async fn dev_serves_with_a_private_postgres_and_stops_cleanly() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut child = Command::new(env!("CARGO_BIN_EXE_regent"))
        .args(["dev", "--port", &port.to_string()])
        .env_remove("DATABASE_URL")
        .env_remove("PG_HOST")
        .env_remove("PG_DB")
        .env("HOST", "127.0.0.1")
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("regent dev starts");

    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut err = BufReader::new(child.stderr.take().unwrap()).lines();
    let (serving, pg_port) = tokio::time::timeout(Duration::from_secs(60), async {
        let mut pg_port = None;
        loop {
            tokio::select! {
                Ok(Some(line)) = err.next_line() => {
                    if let Some(i) = line.find("postgres://postgres@127.0.0.1:") {
                        let rest = &line[i + "postgres://postgres@127.0.0.1:".len()..];
                        pg_port = rest.split('/').next().and_then(|p| p.parse::<u16>().ok());
                    }
                }
                Ok(Some(line)) = out.next_line() => {
                    if line.contains("Regent is serving on") {
                        return (line, pg_port);
                    }
                }
            }
        }
    })
    .await
    .expect("regent dev prints its URL within 60 s");
    assert!(serving.contains(&format!(":{port}")), "{serving}");
    let pg_port = pg_port.expect("the private PostgreSQL URL is logged");

    let http = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{port}");
    let health: serde_json::Value = http
        .get(format!("{base}/health"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health["status"], "healthy");
    let pushed = http
        .post(format!("{base}/api/v1/push"))
        .body(r#"{"items":[{"queue":"q","payload":1}]}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(pushed.status(), 201);

    // A parked long-poll must not hold the shutdown for its whole timeout.
    let parked = tokio::spawn({
        let http = http.clone();
        let url = format!("{base}/api/v1/pop/queue/empty?wait=true&timeout=30000");
        async move { http.get(url).send().await.map(|r| r.status()) }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;

    let pid = child.id().unwrap() as i32;
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("regent dev exits within 20 s of SIGTERM")
        .unwrap();
    assert!(status.success(), "{status:?}");
    let parked = tokio::time::timeout(Duration::from_secs(5), parked)
        .await
        .expect("the parked long-poll was answered")
        .unwrap();
    assert_eq!(parked.unwrap(), 200);
    assert!(
        tokio::net::TcpStream::connect(("127.0.0.1", pg_port))
            .await
            .is_err(),
        "the private PostgreSQL is stopped with regent dev"
    );
}
