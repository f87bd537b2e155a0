//! The encryption key of `regent dev` when none is configured, so that the quick start can
//! make an encrypted queue. It lives in the cluster's data directory, beside the data it
//! opens (copy one, copy both), readable by its owner only. `regent serve` never makes one:
//! a production key is the operator's to keep, and a broker must not quietly invent one.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

pub const KEY_FILE: &str = "regent-encryption.key";
const KEY_BYTES: usize = 32;

#[derive(Debug, PartialEq, Eq)]
pub enum Origin {
    /// Made now: the directory had none.
    Created,
    /// Made by an earlier run on this directory.
    Found,
}

#[derive(Debug)]
pub struct DevKey {
    /// 64 hex characters, as `QUEEN_ENCRYPTION_KEY` takes it.
    pub hex: String,
    pub path: PathBuf,
    pub origin: Origin,
}

/// The key kept in `dir`, made at the first call.
pub fn dev_key(dir: &Path) -> Result<DevKey> {
    let path = dir.join(KEY_FILE);
    match create(&path) {
        Ok(hex) => Ok(DevKey {
            hex,
            path,
            origin: Origin::Created,
        }),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(DevKey {
            hex: read(&path)?,
            path,
            origin: Origin::Found,
        }),
        Err(e) => Err(e).with_context(|| format!("creating {}", path.display())),
    }
}

/// `create_new`, so two brokers starting on one directory cannot both write a key.
fn create(path: &Path) -> std::io::Result<String> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    let mut bytes = [0u8; KEY_BYTES];
    File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    file.write_all(format!("{hex}\n").as_bytes())?;
    file.sync_all()?;
    Ok(hex)
}

fn read(path: &Path) -> Result<String> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let hex = text.trim();
    if hex.len() != 2 * KEY_BYTES || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        bail!(
            "{} does not hold a key of {} hex characters; restore it (the encrypted queues of \
             this directory need it) or set QUEEN_ENCRYPTION_KEY",
            path.display(),
            2 * KEY_BYTES
        );
    }
    let mode = fs::metadata(path)?.permissions().mode();
    if mode & 0o077 != 0 {
        tracing::warn!(path = %path.display(), mode = format!("{:o}", mode & 0o777), "the encryption key is readable by others");
    }
    Ok(hex.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("regent-key-test-{}", uuid::Uuid::now_v7()));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn the_first_call_makes_a_private_key_and_later_calls_find_it() {
        let dir = scratch();
        let made = dev_key(&dir).unwrap();
        assert_eq!(made.origin, Origin::Created);
        assert_eq!(made.hex.len(), 64);
        assert!(made.hex.bytes().all(|b| b.is_ascii_hexdigit()));
        let mode = fs::metadata(&made.path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let found = dev_key(&dir).unwrap();
        assert_eq!((found.origin, found.hex), (Origin::Found, made.hex.clone()));
        let elsewhere = scratch();
        assert_ne!(
            dev_key(&elsewhere).unwrap().hex,
            made.hex,
            "each directory gets its own key"
        );
        fs::remove_dir_all(&dir).unwrap();
        fs::remove_dir_all(&elsewhere).unwrap();
    }

    #[test]
    fn a_damaged_key_file_stops_the_start_instead_of_being_replaced() {
        let dir = scratch();
        fs::write(dir.join(KEY_FILE), "not a key\n").unwrap();
        let e = dev_key(&dir).unwrap_err().to_string();
        assert!(e.contains("does not hold a key"), "{e}");
        assert_eq!(
            fs::read_to_string(dir.join(KEY_FILE)).unwrap(),
            "not a key\n"
        );
        fs::remove_dir_all(&dir).unwrap();
    }
}
