//! Starting and stopping the broker: the service (migrations, pool, background tasks), the
//! HTTP application, the listener, and a graceful shutdown that answers parked long-polls at
//! once instead of holding the process for their full timeout.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use regent_config::Config;
use regent_http::{auth::Auth, router, AppState};
use regent_service::Service;

use crate::connections;
use crate::listener::TlsListener;

/// A broker serving on a bound listener.
pub struct RunningServer {
    pub addr: SocketAddr,
    /// True when the port speaks HTTPS (`TLS_CERT_FILE` and `TLS_KEY_FILE`).
    pub tls: bool,
    pub service: Arc<Service>,
    grace: Duration,
    shutdown: watch::Sender<bool>,
    cut_off: watch::Sender<bool>,
    serve: JoinHandle<std::io::Result<()>>,
}

/// Migrates the database, then serves on `listener` until [`RunningServer::shutdown`].
pub async fn start(
    config: Config,
    database_url: &str,
    listener: TcpListener,
) -> anyhow::Result<RunningServer> {
    // Before the database: a broken certificate should not wait behind a migration.
    let tls = match config.tls_files()? {
        Some((cert, key)) => Some(regent_tls::server_config(cert, key)?),
        None => None,
    };
    config.cors_origins()?;
    let auth = Auth::from_config(&config)?;
    let service = Service::start(&config, database_url).await?;
    if let Some(auth) = &auth {
        auth.start(service.supervisor()).await;
    }
    let (shutdown, stop) = watch::channel(false);
    let (cut_off, grace_over) = watch::channel(false);
    let grace = Duration::from_secs(config.shutdown_grace_seconds);
    let limits = connections::Limits {
        max_connections: config.http_max_connections,
        header_timeout: Duration::from_millis(config.http_header_timeout_ms),
    };
    let app = router(AppState::new(service.clone(), config, auth, grace_over));
    let addr = listener.local_addr()?;
    service.serving_on(addr.port());
    let serve = match tls.clone() {
        None => {
            let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| no_delay(tcp));
            tokio::spawn(connections::serve(listener, app, limits, stop))
        }
        Some(tls) => {
            let listener = TlsListener::new(listener, tls, no_delay);
            tokio::spawn(connections::serve(listener, app, limits, stop))
        }
    };
    tracing::info!(%addr, tls = tls.is_some(), "regent listening");
    Ok(RunningServer {
        addr,
        tls: tls.is_some(),
        service,
        grace,
        shutdown,
        cut_off,
        serve,
    })
}

impl RunningServer {
    /// Stops accepting and wakes parked long-polls so they answer their empty shape; waits
    /// for in-flight requests up to `SHUTDOWN_GRACE_SECONDS`, then cuts off the rest with a
    /// 503; releases the leases of pop answers that never reached their client; closes the
    /// pool.
    pub async fn shutdown(self) -> anyhow::Result<()> {
        let _ = self.shutdown.send(true);
        self.service.stop_waiting();
        let mut serve = self.serve;
        let served = match tokio::time::timeout(self.grace, &mut serve).await {
            Ok(done) => Some(done),
            Err(_) => {
                tracing::warn!(
                    grace_seconds = self.grace.as_secs(),
                    "grace period over: cutting off the requests still running"
                );
                let _ = self.cut_off.send(true);
                // A cut-off answer is small: a connection still busy after this is writing
                // to a client that does not read, and is abandoned.
                match tokio::time::timeout(CUT_OFF_WAIT, &mut serve).await {
                    Ok(done) => Some(done),
                    Err(_) => {
                        serve.abort();
                        None
                    }
                }
            }
        };
        self.service.finish().await;
        if let Some(done) = served {
            done??;
        }
        Ok(())
    }
}

/// How long cut-off requests get to write their 503 before their connections are abandoned.
const CUT_OFF_WAIT: Duration = Duration::from_secs(1);

/// Answers are small and latency-bound: Nagle's algorithm would hold them back waiting for
/// the client's delayed ACK (tens of milliseconds).
fn no_delay(tcp: &tokio::net::TcpStream) {
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::warn!(error = %e, "TCP_NODELAY");
    }
}

/// Resolves on Ctrl-C or SIGTERM. The handlers are installed when this is called, not when
/// the future is first polled: a caller that announces it is serving after calling it can
/// be stopped gracefully at once (a SIGTERM before the handler exists kills the process).
pub fn termination() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
    async move {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
    }
}
