//! Contexts: named brokers (a server and where its token is) in a file under the user's
//! configuration directory, one of them current, as kubectl keeps clusters.
//!
//! Precedence, for the server and the token each: the flag, then the environment
//! (`REGENT_SERVER`, `REGENT_TOKEN`), then the context (`--context`, else the current one),
//! then `http://127.0.0.1:6632` (what `regent dev` serves) and no token.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::exit::Failure;

/// The broker `regent dev` serves when nothing else is named.
pub const DEFAULT_SERVER: &str = "http://127.0.0.1:6632";

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Contexts {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_context: Option<String>,
    #[serde(default)]
    pub contexts: BTreeMap<String, Context>,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Context {
    pub server: String,
    /// A file holding the token (read at each use, so a rotated token is picked up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
    /// The token itself, for those who keep it here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// `REGENT_CONFIG`, else `<config dir>/regent/config.yaml` (`$XDG_CONFIG_HOME` or
/// `~/.config` on Linux).
pub fn path() -> Result<PathBuf, Failure> {
    if let Some(p) = std::env::var_os("REGENT_CONFIG") {
        return Ok(PathBuf::from(p));
    }
    dirs::config_dir()
        .map(|d| d.join("regent").join("config.yaml"))
        .ok_or_else(|| {
            Failure::user("no configuration directory found: set REGENT_CONFIG to a file path")
        })
}

impl Contexts {
    /// The file's contexts; none when it does not exist yet.
    pub fn load() -> Result<Contexts, Failure> {
        let path = path()?;
        match std::fs::read_to_string(&path) {
            Ok(text) => yaml_serde::from_str(&text)
                .map_err(|e| Failure::user(format!("{}: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Contexts::default()),
            Err(e) => Err(Failure::user(format!("{}: {e}", path.display()))),
        }
    }

    pub fn save(&self) -> Result<(), Failure> {
        let path = path()?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| Failure::user(format!("{}: {e}", dir.display())))?;
        }
        let text = yaml_serde::to_string(self).map_err(|e| Failure::user(e.to_string()))?;
        write_private(&path, &text).map_err(|e| Failure::user(format!("{}: {e}", path.display())))
    }

    /// The context named, else the current one; `None` when neither exists.
    pub fn pick(&self, name: Option<&str>) -> Result<Option<&Context>, Failure> {
        match name {
            Some(n) => self
                .contexts
                .get(n)
                .map(Some)
                .ok_or_else(|| Failure::user(format!("no context named \"{n}\""))),
            None => Ok(self
                .current_context
                .as_deref()
                .and_then(|n| self.contexts.get(n))),
        }
    }
}

impl Context {
    pub fn token(&self) -> Result<Option<String>, Failure> {
        if let Some(file) = &self.token_file {
            let text = std::fs::read_to_string(file)
                .map_err(|e| Failure::user(format!("token file {}: {e}", file.display())))?;
            return Ok(Some(text.trim().to_string()));
        }
        Ok(self.token.clone())
    }
}

/// The file may hold tokens: readable by its owner only.
fn write_private(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(text.as_bytes())
}
