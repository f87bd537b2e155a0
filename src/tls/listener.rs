//! The HTTPS listener: an `axum::serve` listener whose connections arrive already decrypted,
//! so plain HTTP and HTTPS share one serving path (the same hyper settings, the same graceful
//! shutdown). Each handshake runs in its own task under a deadline: a client that stalls or
//! fails its handshake holds up no one else.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rustls::ServerConfig;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

/// Long enough for a slow client on a bad link, short enough that idle sockets which never
/// say hello do not pile up.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Finished handshakes waiting for the server to take them.
const BACKLOG: usize = 128;

pub struct TlsListener {
    local_addr: SocketAddr,
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    accepting: JoinHandle<()>,
}

impl TlsListener {
    /// Starts accepting on `tcp` at once; `on_accept` runs on every accepted socket before its
    /// handshake.
    pub fn new(
        tcp: TcpListener,
        config: Arc<ServerConfig>,
        on_accept: fn(&TcpStream),
    ) -> io::Result<TlsListener> {
        let local_addr = tcp.local_addr()?;
        let (tx, ready) = mpsc::channel(BACKLOG);
        let accepting = tokio::spawn(accept_loop(tcp, TlsAcceptor::from(config), on_accept, tx));
        Ok(TlsListener {
            local_addr,
            ready,
            accepting,
        })
    }
}

/// `axum::serve` drops its listener when it stops accepting; the port must close then.
impl Drop for TlsListener {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(connection) => connection,
            // The accept loop only ends when this listener is dropped.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.local_addr)
    }
}

async fn accept_loop(
    tcp: TcpListener,
    acceptor: TlsAcceptor,
    on_accept: fn(&TcpStream),
    ready: mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>,
) {
    loop {
        let (stream, peer) = match tcp.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                accept_error(e).await;
                continue;
            }
        };
        on_accept(&stream);
        let acceptor = acceptor.clone();
        let ready = ready.clone();
        tokio::spawn(async move {
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(tls)) => {
                    // Err: the server has stopped accepting; the connection just closes.
                    let _ = ready.send((tls, peer)).await;
                }
                Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
            }
        });
    }
}

/// As `axum::serve` does for plain TCP: errors of one connection are skipped; others (out of
/// file descriptors) are waited out, since retrying at once would spin.
async fn accept_error(e: io::Error) {
    if matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    ) {
        return;
    }
    tracing::error!(error = %e, "accept failed");
    tokio::time::sleep(Duration::from_secs(1)).await;
}
