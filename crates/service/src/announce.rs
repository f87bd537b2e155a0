//! Announcements: after a commit, what it wrote or freed is told to this broker's parked pops
//! (wakeups, ready lists, sweeps) and, through the peer link, to the other brokers of the
//! database. Never before commit: a pop woken earlier could miss what it was woken for.
//!
//! The peer link is one dedicated connection per broker (`regent_store::notify`): it sends
//! the outbox as notes (batched, at most one statement per [`MIN_GAP`], and only while
//! another broker's hello has been heard lately) and applies the other brokers' notes as if
//! their writes were local. It says hello when it connects, every [`HELLO_EVERY`], and at
//! once to a broker it had not heard lately, so a broker that starts next to running ones
//! knows them within milliseconds (and announces to them), not at their next round.

use std::sync::Arc;
use std::time::Duration;

use regent_memory::Announcement;
use regent_store::notify::PeerLink;

use crate::Service;

/// Notes wait at most this long behind the previous one: under load one statement carries
/// every push of the interval, and the notifying connection's commits stay few (at 5 ms,
/// 200 a second cost small pushes about a tenth of their rate on two cores).
const MIN_GAP: Duration = Duration::from_millis(10);
/// Every broker says it is there this often, even with nothing to announce.
const HELLO_EVERY: Duration = Duration::from_secs(5);
/// How long a lost connection waits before it is opened again.
const RECONNECT: Duration = Duration::from_secs(1);

impl Service {
    /// After a commit: wakes this broker's parked pops and hints their claims, and queues the
    /// same for the other brokers.
    pub(crate) fn announce(&self, a: &Announcement) {
        if a.is_empty() {
            return;
        }
        self.runtime.hint(a);
        self.runtime.peers.publish(a);
    }
}

/// The peer link's life: connects, serves until stopped, reconnects after a lost connection.
pub(crate) async fn peer_link(s: Arc<Service>) {
    if !s.runtime.peers.enabled() {
        return;
    }
    let mut stop = s.peers_stop.subscribe();
    loop {
        let link = tokio::select! {
            l = PeerLink::open(&s.database_url) => l,
            _ = stop.wait_for(|s| *s) => return,
        };
        match link {
            Ok(link) => {
                tracing::debug!(broker = %s.runtime.peers.id(), "peer wakeups connected");
                if serve(&s, link, &mut stop).await {
                    return;
                }
            }
            Err(e) => tracing::warn!(error = %e, "peer wakeups: cannot connect"),
        }
        tokio::select! {
            _ = tokio::time::sleep(RECONNECT) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}

enum Event {
    Outbox,
    Hello,
    Note(String),
    Stop,
}

/// One connection's life; true when stopped, false when the connection was lost.
async fn serve(
    s: &Service,
    mut link: PeerLink,
    stop: &mut tokio::sync::watch::Receiver<bool>,
) -> bool {
    let peers = &s.runtime.peers;
    // A hello first: brokers already running start announcing to this one at once.
    if !sent(link.notify(&[peers.hello()]).await) {
        return false;
    }
    let mut last_sent = tokio::time::Instant::now();
    loop {
        let event = tokio::select! {
            _ = peers.outbox_filled() => Event::Outbox,
            _ = tokio::time::sleep_until(last_sent + HELLO_EVERY) => Event::Hello,
            note = link.notes.recv() => match note {
                Some(note) => Event::Note(note),
                None => return false,
            },
            _ = stop.wait_for(|s| *s) => Event::Stop,
        };
        match event {
            Event::Outbox => {
                tokio::time::sleep_until(last_sent + MIN_GAP).await;
                last_sent = tokio::time::Instant::now();
                if !sent(flush(s, &link).await) {
                    return false;
                }
            }
            Event::Hello => {
                last_sent = tokio::time::Instant::now();
                if !sent(link.notify(&[peers.hello()]).await) {
                    return false;
                }
            }
            Event::Note(note) => {
                if hear(s, &note) {
                    // The newcomer's pushes wake nothing here until it has heard us.
                    last_sent = tokio::time::Instant::now();
                    if !sent(link.notify(&[peers.hello()]).await) {
                        return false;
                    }
                }
            }
            Event::Stop => {
                // What the shutdown itself announced (released leases) still goes out.
                let _ = flush(s, &link).await;
                return true;
            }
        }
    }
}

/// Applies a note from the channel as if its writes were local; true when its sender is to
/// be answered with a hello (a broker not heard lately, answered once).
fn hear(s: &Service, note: &str) -> bool {
    match s.runtime.peers.receive(note) {
        Some(Ok(heard)) => {
            heard.announcements.iter().for_each(|a| s.runtime.hint(a));
            heard.answer
        }
        Some(Err(e)) => {
            tracing::warn!(error = %e, "peer wakeups: unreadable note");
            false
        }
        None => false,
    }
}

fn sent(r: Result<(), regent_store::StoreError>) -> bool {
    if let Err(e) = &r {
        tracing::warn!(error = %e, "peer wakeups: notify failed");
    }
    r.is_ok()
}

/// Sends everything in the outbox as one statement.
async fn flush(s: &Service, link: &PeerLink) -> Result<(), regent_store::StoreError> {
    let batch = s.runtime.peers.take_outbox();
    if batch.is_empty() {
        return Ok(());
    }
    link.notify(&s.runtime.peers.notes(batch)).await
}
