//! `regent serve` as a child process: started on a port of its own, killed, started again on
//! the same port (its clients keep their URL), its log kept in a file for the reader of a
//! failure.

use std::fs::OpenOptions;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// Start-up runs the migrations; a loaded machine can be slow at it.
const START_TIMEOUT: Duration = Duration::from_secs(30);

pub struct Broker {
    child: Child,
    pub port: u16,
    db_url: String,
    env: Vec<(String, String)>,
    /// Every start of this broker appends its stderr here.
    pub log: PathBuf,
}

impl Broker {
    /// Starts `regent serve` on `db_url` with extra environment; returns once it serves.
    pub async fn serve(db_url: &str, env: &[(&str, &str)], log: PathBuf) -> Broker {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let env = owned(env);
        let _ = std::fs::remove_file(&log);
        let child = spawn(db_url, port, &env, &log).await;
        Broker {
            child,
            port,
            db_url: db_url.to_string(),
            env,
            log,
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// SIGKILL, waited for.
    pub async fn kill(&mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }

    /// How the process ended, if it does within `within`.
    pub async fn exited(&mut self, within: Duration) -> Option<ExitStatus> {
        tokio::time::timeout(within, self.child.wait())
            .await
            .ok()
            .map(|status| status.expect("waiting for regent serve"))
    }

    /// Starts it again on the same port and database, with `env` instead of the first start's
    /// extra environment.
    pub async fn restart(&mut self, env: &[(&str, &str)]) {
        self.env = owned(env);
        self.child = spawn(&self.db_url, self.port, &self.env, &self.log).await;
    }
}

fn owned(env: &[(&str, &str)]) -> Vec<(String, String)> {
    env.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

async fn spawn(db_url: &str, port: u16, env: &[(String, String)], log: &PathBuf) -> Child {
    let stderr = OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .expect("opening the broker's log");
    let mut command = Command::new(env!("CARGO_BIN_EXE_regent"));
    // SAFETY: setrlimit is async-signal-safe. A broker the crash hook aborts leaves no core
    // file in the working directory.
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
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr))
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
        panic!("regent serve exited before serving; see {}", log.display());
    })
    .await
    .unwrap_or_else(|_| {
        panic!(
            "regent serve starts within {START_TIMEOUT:?}; see {}",
            log.display()
        )
    });
    // Keep reading, so a line written later never meets a closed pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = out.next_line().await {} });
    child
}
