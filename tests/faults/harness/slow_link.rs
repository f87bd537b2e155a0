//! A slow, lossy link between a broker and PostgreSQL, in user space (`tc netem` is not on
//! the test machines): a TCP proxy on loopback that forwards each direction's bytes a fixed
//! delay after they arrive, and holds every `lose_every`-th chunk back as long again as TCP's
//! minimum retransmission timeout (200 ms), as a lost segment would be, with the chunks after
//! it waiting behind it in order (TCP delivers in order: a loss stalls the stream).

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// What a lost segment costs: Linux's minimum retransmission timeout.
const RETRANSMISSION: Duration = Duration::from_millis(200);

#[derive(Clone, Copy)]
pub struct Link {
    /// One way.
    pub delay: Duration,
    /// Every n-th chunk read (per direction and connection) is "lost"; 0: none.
    pub lose_every: u64,
}

/// The proxy: listening on `port`, stopped on drop.
pub struct SlowLink {
    pub port: u16,
    task: JoinHandle<()>,
}

impl SlowLink {
    pub async fn start(upstream: SocketAddr, link: Link) -> SlowLink {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let port = listener.local_addr().unwrap().port();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(forward(client, upstream, link));
            }
        });
        SlowLink { port, task }
    }
}

impl Drop for SlowLink {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn forward(client: TcpStream, upstream: SocketAddr, link: Link) {
    let Ok(server) = TcpStream::connect(upstream).await else {
        return;
    };
    let _ = (client.set_nodelay(true), server.set_nodelay(true));
    let (client_in, client_out) = client.into_split();
    let (server_in, server_out) = server.into_split();
    tokio::join!(
        pipe(client_in, server_out, link),
        pipe(server_in, client_out, link)
    );
}

/// One direction: each chunk read is written when it falls due, never before the one ahead.
async fn pipe(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, link: Link) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let read = async move {
        let mut buf = vec![0u8; 64 * 1024];
        let mut chunks = 0u64;
        while let Ok(n @ 1..) = from.read(&mut buf).await {
            chunks += 1;
            let mut due = Instant::now() + link.delay;
            if link.lose_every > 0 && chunks.is_multiple_of(link.lose_every) {
                due += RETRANSMISSION;
            }
            if tx.send((due, buf[..n].to_vec())).is_err() {
                break;
            }
        }
    };
    let write = async move {
        let mut after = Instant::now();
        while let Some((due, bytes)) = rx.recv().await {
            after = after.max(due);
            tokio::time::sleep_until(after).await;
            if to.write_all(&bytes).await.is_err() {
                break;
            }
        }
        let _ = to.shutdown().await;
    };
    tokio::join!(read, write);
}
