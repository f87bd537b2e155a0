//! Wakeups between brokers that share a database: this broker's identity, its outbox of
//! announcements for the others, whether any other broker is in view, and the notes they
//! travel in. After a push commits, the others hear which queues got messages and which
//! partitions were written or created; after an ack or a seek that left a consumer group
//! something to read, which queue and group. Sending and listening (one dedicated connection
//! per broker, after commit, never inside a push's transaction) are the service layer's.
//!
//! Every broker also says hello every few seconds; a broker that has heard no other broker
//! lately announces nothing, so running one broker costs nothing. A broker that hears from
//! one it has not heard lately (just started, or back after its connection was down) answers
//! with a hello of its own at once: otherwise the newcomer would announce nothing to it until
//! its next round, up to a round later. Each such broker is answered once, not each of its
//! notes: the newcomer may answer the answer (the answerer was new to it too), and that
//! second answer comes from a broker already known, so it goes unanswered.
//!
//! Like every wakeup, a note is a hint: one lost (a connection drop, a broker restarting)
//! costs the parked pop its timer recheck, never a message.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use uuid::Uuid;

use crate::announcement::Announcement;
use crate::lock;

/// PostgreSQL refuses a notification payload of 8000 bytes or more.
pub const MAX_NOTE: usize = 7900;
/// A broker not heard from for this long is gone: with no other broker in view, pushes are
/// not announced at all, so a lone broker pays nothing for the feature.
const PRESENCE: Duration = Duration::from_secs(15);
/// Announcements queued at most; past it the outbox is merged (one per tenant) in place, so
/// a connection that is down for a while holds the outbox to its tenants' size.
const MAX_OUTBOX: usize = 10_000;
/// Other brokers remembered at most. Far more than one database's brokers; past it (after
/// forgetting the ones gone) a newcomer is not answered and hears this broker at its next
/// round, so the map and the answers stay bounded whatever the channel carries.
const MAX_PEERS: usize = 1024;

/// This broker's outbox and identity.
pub struct Peers {
    id: Uuid,
    enabled: bool,
    /// When a note from another broker last arrived, in ms since `epoch` (0: never).
    heard: AtomicU64,
    /// The other brokers by id: when each was last heard, in ms since `epoch`. Only notes
    /// touch it (a lock per note, none per push): it decides whom to answer.
    known: Mutex<HashMap<Uuid, u64>>,
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
            known: Mutex::default(),
            epoch: Instant::now(),
            outbox: Mutex::default(),
            waiting: Notify::new(),
        }
    }

    /// This broker's id in its notes.
    pub fn id(&self) -> Uuid {
        self.id
    }

    /// Whether announcements go to the other brokers at all (`PEER_WAKEUPS`).
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Queues a committed write's announcement for the other brokers, if there are any.
    pub fn publish(&self, a: &Announcement) {
        if !self.others_in_view() {
            return;
        }
        let mut outbox = lock(&self.outbox);
        if outbox.len() >= MAX_OUTBOX {
            let merged = merge(std::mem::take(&mut *outbox));
            *outbox = merged;
        }
        outbox.push(a.clone());
        drop(outbox);
        self.waiting.notify_one();
    }

    /// Fires when the outbox has something to send.
    pub async fn outbox_filled(&self) {
        self.waiting.notified().await
    }

    /// Everything in the outbox, merged per tenant, and the outbox emptied.
    pub fn take_outbox(&self) -> Vec<Announcement> {
        let batch = std::mem::take(&mut *lock(&self.outbox));
        if batch.is_empty() {
            return batch;
        }
        merge(batch)
    }

    pub fn outbox_len(&self) -> usize {
        lock(&self.outbox).len()
    }

    /// Whether another broker has been heard from lately.
    pub fn others_in_view(&self) -> bool {
        let heard = self.heard.load(Ordering::Relaxed);
        heard != 0 && in_view(heard, self.now())
    }

    /// How many other brokers are remembered (some may be gone, until a newcomer prunes them).
    pub fn known_len(&self) -> usize {
        lock(&self.known).len()
    }

    /// Reads a note from the channel: another broker's note (which counts as hearing from
    /// it), `None` for this broker's own.
    pub fn receive(&self, note: &str) -> Option<Result<Heard, String>> {
        let (sender, announcements) = match decode(note, self.id)? {
            Ok(decoded) => decoded,
            Err(e) => return Some(Err(e)),
        };
        let now = self.now();
        self.heard.store(now, Ordering::Relaxed);
        let answer = meet(&mut lock(&self.known), sender, now);
        Some(Ok(Heard {
            announcements,
            answer,
        }))
    }

    /// Milliseconds since `epoch`, never 0 (which means "never" in `heard`).
    fn now(&self) -> u64 {
        (self.epoch.elapsed().as_millis() as u64).max(1)
    }

    /// A note with nothing to announce: "I am here".
    pub fn hello(&self) -> String {
        format!("{} []", self.id.simple())
    }

    /// The notes that carry `announcements`, each within [`MAX_NOTE`].
    pub fn notes(&self, announcements: Vec<Announcement>) -> Vec<String> {
        encode(self.id, announcements)
    }
}

/// Another broker's note, read.
#[derive(Debug, PartialEq)]
pub struct Heard {
    pub announcements: Vec<Announcement>,
    /// Its sender had not been heard lately, so it may not have heard this broker either
    /// (it just started, or its connection was down): say hello now, not at the next round.
    pub answer: bool,
}

/// Whether a broker last heard at `heard` is still there at `now` (ms since the epoch).
fn in_view(heard: u64, now: u64) -> bool {
    now <= heard + PRESENCE.as_millis() as u64
}

/// Notes that `sender` was heard at `now`; true when it was not in view before, so it is to
/// be answered (once: its next notes find it in view). Brokers gone are forgotten when a
/// newcomer needs the room.
fn meet(known: &mut HashMap<Uuid, u64>, sender: Uuid, now: u64) -> bool {
    if let Some(last) = known.get_mut(&sender) {
        let answer = !in_view(*last, now);
        *last = now;
        return answer;
    }
    if known.len() >= MAX_PEERS {
        known.retain(|_, last| in_view(*last, now));
        if known.len() >= MAX_PEERS {
            return false;
        }
    }
    known.insert(sender, now);
    true
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
        ephemeral: BTreeMap<(String, String), usize>,
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
        for (q, g, n) in a.ephemeral {
            let seen = m.ephemeral.entry((q, g)).or_default();
            *seen = (*seen).max(n);
        }
    }
    by_tenant
        .into_iter()
        .map(|(tenant, m)| Announcement {
            tenant,
            queues: m.queues.into_iter().collect(),
            created: m.created.into_iter().collect(),
            partitions: m.partitions.into_iter().collect(),
            reopened: m.reopened.into_iter().collect(),
            // This broker's alone: a peer's pops walk for a reopened group.
            reopened_at: Vec::new(),
            ephemeral: m
                .ephemeral
                .into_iter()
                .map(|((q, g), n)| (q, g, n))
                .collect(),
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
    let fits = |list: &[Announcement]| prefix.len() + json(list).len() <= MAX_NOTE;
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

fn json(list: &[Announcement]) -> String {
    serde_json::to_string(list).expect("announcements serialise")
}

/// Halves an announcement until each part fits in one note on its own. A part always
/// shrinks: a single queue with nothing else is far below the limit (names are at most 512
/// bytes).
fn split(a: Announcement) -> Vec<Announcement> {
    if SENDER_PREFIX + json(std::slice::from_ref(&a)).len() <= MAX_NOTE {
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
    } else if a.ephemeral.len() > 1 {
        b.ephemeral = a.ephemeral.split_off(a.ephemeral.len() / 2);
    } else if !a.ephemeral.is_empty() && (!a.queues.is_empty() || !a.reopened.is_empty()) {
        b.ephemeral = std::mem::take(&mut a.ephemeral);
    } else if !a.queues.is_empty() && !a.reopened.is_empty() {
        b.reopened = std::mem::take(&mut a.reopened);
    } else {
        // Cannot be halved: the partition lists are hints, the queue wakeup is what matters.
        // (A lone reopened group whose names overflow a note is dropped: its pops recheck.)
        a.created.clear();
        a.partitions.clear();
        if SENDER_PREFIX + json(std::slice::from_ref(&a)).len() > MAX_NOTE {
            a.reopened.clear();
        }
        return vec![a];
    }
    let mut parts = split(a);
    parts.extend(split(b));
    parts
}

/// The sender and announcements of a note from another broker; `None` for this broker's own.
fn decode(note: &str, me: Uuid) -> Option<Result<(Uuid, Vec<Announcement>), String>> {
    let (sender, body) = match note.split_once(' ') {
        Some(parts) => parts,
        None => return Some(Err("no sender".into())),
    };
    let sender = match Uuid::parse_str(sender) {
        Ok(id) => id,
        Err(e) => return Some(Err(format!("sender: {e}"))),
    };
    if sender == me {
        return None;
    }
    Some(
        serde_json::from_str(body)
            .map(|a| (sender, a))
            .map_err(|e| e.to_string()),
    )
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
        assert_eq!(decode(&notes[0], me), Some(Ok((other, a))));
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
        assert!(notes.iter().all(|n| n.len() <= MAX_NOTE), "every note fits");
        let back: Vec<Announcement> = notes
            .iter()
            .flat_map(|n| decode(n, me).unwrap().unwrap().1)
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
        assert_eq!(p.outbox_len(), 0, "alone: nothing queued");
        assert_eq!(p.receive(&p.hello()), None, "its own note is skipped");
        assert!(!p.others_in_view());
        let heard = p.receive(&Peers::new(true).hello()).unwrap().unwrap();
        assert!(heard.announcements.is_empty());
        assert!(p.others_in_view(), "another's hello counts");
        p.publish(&ann("t", "q", 1, 1));
        assert_eq!(p.outbox_len(), 1);
        let off = Peers::new(false);
        off.publish(&ann("t", "q", 1, 1));
        assert_eq!(off.outbox_len(), 0, "turned off: nothing queued");
    }

    #[test]
    fn a_broker_answers_each_newcomer_once() {
        let (p, q, r) = (Peers::new(true), Peers::new(true), Peers::new(true));
        let answer = |note: &str| p.receive(note).unwrap().unwrap().answer;
        assert!(answer(&q.hello()), "a new broker's hello is answered");
        assert!(!answer(&q.hello()), "its next hello is not");
        let note = q.notes(vec![ann("t", "q", 1, 1)]).remove(0);
        assert!(!answer(&note), "nor its announcements");
        assert!(answer(&r.hello()), "another newcomer is answered too");
        assert!(!answer(&q.hello()));
        assert_eq!(p.known_len(), 2);
    }

    #[test]
    fn a_broker_gone_quiet_is_answered_again_when_it_returns() {
        let mut known = HashMap::new();
        let q = Uuid::now_v7();
        let presence = PRESENCE.as_millis() as u64;
        assert!(meet(&mut known, q, 1));
        assert!(!meet(&mut known, q, 1 + presence), "still in view");
        assert!(
            meet(&mut known, q, 2 + 2 * presence),
            "silent past the presence window: it may not hear us either"
        );
    }

    #[test]
    fn a_million_newcomers_keep_the_peers_bounded() {
        let mut known = HashMap::new();
        let presence = PRESENCE.as_millis() as u64;
        for i in 0..1_000_000u64 {
            // Five hundred brokers a presence window, each heard once: the gone make room.
            let now = 1 + (i / 500) * (presence + 1);
            assert!(meet(&mut known, Uuid::from_u128(i.into()), now), "{i}");
            assert!(known.len() <= MAX_PEERS);
        }
    }

    #[test]
    fn past_the_bound_a_newcomer_waits_for_the_next_round() {
        let mut known = HashMap::new();
        for i in 0..MAX_PEERS as u128 {
            assert!(meet(&mut known, Uuid::from_u128(i), 1));
        }
        assert!(
            !meet(&mut known, Uuid::now_v7(), 2),
            "every one still in view"
        );
        assert_eq!(known.len(), MAX_PEERS);
        assert!(
            !meet(&mut known, Uuid::from_u128(0), 2),
            "the known stay known"
        );
    }

    #[test]
    fn a_full_outbox_is_merged_in_place() {
        let p = Peers::new(true);
        p.receive(&Peers::new(true).hello());
        for i in 0..(3 * MAX_OUTBOX) {
            p.publish(&ann(&format!("t{}", i % 3), "q", 1, 0));
        }
        assert!(p.outbox_len() <= MAX_OUTBOX, "{}", p.outbox_len());
        let sent = p.take_outbox();
        assert_eq!(sent.len(), 3, "one announcement per tenant");
        assert_eq!(p.outbox_len(), 0);
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
