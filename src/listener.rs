//! The HTTPS listener: an `axum::serve::Listener` whose connections arrive already decrypted,
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
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

/// Long enough for a slow client on a bad link, short enough that idle sockets which never
/// say hello do not pile up.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Finished handshakes waiting for the server to take them.
const BACKLOG: usize = 128;

/// Owns the listening socket itself, so the port closes the moment the accept loop (`connections`) drops the
/// listener at shutdown. (An accept loop in a task of its own would close it only when the
/// runtime gets round to an abort, after `shutdown` has returned.)
pub struct TlsListener {
    tcp: TcpListener,
    acceptor: TlsAcceptor,
    on_accept: fn(&TcpStream),
    handshaken: mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>,
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
}

impl TlsListener {
    /// `on_accept` runs on every accepted socket before its handshake.
    pub fn new(
        tcp: TcpListener,
        config: Arc<ServerConfig>,
        on_accept: fn(&TcpStream),
    ) -> TlsListener {
        let (handshaken, ready) = mpsc::channel(BACKLOG);
        TlsListener {
            tcp,
            acceptor: TlsAcceptor::from(config),
            on_accept,
            handshaken,
            ready,
        }
    }

    /// The handshake runs in a task of its own, so a client that stalls holds up no one; a
    /// task still running when the listener is gone finds the channel closed and drops its
    /// connection.
    fn handshake(&self, stream: TcpStream, peer: SocketAddr) {
        (self.on_accept)(&stream);
        let acceptor = self.acceptor.clone();
        let handshaken = self.handshaken.clone();
        tokio::spawn(async move {
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(tls)) => {
                    let _ = handshaken.send((tls, peer)).await;
                }
                Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
            }
        });
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    /// Accepts sockets and hands out finished handshakes from one loop; both branches are
    /// cancel-safe, as the accept loop drops this future when shutdown begins.
    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            tokio::select! {
                // Never `None`: this listener holds a sender itself.
                Some(connection) = self.ready.recv() => return connection,
                accepted = self.tcp.accept() => match accepted {
                    Ok((stream, peer)) => self.handshake(stream, peer),
                    Err(e) => accept_error(e).await,
                },
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.tcp.local_addr()
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
