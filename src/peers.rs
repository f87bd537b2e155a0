//! Wakeups between brokers that share a database. After a push commits, this broker tells
//! the others which queues got messages and which partitions were written or created; after
//! an ack or a seek that left a consumer group something to read, which queue and group. A
//! broker that hears it wakes its parked long-polls and hints their claims exactly as for a
//! write of its own. Notes travel over one dedicated connection per broker
//! ([`crate::store::notify`]), batched, after commit: never inside a push's transaction.
//!
//! Every broker also says hello every few seconds; a broker that has heard no other broker
//! lately announces nothing, so running one broker costs nothing.
//!
//! Like every wakeup, a note is a hint: one lost (a connection drop, a broker restarting)
//! costs the parked pop its timer recheck, never a message.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::sync::{watch, Notify};
use uuid::Uuid;

use crate::store::notify::{PeerLink, MAX_PAYLOAD};

/// What a committed write tells parked pops, here or on another broker.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Announcement {
    #[serde(rename = "t")]
    pub tenant: String,
    /// Queue name and how many of its partitions got messages.
    #[serde(rename = "q")]
    pub queues: Vec<(String, usize)>,
    /// (queue id, partition id) of partitions created.
    #[serde(rename = "c", default, skip_serializing_if = "Vec::is_empty")]
    pub created: Vec<(Uuid, Uuid)>,
    /// (queue id, partition id) of partitions appended to (or freed).
    #[serde(rename = "p", default, skip_serializing_if = "Vec::is_empty")]
    pub partitions: Vec<(Uuid, Uuid)>,
    /// (queue, consumer group) left messages to read by an ack, a released lease or a seek:
    /// only that group's pops have something new to claim.
    #[serde(rename = "r", default, skip_serializing_if = "Vec::is_empty")]
    pub reopened: Vec<(String, String)>,
}

/// Notes wait at most this long behind the previous one: under load one statement carries
/// every push of the interval, and the notifying connection's commits stay few (at 5 ms,
/// 200 a second cost small pushes about a tenth of their rate on two cores).
const MIN_GAP: Duration = Duration::from_millis(10);
/// Every broker says it is there this often, even with nothing to announce.
const HELLO_EVERY: Duration = Duration::from_secs(5);
/// A broker not heard from for this long is gone: with no other broker in view, pushes are
/// not announced at all, so a lone broker pays nothing for the feature.
const PRESENCE: Duration = Duration::from_secs(15);
/// How long a lost connection waits before it is opened again.
const RECONNECT: Duration = Duration::from_secs(1);

/// This broker's outbox and identity.
pub struct Peers {
    id: Uuid,
    enabled: bool,
    /// When a note from another broker last arrived, in ms since `epoch` (0: never).
    heard: AtomicU64,
    epoch: Instant,
    outbox: Mutex<Vec<Announcement>>,
    waiting: Notify,
}

impl Peers {
    pub fn new(enabled: bool) -> Peers {
        Peers {
            id: Uuid::now_v7(),
            enabled,
            heard: AtomicU64::new(0),
            epoch: Instant::now(),
            outbox: Mutex::default(),
            waiting: Notify::new(),
        }
    }

    /// Queues a committed write's announcement for the other brokers, if there are any.
    pub fn publish(&self, a: &Announcement) {
        if !self.others_in_view() {
            return;
        }
        self.outbox
            .lock()
            .expect("peer outbox poisoned")
            .push(a.clone());
        self.waiting.notify_one();
    }

    /// Whether another broker has been heard from lately.
    pub fn others_in_view(&self) -> bool {
        let heard = self.heard.load(Ordering::Relaxed);
        heard != 0 && self.epoch.elapsed().as_millis() as u64 <= heard + PRESENCE.as_millis() as u64
    }

    fn heard_from_another(&self) {
        let now = (self.epoch.elapsed().as_millis() as u64).max(1);
        self.heard.store(now, Ordering::Relaxed);
    }

    /// Sends this broker's notes and applies the others' until `stop`; reconnects after a
    /// lost connection. `apply` gets each announcement another broker made.
    pub async fn run(
        self: Arc<Self>,
        url: String,
        apply: impl Fn(Announcement) + Send + 'static,
        mut stop: watch::Receiver<bool>,
    ) {
        if !self.enabled {
            return;
        }
        loop {
            let link = tokio::select! {
                l = PeerLink::open(&url) => l,
                _ = stop.wait_for(|s| *s) => return,
            };
            match link {
                Ok(link) => {
                    tracing::debug!(broker = %self.id, "peer wakeups connected");
                    if self.serve(link, &apply, &mut stop).await {
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

    /// One connection's life; true when stopped, false when the connection was lost.
    async fn serve(
        &self,
        mut link: PeerLink,
        apply: &impl Fn(Announcement),
        stop: &mut watch::Receiver<bool>,
    ) -> bool {
        // A hello first: brokers already running start announcing to this one at once.
        if let Err(e) = link.notify(&[hello(self.id)]).await {
            tracing::warn!(error = %e, "peer wakeups: notify failed");
            return false;
        }
        let mut last_sent = tokio::time::Instant::now();
        loop {
            let event = tokio::select! {
                _ = self.waiting.notified() => Event::Outbox,
                _ = tokio::time::sleep_until(last_sent + HELLO_EVERY) => Event::Hello,
                note = link.notes.recv() => match note {
                    Some(note) => Event::Note(note),
                    None => return false,
                },
                _ = stop.wait_for(|s| *s) => Event::Stop,
            };
            match event {
                Event::Outbox => {}
                Event::Hello => {
                    last_sent = tokio::time::Instant::now();
                    if let Err(e) = link.notify(&[hello(self.id)]).await {
                        tracing::warn!(error = %e, "peer wakeups: notify failed");
                        return false;
                    }
                    continue;
                }
                Event::Note(note) => {
                    match decode(&note, self.id) {
                        Some(Ok(batch)) => {
                            self.heard_from_another();
                            batch.into_iter().for_each(apply)
                        }
                        Some(Err(e)) => {
                            tracing::warn!(error = %e, "peer wakeups: unreadable note")
                        }
                        None => {}
                    }
                    continue;
                }
                Event::Stop => {
                    // What the shutdown itself announced (released leases) still goes out.
                    let _ = self.flush(&link).await;
                    return true;
                }
            }
            tokio::time::sleep_until(last_sent + MIN_GAP).await;
            last_sent = tokio::time::Instant::now();
            if let Err(e) = self.flush(&link).await {
                tracing::warn!(error = %e, "peer wakeups: notify failed");
                return false;
            }
        }
    }

    /// Sends everything in the outbox as one statement.
    async fn flush(&self, link: &PeerLink) -> Result<(), crate::store::StoreError> {
        let batch = std::mem::take(&mut *self.outbox.lock().expect("peer outbox poisoned"));
        if batch.is_empty() {
            return Ok(());
        }
        link.notify(&encode(self.id, merge(batch))).await
    }
}

enum Event {
    Outbox,
    Hello,
    Note(String),
    Stop,
}

/// One announcement per tenant: queues keep the largest partition count seen, partitions
/// and reopened groups are listed once.
fn merge(batch: Vec<Announcement>) -> Vec<Announcement> {
    #[derive(Default)]
    struct Merged {
        queues: BTreeMap<String, usize>,
        created: BTreeSet<(Uuid, Uuid)>,
        partitions: BTreeSet<(Uuid, Uuid)>,
        reopened: BTreeSet<(String, String)>,
    }
    let mut by_tenant: BTreeMap<String, Merged> = BTreeMap::new();
    for a in batch {
        let m = by_tenant.entry(a.tenant).or_default();
        for (q, n) in a.queues {
            let seen = m.queues.entry(q).or_default();
            *seen = (*seen).max(n);
        }
        m.created.extend(a.created);
        m.partitions.extend(a.partitions);
        m.reopened.extend(a.reopened);
    }
    by_tenant
        .into_iter()
        .map(|(tenant, m)| Announcement {
            tenant,
            queues: m.queues.into_iter().collect(),
            created: m.created.into_iter().collect(),
            partitions: m.partitions.into_iter().collect(),
            reopened: m.reopened.into_iter().collect(),
        })
        .collect()
}

/// A note's sender prefix: 32 hex digits and a space.
const SENDER_PREFIX: usize = 33;

/// A note is the sender's id, a space, and a JSON array of announcements; the id comes first
/// so a broker skips its own notes without parsing them.
fn encode(sender: Uuid, announcements: Vec<Announcement>) -> Vec<String> {
    let prefix = format!("{} ", sender.simple());
    debug_assert_eq!(prefix.len(), SENDER_PREFIX);
    let mut notes = Vec::new();
    let mut pending: Vec<Announcement> = Vec::new();
    let fits = |list: &[Announcement]| prefix.len() + json(list).len() <= MAX_PAYLOAD;
    for a in announcements.into_iter().flat_map(split) {
        pending.push(a);
        if !fits(&pending) {
            let last = pending.pop().expect("just pushed");
            if !pending.is_empty() {
                notes.push(format!("{prefix}{}", json(&pending)));
            }
            pending = vec![last];
        }
    }
    if !pending.is_empty() {
        notes.push(format!("{prefix}{}", json(&pending)));
    }
    notes
}

/// A note with nothing to announce: "I am here".
fn hello(sender: Uuid) -> String {
    format!("{} []", sender.simple())
}

fn json(list: &[Announcement]) -> String {
    serde_json::to_string(list).expect("announcements serialise")
}

/// Halves an announcement until each part fits in one note on its own. A part always
/// shrinks: a single queue with nothing else is far below the limit (names are at most 512
/// bytes).
fn split(a: Announcement) -> Vec<Announcement> {
    if SENDER_PREFIX + json(std::slice::from_ref(&a)).len() <= MAX_PAYLOAD {
        return vec![a];
    }
    let halve = |v: &mut Vec<(Uuid, Uuid)>| v.split_off(v.len() / 2);
    let mut b = Announcement {
        tenant: a.tenant.clone(),
        ..Default::default()
    };
    let mut a = a;
    if a.queues.len() > 1 {
        b.queues = a.queues.split_off(a.queues.len() / 2);
    } else if a.created.len() > 1 {
        b.created = halve(&mut a.created);
    } else if a.partitions.len() > 1 {
        b.partitions = halve(&mut a.partitions);
    } else if a.reopened.len() > 1 {
        b.reopened = a.reopened.split_off(a.reopened.len() / 2);
    } else if !a.queues.is_empty() && !a.reopened.is_empty() {
        b.reopened = std::mem::take(&mut a.reopened);
    } else {
        // Cannot be halved: the partition lists are hints, the queue wakeup is what matters.
        // (A lone reopened group whose names overflow a note is dropped: its pops recheck.)
        a.created.clear();
        a.partitions.clear();
        if SENDER_PREFIX + json(std::slice::from_ref(&a)).len() > MAX_PAYLOAD {
            a.reopened.clear();
        }
        return vec![a];
    }
    let mut parts = split(a);
    parts.extend(split(b));
    parts
}

/// The announcements of a note from another broker; `None` for this broker's own.
fn decode(note: &str, me: Uuid) -> Option<Result<Vec<Announcement>, String>> {
    let (sender, body) = match note.split_once(' ') {
        Some(parts) => parts,
        None => return Some(Err("no sender".into())),
    };
    if sender == me.simple().to_string() {
        return None;
    }
    Some(serde_json::from_str(body).map_err(|e| e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ann(tenant: &str, queue: &str, n: usize, parts: usize) -> Announcement {
        let q = Uuid::now_v7();
        Announcement {
            tenant: tenant.into(),
            queues: vec![(queue.into(), n)],
            partitions: (0..parts).map(|_| (q, Uuid::now_v7())).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn notes_round_trip_and_skip_their_sender() {
        let (me, other) = (Uuid::now_v7(), Uuid::now_v7());
        let mut a = vec![ann("t", "q", 2, 2), ann("u", "odd \"name\" ✓", 1, 1)];
        a[1].reopened = vec![("odd \"name\" ✓".into(), "g".into())];
        let notes = encode(other, a.clone());
        assert_eq!(notes.len(), 1);
        assert_eq!(decode(&notes[0], me), Some(Ok(a)));
        assert_eq!(decode(&notes[0], other), None);
        assert!(matches!(decode("garbage", me), Some(Err(_))));
    }

    #[test]
    fn large_announcements_split_into_notes_that_fit_and_lose_nothing() {
        let me = Uuid::now_v7();
        let mut big = ann("t", "q", 500, 500);
        big.reopened = (0..300)
            .map(|i| ("q".into(), format!("{i:0>60}")))
            .collect();
        let small = ann("t", "r", 1, 1);
        let notes = encode(Uuid::now_v7(), vec![big.clone(), small.clone()]);
        assert!(notes.len() > 1);
        assert!(
            notes.iter().all(|n| n.len() <= MAX_PAYLOAD),
            "every note fits"
        );
        let back: Vec<Announcement> = notes
            .iter()
            .flat_map(|n| decode(n, me).unwrap().unwrap())
            .collect();
        let parts: BTreeSet<(Uuid, Uuid)> =
            back.iter().flat_map(|a| a.partitions.clone()).collect();
        let sent: BTreeSet<(Uuid, Uuid)> = big
            .partitions
            .iter()
            .chain(&small.partitions)
            .copied()
            .collect();
        assert!(parts == sent, "every partition arrives");
        let queues: BTreeSet<String> = back
            .iter()
            .flat_map(|a| a.queues.iter().map(|(q, _)| q.clone()))
            .collect();
        assert_eq!(queues, ["q".to_string(), "r".to_string()].into());
        let reopened: BTreeSet<(String, String)> =
            back.iter().flat_map(|a| a.reopened.clone()).collect();
        assert_eq!(reopened, big.reopened.iter().cloned().collect());
    }

    #[test]
    fn a_broker_announces_only_with_another_in_view() {
        let p = Peers::new(true);
        p.publish(&ann("t", "q", 1, 1));
        assert!(!p.others_in_view());
        assert!(p.outbox.lock().unwrap().is_empty(), "alone: nothing queued");
        let other = Uuid::now_v7();
        assert_eq!(decode(&hello(other), p.id), Some(Ok(vec![])));
        p.heard_from_another();
        assert!(p.others_in_view());
        p.publish(&ann("t", "q", 1, 1));
        assert_eq!(p.outbox.lock().unwrap().len(), 1);
        let off = Peers::new(false);
        off.publish(&ann("t", "q", 1, 1));
        assert!(
            off.outbox.lock().unwrap().is_empty(),
            "turned off: nothing queued"
        );
    }

    #[test]
    fn a_batch_merges_per_tenant() {
        let mut a = ann("t", "q", 1, 1);
        let b = Announcement {
            queues: vec![("q".into(), 3)],
            partitions: a.partitions.clone(),
            ..a.clone()
        };
        a.created = vec![(Uuid::nil(), Uuid::nil())];
        a.reopened = vec![("q".into(), "g".into())];
        let mut c = a.clone();
        c.reopened.push(("q".into(), "h".into()));
        let merged = merge(vec![a.clone(), b, c, ann("u", "q", 1, 0)]);
        assert_eq!(merged.len(), 2);
        assert_eq!(merged[0].queues, vec![("q".to_string(), 3)]);
        assert_eq!(merged[0].partitions, a.partitions);
        assert_eq!(merged[0].created, a.created);
        assert_eq!(
            merged[0].reopened,
            [("q".to_string(), "g".to_string()), ("q".into(), "h".into())],
            "each (queue, group) once"
        );
        assert_eq!(merged[1].tenant, "u");
    }
}
