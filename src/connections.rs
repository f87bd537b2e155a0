//! The accept loop (axum's `serve`, with the limits a production listener needs): at most
//! `HTTP_MAX_CONNECTIONS` connections at once (the next waits in the kernel's backlog until
//! one closes, instead of costing a socket and a task each without bound), and a header read
//! timeout (`HTTP_HEADER_TIMEOUT_MS`) that closes a connection which does not send a whole
//! request header in time. hyper starts that timer whenever a connection waits for a
//! request, the first or the next, so it is also the keep-alive idle timeout: an idle
//! connection is closed after it. A request in flight (a parked long-poll) is not waiting
//! for a header, so no timer runs against it.
//!
//! Graceful shutdown as axum's: stop accepting (the port closes), tell every connection to
//! finish its request in flight and close, wait until all have.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use axum::serve::Listener;
use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::sync::{watch, Semaphore};

/// The read buffer hyper keeps for a request head (and the body's first bytes): 1 MiB.
const HYPER_MAX_BUF: usize = 1 << 20;
const HYPER_MAX_HEADERS: usize = 1000;

/// What bounds the connections of one listener.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_connections: usize,
    pub header_timeout: Duration,
}

/// Serves `app` on `listener` until `stop` turns true, then drains the connections.
pub async fn serve<L>(
    mut listener: L,
    app: Router,
    limits: Limits,
    mut stop: watch::Receiver<bool>,
) -> std::io::Result<()>
where
    L: Listener,
    L::Addr: Debug,
{
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    // Connections hold a sender of `closing` and wait for it to close (the loop drops the
    // receiver when it stops); the loop waits for `open` to lose every receiver.
    let (closing_tx, closing_rx) = watch::channel(());
    let (open_tx, open_rx) = watch::channel(());
    let stopping = stop.wait_for(|s| *s);
    tokio::pin!(stopping);
    loop {
        let slot = tokio::select! {
            s = slots.clone().acquire_owned() => s.expect("the semaphore is never closed"),
            _ = &mut stopping => break,
        };
        let (io, addr) = tokio::select! {
            conn = listener.accept() => conn,
            _ = &mut stopping => break,
        };
        tracing::trace!(?addr, "connection accepted");
        let closing = closing_tx.clone();
        let open = open_rx.clone();
        let app = app.clone();
        tokio::spawn(async move {
            connection(io, app, limits, closing).await;
            drop((slot, open));
        });
    }
    drop(listener);
    drop(closing_rx);
    drop(open_rx);
    open_tx.closed().await;
    Ok(())
}

/// One connection, served until it closes or, once `closing` closes, until its request in
/// flight is answered.
async fn connection<I>(io: I, app: Router, limits: Limits, closing: watch::Sender<()>)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let mut http = http1::Builder::new();
    // hyper's own head limits far above the JSON 431 of `regent_http::head` (128 KiB, 100
    // fields), so a client meets that one; beyond these hyper answers an empty 431.
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(HYPER_MAX_BUF)
        .max_headers(HYPER_MAX_HEADERS)
        .keep_alive(true);
    let conn = http.serve_connection(TokioIo::new(io), TowerToHyperService::new(app));
    tokio::pin!(conn);
    let closed = closing.closed();
    tokio::pin!(closed);
    let mut draining = false;
    loop {
        tokio::select! {
            done = conn.as_mut() => {
                if let Err(e) = done {
                    tracing::trace!(error = %e, "connection ended");
                }
                return;
            }
            _ = &mut closed, if !draining => {
                draining = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}
