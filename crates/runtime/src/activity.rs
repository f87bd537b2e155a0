//! What this broker has done since it started, for `/metrics`: plain counters, one atomic add
//! per request on the hot paths. Per broker, not per tenant or queue: the metrics routes are
//! public, so they name nothing a tenant owns.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

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

pub struct Activity {
    pub started: Instant,
    requests: [AtomicU64; 4],
    messages: [AtomicU64; 4],
}

impl Default for Activity {
    fn default() -> Self {
        Activity {
            started: Instant::now(),
            requests: Default::default(),
            messages: Default::default(),
        }
    }
}

impl Activity {
    /// One request of `op`.
    pub fn request(&self, op: Op) {
        self.requests[op as usize].fetch_add(1, Relaxed);
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
        a.request(Op::Push);
        a.carried(Op::Push, 3);
        a.request(Op::Push);
        a.carried(Op::Push, 2);
        a.request(Op::Ack);
        a.carried(Op::Ack, 1);
        assert_eq!((a.requests(Op::Push), a.messages(Op::Push)), (2, 5));
        assert_eq!((a.requests(Op::Ack), a.messages(Op::Ack)), (1, 1));
        assert_eq!(a.requests(Op::Pop), 0);
    }

    #[test]
    fn reads_this_process() {
        let p = ProcessUse::now();
        assert!(p.resident_bytes > 0 && p.virtual_bytes >= p.resident_bytes);
    }
}
