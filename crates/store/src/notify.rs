//! The one connection per broker that carries wakeups between brokers: it LISTENs on
//! [`CHANNEL`] and sends this broker's own notes with `pg_notify`, in transactions of their
//! own, after the pushes they describe have committed. A push transaction never notifies:
//! NOTIFY makes every committing transaction that uses it queue on one lock, and the commit
//! path of every push would pay for that.

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_postgres::{AsyncMessage, Client, Socket, Statement};

use crate::sql::notify::{LISTEN, NOTIFY};
use crate::StoreError;

pub const CHANNEL: &str = "regent_wakeups";

/// A listening connection: send notes with [`PeerLink::notify`], receive every note on the
/// channel (this broker's own included) from `notes`. `notes` ends when the connection does.
pub struct PeerLink {
    client: Client,
    /// `pg_notify` over an array of payloads, prepared at open.
    send: Statement,
    pub notes: mpsc::UnboundedReceiver<String>,
    driver: JoinHandle<()>,
}

impl PeerLink {
    pub async fn open(url: &str) -> anyhow::Result<PeerLink> {
        let target = crate::tls::target(url)?;
        // A failure below drops the client, which closes the connection and ends its driver.
        let (client, notes, driver) = match target.tls {
            Some(tls) => {
                let (client, conn) = target.config.connect(tls).await?;
                drive(client, conn)
            }
            None => {
                let (client, conn) = target.config.connect(tokio_postgres::NoTls).await?;
                drive(client, conn)
            }
        };
        client.batch_execute(LISTEN).await?;
        let send = client.prepare(NOTIFY).await?;
        Ok(PeerLink {
            client,
            send,
            notes,
            driver,
        })
    }

    /// Sends every payload in one statement, so one transaction.
    pub async fn notify(&self, payloads: &[String]) -> Result<(), StoreError> {
        self.client
            .execute(&self.send, &[&CHANNEL, &payloads])
            .await?;
        Ok(())
    }
}

impl Drop for PeerLink {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

/// Drives the connection in a task of its own, passing its notifications on.
fn drive<T>(
    client: Client,
    mut conn: tokio_postgres::Connection<Socket, T>,
) -> (Client, mpsc::UnboundedReceiver<String>, JoinHandle<()>)
where
    T: tokio_postgres::tls::TlsStream + Unpin + Send + 'static,
{
    let (tx, notes) = mpsc::unbounded_channel();
    let driver = tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| conn.poll_message(cx));
        while let Some(m) = messages.next().await {
            match m {
                Ok(AsyncMessage::Notification(n)) => {
                    if tx.send(n.payload().to_string()).is_err() {
                        return;
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "peer wakeup connection lost");
                    return;
                }
            }
        }
    });
    (client, notes, driver)
}

#[cfg(test)]
mod tests {
    /// `sql/notify.sql` writes the channel out; it must be the one notes are sent to.
    #[test]
    fn the_link_listens_on_the_channel_notes_are_sent_to() {
        let listen = format!("LISTEN {}", super::CHANNEL);
        assert!(crate::sql::notify::LISTEN.ends_with(&listen));
    }
}
