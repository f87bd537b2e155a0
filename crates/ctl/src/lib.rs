//! The operator's command line: `regent ping`, `status`, `tail`, `push`, `queue list`, … as a
//! client of any Regent (or Queen) broker over its HTTP API, never SQL. docs/cli.md is the
//! reference; this crate is the commands (clap definitions), one module per family, over a
//! small HTTP client (`client`) that retries 503 and 429 and maps every failure to an exit
//! code (`exit`).
//!
//! Architecture Invariant: nothing here links the broker's crates. The command line is a
//! client like any other, so what it can do is exactly what the API allows its token.

mod client;
mod commands;
mod context;
mod exit;
mod output;
mod when;

use std::path::PathBuf;

use clap::Args;

pub use commands::Command;
pub use exit::Exit;
use output::Format;

/// Where the broker is, who is asking, and how to print: on every operator command.
#[derive(Args, Debug, Clone, Default)]
pub struct Conn {
    /// The broker's URL [default: REGENT_SERVER, else the context's, else
    /// http://127.0.0.1:6632]
    #[arg(long, global = true, help_heading = "Connection")]
    pub server: Option<String>,
    /// A bearer token [default: REGENT_TOKEN, else the context's]
    #[arg(long, global = true, help_heading = "Connection")]
    pub token: Option<String>,
    /// A context of the configuration file other than the current one
    #[arg(long, global = true, help_heading = "Connection")]
    pub context: Option<String>,
    /// A PEM file of certificate authorities to trust besides the system's [env:
    /// REGENT_CA_FILE]
    #[arg(long, global = true, help_heading = "Connection")]
    pub ca_file: Option<PathBuf>,
    /// How to print: table (on a terminal) or json (in a pipe) by default
    #[arg(
        short = 'o',
        long,
        global = true,
        value_enum,
        help_heading = "Connection"
    )]
    pub output: Option<Format>,
}

/// Runs one operator command and gives the exit code to end with (`Exit`); `cli` builds the
/// whole binary's command tree (for `completion`).
pub async fn run(command: Command, cli: impl FnOnce() -> clap::Command) -> u8 {
    let outcome = commands::run(command, cli).await;
    let code = match outcome {
        Ok(exit) => exit,
        Err(failure) => {
            if !failure.message.is_empty() {
                eprintln!("error: {}", failure.message);
            }
            failure.exit
        }
    };
    code as u8
}
