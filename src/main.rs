//! The `regent` binary: `serve` for production, `dev` for a one-command local broker.

use std::path::PathBuf;

use anyhow::Context;
use clap::{CommandFactory, Parser, Subcommand};
use tokio::net::TcpListener;

use regent::config::Config;
use regent::private_pg::citus::CitusCluster;
use regent::private_pg::key::Origin;
use regent::private_pg::PrivateCluster;
use regent::server;

#[derive(Parser)]
#[command(
    name = "regent",
    version,
    about = "A PostgreSQL-backed message broker that speaks Queen MQ's HTTP API"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the API against the database named by DATABASE_URL (or Queen's PG_* variables).
    Serve,
    /// Serve with a private PostgreSQL when no database is configured.
    Dev {
        /// Port to serve on (default: PORT, else 6632).
        #[arg(long)]
        port: Option<u16>,
        /// Keep the private cluster in this directory between runs (default: a temporary one).
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// A private Citus cluster instead: a coordinator and this many workers on loopback,
        /// the broker on the coordinator (Citus must be installed: scripts/citus).
        #[arg(long, value_name = "WORKERS")]
        citus: Option<usize>,
    },
    /// Load a running broker and report throughput, latency and a delivery ledger.
    Bench(regent::bench::BenchArgs),
    /// Exit 0 when the broker on PORT answers /health with 200 (for container health checks,
    /// where no curl exists).
    Healthcheck,
    /// Print a development token signed with HS256, to try authentication without another tool.
    Token {
        /// The shared secret (JWT_SECRET of the broker).
        #[arg(long, env = "JWT_SECRET")]
        secret: String,
        /// `read-only`, `read-write` or `admin` (or your JWT_ROLE_* values).
        #[arg(long, default_value = "read-write")]
        role: String,
        /// The `tenant` claim: the tenant the token acts for. `default` is the tenant of
        /// requests without a token, where `regent dev`'s data lives.
        #[arg(long, default_value = regent::rules::naming::DEFAULT_TENANT)]
        tenant: String,
        /// The `sub` claim.
        #[arg(long)]
        subject: Option<String>,
        /// Seconds until it expires.
        #[arg(long, default_value_t = 3600)]
        expires_in: u64,
    },
    /// The operator's commands: a client of any broker over its HTTP API (docs/cli.md).
    #[command(flatten)]
    Ctl(regent_ctl::Command),
}

/// jemalloc rather than glibc's malloc: after a burst of large requests glibc kept most of
/// the peak resident (its arenas keep freed pages), jemalloc's background thread gives it
/// back within about a second (BENCHMARKS.md, "Memory after large pushes").
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read at its start-up: purge freed pages after 1 s (not 10), on a
/// background thread, so an idle broker shrinks too.
#[export_name = "_rjem_malloc_conf"]
pub static MALLOC_CONF: &[u8] = b"background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0\0";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // Usage errors exit 1, as docs/cli.md says (clap's own 2 is "no broker" there); help
    // and version exit 0. The connection flags may come before an operator command.
    let args = regent_ctl::hoist_connection_flags(std::env::args_os().collect());
    let cli = Cli::try_parse_from(args).unwrap_or_else(|e| {
        let _ = e.print();
        std::process::exit(if e.use_stderr() { 1 } else { 0 })
    });
    // The operator's commands are clients: the server's configuration and logging are not
    // theirs, and their exit code is the answer scripts branch on.
    if let Command::Ctl(command) = cli.command {
        let code = regent_ctl::run(command, Cli::command).await;
        std::process::exit(i32::from(code));
    }
    regent::logging::init();
    let mut config = Config::from_env().context("reading configuration from the environment")?;
    match cli.command {
        Command::Ctl(_) => unreachable!("the operator's commands return above"),
        Command::Serve => {
            let url = config.database_url();
            run(config, &url).await
        }
        Command::Healthcheck => {
            let tls = config.tls_files()?.is_some();
            healthcheck(config.port, tls).await
        }
        Command::Token {
            secret,
            role,
            tenant,
            subject,
            expires_in,
        } => {
            let claims = regent::http::auth::Minted {
                role: &role,
                tenant: Some(&tenant),
                sub: subject.as_deref(),
                expires_in_secs: Some(expires_in),
            };
            print(&format!("{}\n", regent::http::auth::mint(&secret, &claims)))
        }
        Command::Bench(args) => {
            let json = args.json;
            let report = regent::bench::run(args).await?;
            if json {
                print(&format!("{}\n", serde_json::to_string_pretty(&report)?))?;
            } else {
                print(&report.text())?;
            }
            match (&report.ledger, &report.timers) {
                (Some(l), _) if !l.ok() => anyhow::bail!("ledger check failed: {l:?}"),
                (_, Some(t)) if !t.ok() => anyhow::bail!("timer check failed: {t:?}"),
                _ => Ok(()),
            }
        }
        Command::Dev {
            port,
            data_dir,
            citus,
        } => {
            if let Some(p) = port {
                config.port = p;
            }
            // A development broker usually runs with authentication off: on a laptop on a
            // shared network, every interface would serve an open broker. `serve` keeps
            // the wildcard, which containers need.
            if std::env::var_os("HOST").is_none() {
                config.host = DEV_HOST.into();
            }
            port_free(&config)?;
            if config.database_configured() {
                if citus.is_some() {
                    anyhow::bail!(
                        "--citus starts a Citus cluster of its own, but a database is configured \
                         (DATABASE_URL or PG_*): unset it, or drop --citus to use that database"
                    );
                }
                let url = config.database_url();
                return run(config, &url).await;
            }
            match citus {
                Some(workers) => dev_on_citus(config, workers, data_dir).await,
                None => dev_on_postgres(config, data_dir).await,
            }
        }
    }
}

async fn dev_on_postgres(config: Config, data_dir: Option<PathBuf>) -> anyhow::Result<()> {
    let cluster = PrivateCluster::start(data_dir).await?;
    tracing::info!(url = %cluster.url(), "private PostgreSQL started");
    let result = serve_dev(config, &cluster).await;
    cluster.stop().await?;
    result
}

async fn dev_on_citus(
    config: Config,
    workers: usize,
    data_dir: Option<PathBuf>,
) -> anyhow::Result<()> {
    let cluster = CitusCluster::start(workers, data_dir).await?;
    let worker_urls: Vec<String> = cluster.workers().iter().map(PrivateCluster::url).collect();
    tracing::info!(url = %cluster.url(), workers = ?worker_urls, "private Citus cluster started");
    let result = serve_dev(config, cluster.coordinator()).await;
    cluster.stop().await?;
    result
}

/// Serves on the private cluster the broker keeps its data (and its dev key) in, until
/// shutdown.
async fn serve_dev(mut config: Config, cluster: &PrivateCluster) -> anyhow::Result<()> {
    dev_key(&mut config, cluster)?;
    run(config, &cluster.url()).await
}

/// Where `regent dev` listens when `HOST` is unset: loopback only.
const DEV_HOST: &str = "127.0.0.1";

/// Without QUEEN_ENCRYPTION_KEY, `regent dev` uses the key kept with its cluster (made at
/// the first start), so the quick start can make encrypted queues; it says which.
fn dev_key(config: &mut Config, cluster: &PrivateCluster) -> anyhow::Result<()> {
    if config.queen_encryption_key.is_some() {
        return Ok(());
    }
    let key = cluster.encryption_key()?;
    let path = key.path.display();
    match (cluster.is_temporary(), key.origin) {
        (true, _) => tracing::info!(
            "QUEEN_ENCRYPTION_KEY unset: encrypting with a temporary key, removed with the cluster"
        ),
        (false, Origin::Created) => tracing::info!(
            %path, "QUEEN_ENCRYPTION_KEY unset: created an encryption key for this data directory (mode 0600); keep it with the data"
        ),
        (false, Origin::Found) => tracing::info!(
            %path, "QUEEN_ENCRYPTION_KEY unset: encrypting with the key kept in the data directory"
        ),
    }
    config.queen_encryption_key = Some(key.hex);
    Ok(())
}

async fn run(config: Config, url: &str) -> anyhow::Result<()> {
    let listener = TcpListener::bind((config.host.as_str(), config.port))
        .await
        .with_context(|| format!("binding {}:{}", config.host, config.port))?;
    let srv = server::start(config, url, listener).await?;
    // A wildcard bind is reachable on loopback: print a URL a user can paste.
    let shown = match srv.addr.ip() {
        ip if ip.is_unspecified() => format!("localhost:{}", srv.addr.port()),
        _ => srv.addr.to_string(),
    };
    let scheme = if srv.tls { "https" } else { "http" };
    let stop = server::termination();
    println!("Regent is serving on {scheme}://{shown}");
    stop.await;
    tracing::info!("shutting down");
    srv.shutdown().await
}

async fn healthcheck(port: u16, tls: bool) -> anyhow::Result<()> {
    use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
    async fn ask(mut s: impl AsyncRead + AsyncWrite + Unpin) -> anyhow::Result<()> {
        s.write_all(b"GET /health HTTP/1.0\r\nHost: localhost\r\n\r\n")
            .await?;
        let mut head = [0u8; 12];
        s.read_exact(&mut head).await?;
        anyhow::ensure!(
            &head[9..12] == b"200",
            "unhealthy: {}",
            String::from_utf8_lossy(&head)
        );
        Ok(())
    }
    let check = async {
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
        if !tls {
            return ask(tcp).await;
        }
        // Our own process over loopback: whether it answers is the question, not who it is.
        let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(
            regent::tls::unverified_client()?,
        ));
        let name = rustls::pki_types::ServerName::try_from("localhost")?;
        ask(connector.connect(name, tcp).await?).await
    };
    tokio::time::timeout(std::time::Duration::from_secs(3), check)
        .await
        .context("health check timed out")?
}

/// Writes to stdout; a reader that closed the pipe (`regent token | head -c 10`) ends the
/// output quietly rather than in a panic, as the operator's commands do.
fn print(text: &str) -> anyhow::Result<()> {
    regent_ctl::print(text).map_err(|f| anyhow::anyhow!(f.message))
}

/// `regent dev` checks its port before it makes a PostgreSQL cluster that would only be
/// stopped again when the bind fails.
fn port_free(config: &Config) -> anyhow::Result<()> {
    match std::net::TcpListener::bind((config.host.as_str(), config.port)) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => anyhow::bail!(
            "port {} is in use on {}: stop what listens there, or choose another with --port",
            config.port,
            config.host
        ),
        Err(e) => Err(e).with_context(|| format!("binding {}:{}", config.host, config.port)),
    }
}
