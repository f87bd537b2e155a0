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

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Subcommand};

pub use commands::Command;
pub use exit::Exit;
pub use output::print;
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

/// The connection flags ([`Conn`]) written before the operator command, as kubectl takes
/// them (`regent -o json --server URL status`): moved to just after the command's name,
/// where clap reads them (they are global from there down). Anything else before the
/// command, or flags before a command that is not an operator's (`serve`), is left where it
/// is for clap to refuse.
pub fn hoist_connection_flags(args: Vec<OsString>) -> Vec<OsString> {
    const TAKES_VALUE: [&str; 6] = [
        "--server",
        "--token",
        "--context",
        "--ca-file",
        "-o",
        "--output",
    ];
    let mut i = 1;
    while let Some(arg) = args.get(i).and_then(|a| a.to_str()) {
        let joined = TAKES_VALUE.iter().any(|f| {
            arg.strip_prefix(f)
                .is_some_and(|rest| rest.starts_with('=') || (*f == "-o" && !rest.is_empty()))
        });
        if TAKES_VALUE.contains(&arg) {
            i += 2;
        } else if joined {
            i += 1;
        } else {
            break;
        }
    }
    let command = args.get(i).and_then(|a| a.to_str());
    if i == 1 || i >= args.len() || !command.is_some_and(Command::has_subcommand) {
        return args;
    }
    let mut out = vec![args[0].clone(), args[i].clone()];
    out.extend_from_slice(&args[1..i]);
    out.extend_from_slice(&args[i + 1..]);
    out
}
