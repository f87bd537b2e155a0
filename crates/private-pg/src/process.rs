//! The postmaster as a child process: started on a free port with a parent-death signal,
//! waited for, reaped, and its log read when it fails to start.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{mpsc, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::*;

/// Starts the postmaster on a free port and waits until it accepts connections; returns its pid
/// and port.
pub(crate) async fn launch(prepared: &Prepared) -> Result<(libc::pid_t, u16)> {
    for attempt in 1..=PORT_ATTEMPTS {
        let port = free_port()?;
        match launch_on(prepared, port).await? {
            Ok(pid) => return Ok((pid, port)),
            Err((StartFailure::Exited(_), tail))
                if attempt < PORT_ATTEMPTS && tail.contains(PORT_TAKEN) =>
            {
                tracing::debug!(
                    port,
                    "port was taken before the postmaster bound it; retrying"
                );
            }
            Err((failure, tail)) => bail!(
                "{failure}; log tail ({}):\n{tail}",
                prepared.log_path.display()
            ),
        }
    }
    unreachable!("the last attempt returns")
}

/// The log line of a postmaster that could not bind its port.
pub(crate) const PORT_TAKEN: &str = "could not create any TCP/IP sockets";
/// The log line of a postmaster refused because the processes of the one before it (killed)
/// are still attached to its shared memory: they exit once they notice their parent is gone.
pub(crate) const ORPHANS_ATTACHED: &str = "is still in use";

/// Starts the postmaster again on the cluster's own port (its clients' URL stays valid),
/// retrying while that port or the old shared memory is still held, for at most
/// `READY_TIMEOUT`.
pub(crate) async fn relaunch(prepared: &Prepared, port: u16) -> Result<libc::pid_t> {
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        match launch_on(prepared, port).await? {
            Ok(pid) => return Ok(pid),
            Err((StartFailure::Exited(_), tail))
                if Instant::now() < deadline
                    && (tail.contains(PORT_TAKEN) || tail.contains(ORPHANS_ATTACHED)) =>
            {
                tokio::time::sleep(RELAUNCH_PAUSE).await;
            }
            Err((failure, tail)) => bail!(
                "{failure}; log tail ({}):\n{tail}",
                prepared.log_path.display()
            ),
        }
    }
}

/// One start of the postmaster on `port`: its pid once it accepts connections, or how it
/// failed with the tail of its log (the outer error is ours: the log or the spawn).
pub(crate) async fn launch_on(
    prepared: &Prepared,
    port: u16,
) -> Result<std::result::Result<libc::pid_t, (StartFailure, String)>> {
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&prepared.log_path)
        .with_context(|| format!("opening {}", prepared.log_path.display()))?;
    // A persistent directory keeps its log across runs; only this run's part is relevant.
    let log_start = log.metadata().map(|m| m.len()).unwrap_or(0);
    let mut cmd = Command::new(&prepared.postgres);
    cmd.arg("-D")
        .arg(&prepared.data_dir)
        .arg("-p")
        .arg(port.to_string())
        .args(["-c", "listen_addresses=127.0.0.1"])
        // TCP only: no socket files to clash with a system cluster or to clean up.
        .args(["-c", "unix_socket_directories="])
        .args(["-c", "max_connections=200", "-c", "shared_buffers=128MB"]);
    for setting in &prepared.settings {
        cmd.arg("-c").arg(setting);
    }
    if prepared.temp_root.is_some() {
        cmd.args(["-c", "fsync=off", "-c", "full_page_writes=off"]);
    }
    cmd.current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::from(
            log.try_clone().context("duplicating the log file handle")?,
        ))
        .stderr(Stdio::from(
            log.try_clone().context("duplicating the log file handle")?,
        ));
    if let Some(user) = prepared.run_as {
        cmd.uid(user.uid).gid(user.gid);
    }
    let pid = spawn_postmaster(cmd)
        .await
        .with_context(|| format!("starting {}", prepared.postgres.display()))?;
    Ok(match wait_ready(pid, port).await {
        Ok(()) => Ok(pid),
        Err(failure) => Err((failure, log_tail(&prepared.log_path, log_start))),
    })
}

pub(crate) fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).context("finding a free port")?;
    Ok(listener.local_addr()?.port())
}

pub(crate) struct SpawnRequest {
    pub(crate) command: Command,
    pub(crate) reply: tokio::sync::oneshot::Sender<io::Result<u32>>,
}

/// Spawns the postmaster from a thread that never exits. PR_SET_PDEATHSIG fires when the
/// *thread* that forked the child exits, not the process, so forking from a runtime worker (which
/// tokio may retire at any time) would shut the cluster down at random.
pub(crate) async fn spawn_postmaster(mut command: Command) -> io::Result<libc::pid_t> {
    static SPAWNER: OnceLock<mpsc::Sender<SpawnRequest>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("regent-pg-spawner".into())
            .spawn(move || {
                // The sender lives in a static, so this loop only ends with the process.
                for mut request in rx {
                    // The Child handle is dropped (which neither kills nor waits): the cluster
                    // reaps by pid.
                    let _ = request
                        .reply
                        .send(request.command.spawn().map(|child| child.id()));
                }
                loop {
                    std::thread::park();
                }
            })
            .expect("spawning the PostgreSQL spawner thread");
        tx
    });

    let parent = std::process::id() as libc::pid_t;
    // Its own process group: a Ctrl-C in the terminal goes to regent, which then shuts the
    // cluster down after draining, instead of the database vanishing underneath it.
    command.process_group(0);
    // SAFETY: the closure runs between fork and exec and only makes async-signal-safe syscalls.
    // std runs it after switching uid/gid, which matters: changing credentials clears the
    // parent-death signal.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGINT as libc::c_ulong,
                0,
                0,
                0,
            ) == -1
            {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died before prctl took effect.
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }

    let (reply, response) = tokio::sync::oneshot::channel();
    spawner
        .send(SpawnRequest { command, reply })
        .map_err(|_| io::Error::other("the PostgreSQL spawner thread is gone"))?;
    let pid = response
        .await
        .map_err(|_| io::Error::other("the PostgreSQL spawner thread is gone"))??;
    Ok(pid as libc::pid_t)
}

pub(crate) enum StartFailure {
    Exited(String),
    Timeout(String),
}

impl std::fmt::Display for StartFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartFailure::Exited(status) => write!(f, "PostgreSQL exited during start-up ({status})"),
            StartFailure::Timeout(last_error) => write!(
                f,
                "PostgreSQL did not accept connections within {READY_TIMEOUT:?} (last error: {last_error})"
            ),
        }
    }
}

/// Polls until the postmaster accepts a connection; on failure it is no longer running.
pub(crate) async fn wait_ready(
    pid: libc::pid_t,
    port: u16,
) -> std::result::Result<(), StartFailure> {
    let mut config = tokio_postgres::Config::new();
    config
        .host("127.0.0.1")
        .port(port)
        .user("postgres")
        .dbname("postgres")
        .connect_timeout(Duration::from_secs(1));
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        if let Some(status) = try_reap(pid) {
            return Err(StartFailure::Exited(status));
        }
        let last_error = match config.connect(tokio_postgres::NoTls).await {
            Ok((client, connection)) => {
                // Dropping the client sends Terminate; awaiting the connection flushes it, so the
                // server log stays free of "unexpected EOF" noise.
                drop(client);
                let _ = connection.await;
                return Ok(());
            }
            Err(e) => e.to_string(),
        };
        if Instant::now() >= deadline {
            // SAFETY: plain syscall on our unreaped child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            while try_reap(pid).is_none() {
                tokio::time::sleep(STOP_POLL).await;
            }
            return Err(StartFailure::Timeout(last_error));
        }
        tokio::time::sleep(READY_POLL).await;
    }
}

/// Reaps `pid` if it has exited, describing how; `None` while it runs.
pub(crate) fn try_reap(pid: libc::pid_t) -> Option<String> {
    let mut status = 0;
    // SAFETY: plain syscall; `status` is a valid out-pointer.
    let reaped = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    match reaped {
        0 => None,
        -1 => {
            let error = io::Error::last_os_error();
            if error.raw_os_error() == Some(libc::EINTR) {
                None
            } else {
                // ECHILD: someone else reaped it; either way it is gone.
                Some(format!("not waitable: {error}"))
            }
        }
        _ if libc::WIFEXITED(status) => Some(format!("exit status {}", libc::WEXITSTATUS(status))),
        _ if libc::WIFSIGNALED(status) => {
            Some(format!("killed by signal {}", libc::WTERMSIG(status)))
        }
        _ => Some(format!("wait status {status}")),
    }
}

/// The last lines written to the log since byte `from`.
pub(crate) fn log_tail(path: &Path, from: u64) -> String {
    let mut text = Vec::new();
    let read = File::open(path).and_then(|mut file| {
        file.seek(SeekFrom::Start(from))?;
        file.read_to_end(&mut text)
    });
    if let Err(e) = read {
        return format!("(could not read the log: {e})");
    }
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().collect();
    if lines.is_empty() {
        return "(empty)".to_owned();
    }
    lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n")
}
