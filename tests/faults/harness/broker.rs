//! `regent serve` as a child process: started on a port of its own, killed, started again on
//! the same port (its clients keep their URL), its log kept in a file for the reader of a
//! failure.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use tokio::process::Child;

use super::common;

pub struct Broker {
    child: Child,
    pub port: u16,
    db_url: String,
    env: Vec<(String, String)>,
    /// What runs the binary (`ip netns exec NAME` for a broker on a host of its own).
    launcher: Vec<String>,
    /// Where clients reach it.
    host: String,
    /// Every start of this broker appends its stderr here.
    pub log: PathBuf,
}

impl Broker {
    /// Starts `regent serve` on `db_url` with extra environment; returns once it serves.
    pub async fn serve(db_url: &str, env: &[(&str, &str)], log: PathBuf) -> Broker {
        Broker::serve_via(Vec::new(), "127.0.0.1", db_url, env, log).await
    }

    /// [`Broker::serve`] run by `launcher` and reached at `host` (a namespace's address, with
    /// `HOST` in `env` so that it listens there).
    pub async fn serve_via(
        launcher: Vec<String>,
        host: &str,
        db_url: &str,
        env: &[(&str, &str)],
        log: PathBuf,
    ) -> Broker {
        let port = common::free_port();
        let env = owned(env);
        let _ = std::fs::remove_file(&log);
        let child = spawn(&launcher, db_url, port, &env, &log).await;
        Broker {
            child,
            port,
            db_url: db_url.to_string(),
            env,
            launcher,
            host: host.to_string(),
            log,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}:{}", self.host, self.port)
    }

    /// SIGKILL, waited for.
    pub async fn kill(&mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }

    /// SIGTERM, as an orchestrator stops a pod: the broker stops taking connections, lets
    /// what runs finish within its grace period and exits. Panics unless it exits 0 within
    /// `within`.
    pub async fn terminate(&mut self, within: Duration) {
        let pid = self.child.id().expect("running") as libc::pid_t;
        // SAFETY: a signal to our own child, whose pid is not reaped before it exits.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        let status = self.exited(within).await;
        assert!(
            status.is_some_and(|s| s.success()),
            "SIGTERM: {status:?} within {within:?} (log: {})",
            self.log.display()
        );
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
        self.child = spawn(
            &self.launcher,
            &self.db_url,
            self.port,
            &self.env,
            &self.log,
        )
        .await;
    }
}

fn owned(env: &[(&str, &str)]) -> Vec<(String, String)> {
    env.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

async fn spawn(
    launcher: &[String],
    db_url: &str,
    port: u16,
    env: &[(String, String)],
    log: &Path,
) -> Child {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let launcher: Vec<&str> = launcher.iter().map(String::as_str).collect();
    common::serve_via(&launcher, db_url, port, &env, Some(log)).await
}
