//! Setting a private cluster up: finding the server binaries, the user they run as, the data
//! directory and initdb; and removing temporary clusters whose owners died.

use std::fs::{self, DirBuilder};
use std::io::{self};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{anyhow, bail, Context, Result};

use super::*;

/// Everything needed to run the postmaster, set up before it starts.
#[derive(Debug)]
pub(crate) struct Prepared {
    pub(crate) postgres: PathBuf,
    /// Extra `-c` settings of every start.
    pub(crate) settings: Vec<String>,
    pub(crate) run_as: Option<RunAs>,
    pub(crate) data_dir: PathBuf,
    pub(crate) temp_root: Option<PathBuf>,
    pub(crate) log_path: PathBuf,
}

/// initdb (and the postmaster) refuse to run as root, so as root we run them as `postgres`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RunAs {
    pub(crate) uid: u32,
    pub(crate) gid: u32,
}

pub(crate) fn prepare(data_dir: Option<PathBuf>, settings: Vec<String>) -> Result<Prepared> {
    let (initdb, postgres) = find_binaries()?;
    let run_as = run_as()?;
    match data_dir {
        None => {
            sweep_stale_temp_dirs();
            let root = std::env::temp_dir().join(format!("{TEMP_PREFIX}{}", uuid::Uuid::now_v7()));
            // 0711: the `postgres` user must be able to reach the data directory inside.
            DirBuilder::new()
                .mode(0o711)
                .create(&root)
                .with_context(|| format!("creating {}", root.display()))?;
            let result = (|| {
                fs::write(root.join(OWNER_FILE), std::process::id().to_string())
                    .with_context(|| format!("writing {}", root.join(OWNER_FILE).display()))?;
                let data_dir = root.join("data");
                make_data_dir(&data_dir, run_as)?;
                run_initdb(&initdb, &data_dir, run_as)?;
                Ok(Prepared {
                    postgres,
                    settings,
                    run_as,
                    data_dir,
                    log_path: root.join(LOG_FILE),
                    temp_root: Some(root.clone()),
                })
            })();
            if result.is_err() {
                let _ = fs::remove_dir_all(&root);
            }
            result
        }
        Some(dir) => {
            let dir = std::path::absolute(&dir)
                .with_context(|| format!("resolving data directory {}", dir.display()))?;
            if !dir.join("PG_VERSION").exists() {
                let occupied = match fs::read_dir(&dir) {
                    Ok(mut entries) => entries.next().is_some(),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => false,
                    Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
                };
                if occupied {
                    bail!(
                        "data directory {} is neither empty nor a PostgreSQL data directory (no PG_VERSION); \
                         pass an empty or new directory",
                        dir.display()
                    );
                }
                make_data_dir(&dir, run_as)?;
                run_initdb(&initdb, &dir, run_as)?;
            }
            Ok(Prepared {
                postgres,
                settings,
                run_as,
                log_path: dir.join(LOG_FILE),
                data_dir: dir,
                temp_root: None,
            })
        }
    }
}

pub(crate) fn find_binaries() -> Result<(PathBuf, PathBuf)> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    if let Ok(out) = Command::new("pg_config")
        .arg("--bindir")
        .stderr(Stdio::null())
        .output()
    {
        let bindir = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if out.status.success() && !bindir.is_empty() {
            dirs.push(bindir.into());
        }
    }
    dirs.extend(debian_bin_dirs());
    dirs.into_iter()
        .map(|dir| (dir.join("initdb"), dir.join("postgres")))
        .find(|(initdb, postgres)| is_executable(initdb) && is_executable(postgres))
        .ok_or_else(|| anyhow!(NOT_FOUND))
}

/// `/usr/lib/postgresql/<version>/bin`, highest version first.
pub(crate) fn debian_bin_dirs() -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir("/usr/lib/postgresql") else {
        return Vec::new();
    };
    let mut versions: Vec<(Vec<u32>, PathBuf)> = entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let version = name
                .split('.')
                .map(|part| part.parse().ok())
                .collect::<Option<Vec<u32>>>()?;
            Some((version, entry.path().join("bin")))
        })
        .collect();
    versions.sort_by(|a, b| b.0.cmp(&a.0));
    versions.into_iter().map(|(_, dir)| dir).collect()
}

pub(crate) fn is_executable(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

pub(crate) fn run_as() -> Result<Option<RunAs>> {
    // SAFETY: plain syscall without arguments.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let passwd = fs::read_to_string("/etc/passwd").context("reading /etc/passwd")?;
    passwd_entry(&passwd, "postgres").map(Some).ok_or_else(|| {
        anyhow!(
            "running as root, but PostgreSQL refuses to run as root and there is no `postgres` user \
             in /etc/passwd to run it as; create one (e.g. `useradd --system postgres`), run as an \
             unprivileged user, or set DATABASE_URL to use an existing database"
        )
    })
}

/// uid and gid of `user` in passwd(5) text.
pub(crate) fn passwd_entry(passwd: &str, user: &str) -> Option<RunAs> {
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        if fields.next()? != user {
            return None;
        }
        let _password = fields.next()?;
        Some(RunAs {
            uid: fields.next()?.trim().parse().ok()?,
            gid: fields.next()?.trim().parse().ok()?,
        })
    })
}

/// initdb wants an empty directory that the server user owns, readable by no one else.
pub(crate) fn make_data_dir(dir: &Path, run_as: Option<RunAs>) -> Result<()> {
    // Parents get the default mode: the server user has to pass through them.
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
        .with_context(|| format!("setting permissions of {}", dir.display()))?;
    if let Some(user) = run_as {
        std::os::unix::fs::chown(dir, Some(user.uid), Some(user.gid))
            .with_context(|| format!("giving {} to the postgres user", dir.display()))?;
    }
    Ok(())
}

pub(crate) fn run_initdb(initdb: &Path, data_dir: &Path, run_as: Option<RunAs>) -> Result<()> {
    let mut cmd = Command::new(initdb);
    cmd.arg("-D")
        .arg(data_dir)
        // -N: no fsync of the new files; this is a development/test cluster.
        .args([
            "-U",
            "postgres",
            "--auth=trust",
            "--encoding=UTF8",
            "--no-locale",
            "-N",
        ])
        // Our working directory may be unreadable to the postgres user.
        .current_dir("/")
        .stdin(Stdio::null());
    if let Some(user) = run_as {
        cmd.uid(user.uid).gid(user.gid);
    }
    let out = cmd
        .output()
        .with_context(|| format!("running {}", initdb.display()))?;
    if !out.status.success() {
        let hint = if run_as.is_some() {
            " (running as the postgres user because we are root: every directory above the data \
             directory must be searchable by it)"
        } else {
            ""
        };
        bail!(
            "{} failed ({}) for {}{hint}:\n{}{}",
            initdb.display(),
            out.status,
            data_dir.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
    }
    Ok(())
}

/// Removes temporary clusters left behind by processes that died without calling `stop()`
/// (their postmasters were shut down by the parent-death signal, but nothing removed the files).
pub(crate) fn sweep_stale_temp_dirs() {
    let Ok(entries) = fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let is_ours = entry
            .file_name()
            .to_str()
            .is_some_and(|name| name.starts_with(TEMP_PREFIX))
            && entry.file_type().is_ok_and(|t| t.is_dir());
        if !is_ours {
            continue;
        }
        // Without an owner file we cannot tell whether someone is still setting it up.
        let Some(owner) = read_pid(&path.join(OWNER_FILE)) else {
            continue;
        };
        if process_alive(owner) {
            continue;
        }
        // The postmaster removes its pid file when it has shut down.
        if read_pid(&path.join("data").join("postmaster.pid")).is_some_and(process_alive) {
            continue;
        }
        match fs::remove_dir_all(&path) {
            Ok(()) => tracing::debug!(dir = %path.display(), "removed a stale private cluster"),
            Err(e) => {
                tracing::debug!(dir = %path.display(), error = %e, "could not remove a stale private cluster")
            }
        }
    }
}

/// The pid on the first line of `path`.
pub(crate) fn read_pid(path: &Path) -> Option<libc::pid_t> {
    let text = fs::read_to_string(path).ok()?;
    text.lines()
        .next()?
        .trim()
        .parse()
        .ok()
        .filter(|&pid| pid > 0)
}

pub(crate) fn process_alive(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks for existence and permission.
    let exists = unsafe { libc::kill(pid, 0) } == 0;
    exists || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}
