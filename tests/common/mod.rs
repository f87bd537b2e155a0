//! What the two integration-test binaries share: `tests/api` (through `support.rs`) and
//! `tests/faults` (through its harness) each include this file with `#[path]`, since one test
//! binary cannot use another's modules. Each uses part of it.
#![allow(dead_code)]

use std::fs::OpenOptions;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// Start-up runs the migrations; a loaded machine can be slow at it.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The acknowledgments of every message of a pop answer (its `messages`), each under the
/// lease it was delivered with, all with `status`: what `POST /api/v1/ack/batch` takes.
pub fn acks<'a>(messages: impl IntoIterator<Item = &'a Value>, status: &str) -> Vec<Value> {
    messages
        .into_iter()
        .map(|m| {
            json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                   "leaseId": m["leaseId"], "status": status})
        })
        .collect()
}

/// A loopback port nothing listened on a moment ago.
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// `regent serve` as a child process on `db_url`, listening on `127.0.0.1:port`, once it says
/// it serves. Settings the tests' environment may carry (authentication, tenant limits, the
/// crash hook) are removed; `env` is added. Its stderr is appended to `log` (named when it
/// fails to start), or dropped. It is killed when dropped, and leaves no core file if the
/// crash hook aborts it.
pub async fn serve(db_url: &str, port: u16, env: &[(&str, &str)], log: Option<&Path>) -> Child {
    serve_via(&[], db_url, port, env, log).await
}

/// [`serve`] started through `launcher` (`ip netns exec NAME`, say), which runs the binary.
pub async fn serve_via(
    launcher: &[&str],
    db_url: &str,
    port: u16,
    env: &[(&str, &str)],
    log: Option<&Path>,
) -> Child {
    let stderr = match log {
        Some(path) => Stdio::from(
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .expect("opening the broker's log"),
        ),
        None => Stdio::null(),
    };
    let see = log.map_or(String::new(), |p| format!("; see {}", p.display()));
    let mut command = match launcher.split_first() {
        None => Command::new(env!("CARGO_BIN_EXE_regent")),
        Some((program, args)) => {
            let mut c = Command::new(program);
            c.args(args).arg(env!("CARGO_BIN_EXE_regent"));
            c
        }
    };
    // SAFETY: setrlimit is async-signal-safe.
    unsafe {
        command.pre_exec(|| {
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            Ok(())
        });
    }
    let mut child = command
        .arg("serve")
        .env("DATABASE_URL", db_url)
        .env("HOST", "127.0.0.1")
        .env("PORT", port.to_string())
        .env("NO_COLOR", "1")
        .env_remove("JWT_ENABLED")
        .env_remove("TENANT_LIMITS")
        .env_remove("REGENT_TEST_ABORT_AFTER_COMMIT")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .kill_on_drop(true)
        .spawn()
        .expect("regent serve starts");
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    tokio::time::timeout(START_TIMEOUT, async {
        while let Ok(Some(line)) = out.next_line().await {
            if line.contains("Regent is serving on") {
                return;
            }
        }
        panic!("regent serve exited before serving{see}");
    })
    .await
    .unwrap_or_else(|_| panic!("regent serve starts within {START_TIMEOUT:?}{see}"));
    // Keep reading, so a line written later never meets a closed pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = out.next_line().await {} });
    child
}
