//! `config set-context|use-context|get-contexts|current-context|delete-context`: the file
//! only; no broker is asked.

use std::path::PathBuf;

use clap::Subcommand;
use serde_json::json;

use crate::context::{self, Context, Contexts};
use crate::exit::{Exit, Failure, Outcome};
use crate::output::{self, Format, Listing};

#[derive(Subcommand, Debug)]
pub enum ConfigCommand {
    /// Add a context or change one (the first one added becomes current)
    SetContext {
        name: String,
        #[arg(long)]
        server: Option<String>,
        /// A file holding the token, read at each use
        #[arg(long, conflicts_with = "token")]
        token_file: Option<PathBuf>,
        /// The token itself (kept in the file, readable by you only)
        #[arg(long)]
        token: Option<String>,
    },
    /// Make a context the current one
    UseContext { name: String },
    /// List the contexts; the current one is marked
    GetContexts {
        #[arg(short = 'o', long, value_enum)]
        output: Option<Format>,
    },
    /// Print the current context's name
    CurrentContext,
    /// Remove a context
    DeleteContext { name: String },
}

pub fn run(command: ConfigCommand) -> Outcome {
    let mut all = Contexts::load()?;
    match command {
        ConfigCommand::SetContext {
            name,
            server,
            token_file,
            token,
        } => {
            let existing = all.contexts.get(&name).cloned();
            let server = match (server, &existing) {
                (Some(s), _) => s,
                (None, Some(c)) => c.server.clone(),
                (None, None) => {
                    return Err(Failure::user(format!(
                        "context \"{name}\" is new: give it a --server"
                    )))
                }
            };
            let mut c = existing.unwrap_or_default();
            c.server = server;
            if token_file.is_some() || token.is_some() {
                c.token_file = token_file;
                c.token = token;
            }
            all.contexts.insert(name.clone(), c);
            if all.current_context.is_none() {
                all.current_context = Some(name.clone());
            }
            all.save()?;
            eprintln!("context \"{name}\" set in {}", context::path()?.display());
        }
        ConfigCommand::UseContext { name } => {
            if !all.contexts.contains_key(&name) {
                return Err(Failure::user(format!("no context named \"{name}\"")));
            }
            all.current_context = Some(name.clone());
            all.save()?;
            eprintln!("switched to context \"{name}\"");
        }
        ConfigCommand::GetContexts { output } => {
            let format = Format::resolve(output);
            let rows: Vec<_> = all
                .contexts
                .iter()
                .map(|(name, c): (&String, &Context)| {
                    json!({
                        "current": all.current_context.as_deref() == Some(name.as_str()),
                        "name": name, "server": c.server,
                        "token": if c.token_file.is_some() { "file" }
                                 else if c.token.is_some() { "inline" } else { "none" },
                    })
                })
                .collect();
            // A table marks the current context with `*`, as kubectl's does; the documents
            // keep the boolean.
            let (rows, columns) = match format {
                Format::Table => (rows.into_iter().map(marked).collect(), MARKED),
                _ => (rows, PLAIN),
            };
            output::listing(format, &Listing { rows, columns })?;
        }
        ConfigCommand::CurrentContext => match &all.current_context {
            Some(name) => output::line(name)?,
            None => return Ok(Exit::NoOp),
        },
        ConfigCommand::DeleteContext { name } => {
            if all.contexts.remove(&name).is_none() {
                return Err(Failure::user(format!("no context named \"{name}\"")));
            }
            let was_current = all.current_context.as_deref() == Some(name.as_str());
            if was_current {
                all.current_context = None;
            }
            all.save()?;
            eprintln!("context \"{name}\" deleted");
            if was_current {
                eprintln!("{}", after_current_deleted());
            }
        }
    }
    Ok(Exit::Ok)
}

const PLAIN: &[(&str, &str)] = &[
    ("current", "current"),
    ("name", "name"),
    ("server", "server"),
    ("token", "token"),
];
const MARKED: &[(&str, &str)] = &[
    ("current", "mark"),
    ("name", "name"),
    ("server", "server"),
    ("token", "token"),
];

fn marked(mut row: serde_json::Value) -> serde_json::Value {
    let mark = if row["current"] == true { "*" } else { "" };
    row["mark"] = mark.into();
    row
}

/// What the command line talks to once the current context is gone (Ctx::new's order).
fn after_current_deleted() -> String {
    let next = match std::env::var("REGENT_SERVER")
        .ok()
        .filter(|v| !v.is_empty())
    {
        Some(server) => format!("{server} (REGENT_SERVER)"),
        None => format!("{} (the default)", super::DEFAULT_SERVER),
    };
    format!(
        "no current context: commands talk to {next} until `regent config use-context NAME` \
         picks one"
    )
}
