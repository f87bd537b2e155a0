//! Starting and stopping the broker: migrations, the pool, the HTTP listener, background
//! jobs, and a graceful shutdown that answers parked long-polls at once instead of holding
//! the process for their full timeout.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::broker::encryption::PayloadCipher;
use crate::config::Config;
use crate::http::{router, AppState};
use crate::store::{purge, Store};
use crate::wakeup::Wakeups;

/// A broker serving on a bound listener.
pub struct RunningServer {
    pub addr: SocketAddr,
    /// True when the port speaks HTTPS (`TLS_CERT_FILE` and `TLS_KEY_FILE`).
    pub tls: bool,
    pub state: Arc<AppState>,
    shutdown: watch::Sender<bool>,
    cut_off: watch::Sender<bool>,
    serve: JoinHandle<std::io::Result<()>>,
    purge: JoinHandle<()>,
    peers: JoinHandle<()>,
    stop_peers: watch::Sender<bool>,
}

/// Migrates the database, then serves on `listener` until [`RunningServer::shutdown`].
pub async fn start(
    config: Config,
    database_url: &str,
    listener: TcpListener,
) -> anyhow::Result<RunningServer> {
    // Before the database: a broken certificate should not wait behind a migration.
    let tls = match config.tls_files()? {
        Some((cert, key)) => Some(crate::tls::server_config(cert, key)?),
        None => None,
    };
    Store::migrate(database_url).await?;
    let store = Store::connect(database_url, config.db_pool_size)?;
    let cipher = config
        .queen_encryption_key
        .as_deref()
        .map(PayloadCipher::from_hex)
        .transpose()?;
    let (shutdown, shutting_down) = watch::channel(false);
    let (cut_off, grace_over) = watch::channel(false);
    let auth = crate::http::auth::Auth::from_config(&config)?;
    let limits = crate::limits::Limiter::new(config.tenant_limits()?);
    if let Some(auth) = &auth {
        auth.start().await;
    }
    let state = Arc::new(AppState {
        store: store.clone(),
        wakeups: Wakeups::default(),
        config: config.clone(),
        cipher,
        pushes: Default::default(),
        acks: Default::default(),
        cursor_sweeps: Default::default(),
        ready: Default::default(),
        deliveries: crate::deliveries::Deliveries::new(Duration::from_secs(
            config.tx_index_retention_seconds,
        )),
        auth,
        limits,
        shutting_down: shutting_down.clone(),
        grace_over,
        handovers: Default::default(),
        activity: Default::default(),
        peers: Arc::new(crate::peers::Peers::new(config.peer_wakeups)),
    });
    // Stopped last, after the releases of the shutdown have been announced.
    let (stop_peers, peers_stopped) = watch::channel(false);
    let peers = {
        let hints = state.clone();
        tokio::spawn(state.peers.clone().run(
            database_url.to_string(),
            move |a| hints.hint(&a),
            peers_stopped,
        ))
    };
    state.pushes.start(state.clone()).await;
    state.acks.start(state.clone()).await;
    let addr = listener.local_addr()?;
    let app = router(state.clone());
    let stop = shutting_down.clone();
    let serve = match tls.clone() {
        None => {
            let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| no_delay(tcp));
            tokio::spawn(async move {
                axum::serve(listener, app)
                    .with_graceful_shutdown(stopped(stop))
                    .await
            })
        }
        Some(tls) => {
            let listener = crate::tls::TlsListener::new(listener, tls, no_delay);
            tokio::spawn(async move {
                axum::serve(listener, app)
                    .with_graceful_shutdown(stopped(stop))
                    .await
            })
        }
    };
    let purge = tokio::spawn(purge_loop(
        store,
        Duration::from_secs(config.tx_index_retention_seconds),
        Duration::from_secs(config.purge_interval_seconds.max(1)),
        shutting_down,
    ));
    tracing::info!(%addr, tls = tls.is_some(), "regent listening");
    Ok(RunningServer {
        addr,
        tls: tls.is_some(),
        state,
        shutdown,
        cut_off,
        serve,
        purge,
        peers,
        stop_peers,
    })
}

impl RunningServer {
    /// Stops accepting and wakes parked long-polls so they answer their empty shape; waits
    /// for in-flight requests up to `SHUTDOWN_GRACE_SECONDS`, then cuts off the rest with a
    /// 503; releases the leases of pop answers that never reached their client; closes the
    /// pool.
    pub async fn shutdown(self) -> anyhow::Result<()> {
        let _ = self.shutdown.send(true);
        let grace = Duration::from_secs(self.state.config.shutdown_grace_seconds);
        let mut serve = self.serve;
        let served = match tokio::time::timeout(grace, &mut serve).await {
            Ok(done) => Some(done),
            Err(_) => {
                tracing::warn!(
                    grace_seconds = grace.as_secs(),
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
        self.purge.abort();
        // Still listening while requests finished: releases below announce to the others.
        self.state.handovers.release_remaining(&self.state).await;
        let _ = self.stop_peers.send(true);
        let mut peers = self.peers;
        if tokio::time::timeout(CUT_OFF_WAIT, &mut peers)
            .await
            .is_err()
        {
            peers.abort();
        }
        self.state.store.close();
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

async fn stopped(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// The transaction index's purge clock.
async fn purge_loop(
    store: Store,
    retention: Duration,
    every: Duration,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        match purge::purge_tx_index(&store, retention).await {
            Ok(0) => {}
            Ok(n) => tracing::debug!(purged = n, "transaction index purged"),
            Err(e) => tracing::warn!(error = %e, "transaction index purge failed"),
        }
    }
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn termination() {
    let ctrl_c = tokio::signal::ctrl_c();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("SIGTERM handler");
    tokio::select! {
        _ = ctrl_c => {}
        _ = term.recv() => {}
    }
}
