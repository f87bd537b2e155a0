//! What this broker has done since it started, for `/metrics`: plain counters, one atomic add
//! per request on the hot paths. Per broker, not per tenant or queue: the metrics routes are
//! public, so they name nothing a tenant owns.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use crate::histogram::{Histogram, Snapshot};

/// The operations counted, as the `op` label of the Prometheus families.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Push,
    Pop,
    Ack,
    Transaction,
}

impl Op {
    pub const ALL: [Op; 4] = [Op::Push, Op::Pop, Op::Ack, Op::Transaction];

    pub fn name(self) -> &'static str {
        match self {
            Op::Push => "push",
            Op::Pop => "pop",
            Op::Ack => "ack",
            Op::Transaction => "transaction",
        }
    }
}

/// What became of one item of a push or an ack, as the `outcome` label counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Queued,
    Buffered,
    Duplicate,
    PushFailed,
    Acked,
    DeadLettered,
    AckRefused,
}

impl Outcome {
    pub const PUSH: [Outcome; 4] = [
        Outcome::Queued,
        Outcome::Buffered,
        Outcome::Duplicate,
        Outcome::PushFailed,
    ];
    pub const ACK: [Outcome; 3] = [Outcome::Acked, Outcome::DeadLettered, Outcome::AckRefused];

    pub fn name(self) -> &'static str {
        match self {
            Outcome::Queued => "queued",
            Outcome::Buffered => "buffered",
            Outcome::Duplicate => "duplicate",
            Outcome::PushFailed => "failed",
            Outcome::Acked => "acked",
            Outcome::DeadLettered => "dead_lettered",
            Outcome::AckRefused => "refused",
        }
    }
}

/// What ended a parked long-poll's wait before its next attempt, as the `by` label counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recheck {
    /// An announcement: a write through this broker, or another broker's note.
    Wakeup,
    /// The recheck timer (or the deadline): whatever should have woken it did not.
    Timer,
}

impl Recheck {
    pub const ALL: [Recheck; 2] = [Recheck::Wakeup, Recheck::Timer];

    pub fn name(self) -> &'static str {
        match self {
            Recheck::Wakeup => "wakeup",
            Recheck::Timer => "timer",
        }
    }
}

pub struct Activity {
    pub started: Instant,
    outcomes: [AtomicU64; 7],
    /// Parked long-polls' attempts after a wait, by what ended it: how often wakeups (local
    /// or a peer's note) reach the pops they are for, and how often the timer stands in.
    rechecks: [AtomicU64; 2],
    /// Claims waiting pops skipped, their group quiet (`crate::quiet`).
    walks_skipped: AtomicU64,
    requests: [AtomicU64; 4],
    messages: [AtomicU64; 4],
    /// How long each operation took in the service, from its start to its answer (a pop's
    /// long-poll wait included).
    took: [Histogram; 4],
    /// From a message's append to its first delivery.
    first_delivery: Histogram,
    /// Answers with status 503, whatever the route: what an alert on "the broker cannot
    /// serve" counts.
    unavailable: AtomicU64,
}

impl Default for Activity {
    fn default() -> Self {
        Activity {
            started: Instant::now(),
            outcomes: Default::default(),
            rechecks: Default::default(),
            walks_skipped: Default::default(),
            requests: Default::default(),
            messages: Default::default(),
            took: Default::default(),
            first_delivery: Default::default(),
            unavailable: Default::default(),
        }
    }
}

/// Times one request: its duration is observed when it is dropped, whichever way the
/// request ends.
#[must_use = "a request is timed until its timer is dropped"]
pub struct Timer<'a> {
    activity: &'a Activity,
    op: Op,
    start: Instant,
}

impl Drop for Timer<'_> {
    fn drop(&mut self) {
        self.activity.took[self.op as usize].observe(self.start.elapsed());
    }
}

impl Activity {
    /// One request of `op`, timed until the returned timer is dropped.
    pub fn request(&self, op: Op) -> Timer<'_> {
        self.requests[op as usize].fetch_add(1, Relaxed);
        Timer {
            activity: self,
            op,
            start: Instant::now(),
        }
    }

    /// Items of a push or an ack that ended so.
    pub fn ended(&self, outcome: Outcome, items: usize) {
        self.outcomes[outcome as usize].fetch_add(items as u64, Relaxed);
    }

    pub fn outcomes(&self, outcome: Outcome) -> u64 {
        self.outcomes[outcome as usize].load(Relaxed)
    }

    /// A message delivered for the first time this long after its append.
    pub fn first_delivered(&self, after: std::time::Duration) {
        self.first_delivery.observe(after);
    }

    pub fn took(&self, op: Op) -> Snapshot {
        self.took[op as usize].snapshot()
    }

    pub fn first_delivery(&self) -> Snapshot {
        self.first_delivery.snapshot()
    }

    /// Messages an `op` request carried: pushed and stored, delivered, or acknowledged.
    pub fn carried(&self, op: Op, messages: usize) {
        self.messages[op as usize].fetch_add(messages as u64, Relaxed);
    }

    pub fn requests(&self, op: Op) -> u64 {
        self.requests[op as usize].load(Relaxed)
    }

    pub fn messages(&self, op: Op) -> u64 {
        self.messages[op as usize].load(Relaxed)
    }

    /// A parked long-poll attempts again, its wait ended `by` this.
    pub fn rechecked(&self, by: Recheck) {
        self.rechecks[by as usize].fetch_add(1, Relaxed);
    }

    pub fn rechecks(&self, by: Recheck) -> u64 {
        self.rechecks[by as usize].load(Relaxed)
    }

    /// Waiting pops took nothing without a claim: their group was quiet.
    pub fn skipped_walk(&self) {
        self.walks_skipped.fetch_add(1, Relaxed);
    }

    pub fn walks_skipped(&self) -> u64 {
        self.walks_skipped.load(Relaxed)
    }

    pub fn answered_unavailable(&self) {
        self.unavailable.fetch_add(1, Relaxed);
    }

    pub fn unavailable(&self) -> u64 {
        self.unavailable.load(Relaxed)
    }
}

/// The process's own resource use, from the kernel.
pub struct ProcessUse {
    pub resident_bytes: u64,
    pub virtual_bytes: u64,
    pub cpu_user_micros: u64,
    pub cpu_system_micros: u64,
}

impl ProcessUse {
    /// Reads `/proc/self/statm` and getrusage(2); what cannot be read is 0.
    pub fn now() -> ProcessUse {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(0) as u64;
        let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
        let mut fields = statm
            .split_whitespace()
            .map(|f| f.parse::<u64>().unwrap_or(0));
        let virtual_pages = fields.next().unwrap_or(0);
        let resident_pages = fields.next().unwrap_or(0);
        // SAFETY: getrusage writes into the zeroed struct we own.
        let usage = unsafe {
            let mut u: libc::rusage = std::mem::zeroed();
            libc::getrusage(libc::RUSAGE_SELF, &mut u);
            u
        };
        let micros =
            |t: libc::timeval| t.tv_sec.max(0) as u64 * 1_000_000 + t.tv_usec.max(0) as u64;
        ProcessUse {
            resident_bytes: resident_pages * page,
            virtual_bytes: virtual_pages * page,
            cpu_user_micros: micros(usage.ru_utime),
            cpu_system_micros: micros(usage.ru_stime),
        }
    }
}

/// The machine's host name, as the fleet's samples name this broker: the kernel's
/// (`/proc/sys/kernel/hostname`), else gethostname(2); `unknown` when neither answers.
pub fn hostname() -> String {
    let from_proc = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    if !from_proc.is_empty() {
        return from_proc;
    }
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most `len` bytes into the buffer we own.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len() - 1) };
    let len = buf.iter().position(|&b| b == 0).unwrap_or(0);
    match std::str::from_utf8(&buf[..len]) {
        Ok(h) if rc == 0 && !h.is_empty() => h.to_string(),
        _ => "unknown".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_this_host() {
        let h = hostname();
        assert!(!h.is_empty() && !h.contains('\n'), "{h:?}");
    }

    #[test]
    fn counts_requests_and_messages_per_operation() {
        let a = Activity::default();
        drop(a.request(Op::Push));
        a.carried(Op::Push, 3);
        drop(a.request(Op::Push));
        a.carried(Op::Push, 2);
        let timing = a.request(Op::Ack);
        a.carried(Op::Ack, 1);
        assert_eq!((a.requests(Op::Push), a.messages(Op::Push)), (2, 5));
        assert_eq!((a.requests(Op::Ack), a.messages(Op::Ack)), (1, 1));
        assert_eq!(a.requests(Op::Pop), 0);
        assert_eq!((a.took(Op::Push).count, a.took(Op::Ack).count), (2, 0));
        drop(timing);
        assert_eq!(a.took(Op::Ack).count, 1, "timed when the request ends");
    }

    #[test]
    fn reads_this_process() {
        let p = ProcessUse::now();
        assert!(p.resident_bytes > 0 && p.virtual_bytes >= p.resident_bytes);
    }
}
