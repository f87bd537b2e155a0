//! The commands: their clap definitions (the help text is the first reference) and the
//! dispatch to one module per family.

mod apply;
mod basic;
mod config;
mod consume;
mod push;
mod queue;
mod resources;
mod state;

use clap::Subcommand;

use crate::client::{Client, Target};
use crate::context::{Contexts, DEFAULT_SERVER};
use crate::exit::{Failure, Outcome};
use crate::output::Format;
use crate::Conn;

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Check that the broker answers (GET /health); exits 2 when it does not
    Ping {
        #[command(flatten)]
        conn: Conn,
    },
    /// The overview: queues, their depth and rates, the brokers
    Status {
        #[command(flatten)]
        conn: Conn,
    },
    /// Consumer groups behind by more than --min seconds; exits 0 when it lists some, 4 when
    /// none lags
    Lag {
        /// Seconds behind (the oldest unconsumed message's age)
        #[arg(long, default_value_t = 60)]
        min: u64,
        #[command(flatten)]
        conn: Conn,
    },
    /// Print a queue's messages as NDJSON, one per line; with --follow, wait for more until
    /// interrupted
    Tail(consume::Tail),
    /// Push NDJSON from stdin (or --file), one message per line
    Push(push::Push),
    /// Pop messages (under a lease, unless --auto-ack); exits 4 when there are none
    Pop(consume::Pop),
    /// Acknowledge messages: by transaction id, or the NDJSON that `pop -o ndjson` printed
    Ack(consume::Ack),
    /// Move a consumer group's cursor on a queue to an instant (replay) or to the end
    Replay(basic::Replay),
    /// Make the broker's queues match files (-f queues.yaml): shows the changes, then applies
    /// them; --prune deletes queues no file names
    Apply(apply::Apply),
    /// Queues: list, describe, configure, delete, clear
    Queue {
        #[command(subcommand)]
        command: queue::QueueCommand,
        #[command(flatten)]
        conn: Conn,
    },
    /// A queue's partitions: list, describe, seek
    Partition {
        #[command(subcommand)]
        command: resources::PartitionCommand,
        #[command(flatten)]
        conn: Conn,
    },
    /// Messages: list, get, delete, retry, dlq
    Messages {
        #[command(subcommand)]
        command: resources::MessagesCommand,
        #[command(flatten)]
        conn: Conn,
    },
    /// Consumer groups: list, describe, seek, delete
    Cg {
        #[command(subcommand)]
        command: resources::GroupCommand,
        #[command(flatten)]
        conn: Conn,
    },
    /// Dead letters: list, requeue, delete (with --dry-run and a verdict per item)
    Dlq {
        #[command(subcommand)]
        command: resources::DlqCommand,
        #[command(flatten)]
        conn: Conn,
    },
    /// Traces: names, a message's, by name
    Traces {
        #[command(subcommand)]
        command: resources::TracesCommand,
        #[command(flatten)]
        conn: Conn,
    },
    /// Key/value: get, list by prefix
    Kv {
        #[command(subcommand)]
        command: state::KvCommand,
        #[command(flatten)]
        conn: Conn,
    },
    /// Timers: list, get, cancel
    Timers {
        #[command(subcommand)]
        command: state::TimersCommand,
        #[command(flatten)]
        conn: Conn,
    },
    /// Stream queries: list, their partitions
    Stream {
        #[command(subcommand)]
        command: state::StreamCommand,
        #[command(flatten)]
        conn: Conn,
    },
    /// Maintenance mode: pushes buffered (or pops paused, with --pop)
    Maintenance {
        #[command(subcommand)]
        command: basic::Maintenance,
        #[command(flatten)]
        conn: Conn,
    },
    /// Contexts: named brokers and their tokens, in the configuration file
    Config {
        #[command(subcommand)]
        command: config::ConfigCommand,
    },
    /// Print a completion script for bash, zsh or fish
    Completion { shell: clap_complete::Shell },
}

/// What every command that talks to a broker gets: the client and the output format.
pub struct Ctx {
    pub client: Client,
    pub format: Format,
}

impl Ctx {
    /// Resolves the server and the token: flag, then environment, then context.
    fn new(conn: &Conn) -> Result<Ctx, Failure> {
        let contexts = Contexts::load()?;
        let context = contexts.pick(conn.context.as_deref())?;
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let server = conn
            .server
            .clone()
            .or_else(|| env("REGENT_SERVER"))
            .or_else(|| context.map(|c| c.server.clone()))
            .unwrap_or_else(|| DEFAULT_SERVER.to_string());
        let token = match conn.token.clone().or_else(|| env("REGENT_TOKEN")) {
            Some(t) => Some(t),
            None => match context {
                Some(c) => c.token()?,
                None => None,
            },
        };
        let ca_file = conn
            .ca_file
            .clone()
            .or_else(|| env("REGENT_CA_FILE").map(Into::into));
        Ok(Ctx {
            client: Client::new(Target {
                server,
                token,
                ca_file,
            })?,
            format: Format::resolve(conn.output),
        })
    }
}

pub async fn run(command: Command, cli: impl FnOnce() -> clap::Command) -> Outcome {
    match command {
        Command::Ping { conn } => basic::ping(&Ctx::new(&conn)?).await,
        Command::Status { conn } => basic::status(&Ctx::new(&conn)?).await,
        Command::Lag { min, conn } => basic::lag(&Ctx::new(&conn)?, min).await,
        Command::Tail(t) => consume::tail(&Ctx::new(&t.conn)?, &t).await,
        Command::Push(p) => push::push(&Ctx::new(&p.conn)?, &p).await,
        Command::Pop(p) => consume::pop(&Ctx::new(&p.conn)?, &p).await,
        Command::Ack(a) => consume::ack(&Ctx::new(&a.conn)?, &a).await,
        Command::Apply(a) => apply::apply(&Ctx::new(&a.conn)?, &a).await,
        Command::Replay(r) => basic::replay(&Ctx::new(&r.conn)?, &r).await,
        Command::Queue { command, conn } => queue::run(&Ctx::new(&conn)?, command).await,
        Command::Partition { command, conn } => {
            resources::partition(&Ctx::new(&conn)?, command).await
        }
        Command::Messages { command, conn } => {
            resources::messages(&Ctx::new(&conn)?, command).await
        }
        Command::Cg { command, conn } => resources::group(&Ctx::new(&conn)?, command).await,
        Command::Dlq { command, conn } => resources::dlq(&Ctx::new(&conn)?, command).await,
        Command::Traces { command, conn } => resources::traces(&Ctx::new(&conn)?, command).await,
        Command::Kv { command, conn } => state::kv(&Ctx::new(&conn)?, command).await,
        Command::Timers { command, conn } => state::timers(&Ctx::new(&conn)?, command).await,
        Command::Stream { command, conn } => state::stream(&Ctx::new(&conn)?, command).await,
        Command::Maintenance { command, conn } => {
            basic::maintenance(&Ctx::new(&conn)?, command).await
        }
        Command::Config { command } => config::run(command),
        Command::Completion { shell } => {
            let mut cmd = cli();
            let name = cmd.get_name().to_string();
            // Written whole to a buffer first: clap_complete panics when its writer fails,
            // and a reader may close the pipe (`regent completion bash | head`).
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cmd, name, &mut script);
            crate::output::print(&String::from_utf8_lossy(&script))?;
            Ok(crate::exit::Exit::Ok)
        }
    }
}

/// A listing route: GET `path`, the rows under `key` of its answer (the answer itself when
/// `None`), printed; exit code 4 when there are none.
pub async fn list_route(
    ctx: &Ctx,
    path: &str,
    query: &[(&str, String)],
    key: Option<&str>,
    columns: &[(&str, &str)],
) -> Outcome {
    let v = ctx.client.get(path, query).await?;
    let rows = match key {
        Some(k) => &v[k],
        None => &v,
    };
    crate::output::listed(
        ctx.format,
        &crate::output::Listing {
            rows: rows.as_array().cloned().unwrap_or_default(),
            columns,
        },
    )
}

/// A path segment: queue, partition and group names may hold any character.
pub fn seg(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}
