//! The maintenance switches as this broker last read them (spec §15), per tenant, so the
//! push and pop paths decide without a query. Replaced whole by each poll of the database
//! (`regent_service::maintenance`), and set at once on the broker that flips one.
//!
//! A poll's read can be older than a flip made here while it ran: the poll started its
//! query, the flip committed and was set, then the poll's answer arrived. Applying it would
//! undo the flip until the next poll (pushes accepted straight into the log under push
//! maintenance), so a poll says which [`Switches::generation`] it read at and is dropped if
//! a flip came since.
//!
//! Bounded by the database, not by clients: only tenants with a switch on, or pushes in the
//! buffer, have an entry, and only an admin of that tenant can put one there.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::RwLock;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Switch {
    /// Push maintenance: pushes wait in the buffer.
    pub push: bool,
    /// Pop maintenance: pops answer `paused` at once.
    pub pop: bool,
    /// Pushes wait in the buffer; until it is drained, new ones queue behind them.
    pub buffered: bool,
}

#[derive(Default)]
pub struct Switches {
    /// Whether any tenant has an entry: the hot paths' only cost when none has.
    any: AtomicBool,
    /// Flips set here so far; changed only under `by_tenant`'s write lock.
    generation: AtomicU64,
    by_tenant: RwLock<HashMap<String, Switch>>,
}

impl Switches {
    fn get(&self, tenant: &str) -> Switch {
        if !self.any.load(Ordering::Relaxed) {
            return Switch::default();
        }
        let map = self.by_tenant.read().unwrap_or_else(|p| p.into_inner());
        map.get(tenant).copied().unwrap_or_default()
    }

    /// Whether the tenant's pushes go to the buffer: maintenance is on, or earlier pushes
    /// still wait there (so that arrival order holds).
    pub fn buffering(&self, tenant: &str) -> bool {
        let s = self.get(tenant);
        s.push || s.buffered
    }

    pub fn pop_paused(&self, tenant: &str) -> bool {
        self.get(tenant).pop
    }

    /// Taken before reading the database, and handed to [`Switches::replace`] with what was read.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Everything as read from the database since `read_at`; the tenants whose pops it pauses
    /// (their parked pops are to be woken, to answer `paused` now rather than at their next
    /// recheck). Nothing changes if a flip was set here since `read_at`: the read may predate
    /// it, and the next poll reads it.
    pub fn replace(
        &self,
        read_at: u64,
        all: impl IntoIterator<Item = (String, Switch)>,
    ) -> Vec<String> {
        let map: HashMap<String, Switch> = all.into_iter().collect();
        let mut held = self.by_tenant.write().unwrap_or_else(|p| p.into_inner());
        if self.generation.load(Ordering::Acquire) != read_at {
            return Vec::new();
        }
        let paused = map
            .iter()
            .filter(|(t, s)| s.pop && !held.get(*t).is_some_and(|h| h.pop))
            .map(|(t, _)| t.clone())
            .collect();
        self.any.store(!map.is_empty(), Ordering::Relaxed);
        *held = map;
        paused
    }

    /// One tenant's switches, as just written by this broker; whether that paused its pops.
    pub fn set(&self, tenant: &str, s: Switch) -> bool {
        let mut held = self.by_tenant.write().unwrap_or_else(|p| p.into_inner());
        let was = held.get(tenant).is_some_and(|h| h.pop);
        Self::put(&mut held, tenant, s);
        self.any.store(!held.is_empty(), Ordering::Relaxed);
        self.generation.fetch_add(1, Ordering::AcqRel);
        s.pop && !was
    }

    /// The tenant's buffer was found empty by this broker's drain: its pushes go straight to
    /// the log again. Only `buffered` changes, so a flip set here meanwhile stands.
    pub fn drained(&self, tenant: &str) {
        let mut held = self.by_tenant.write().unwrap_or_else(|p| p.into_inner());
        if let Some(&now) = held.get(tenant) {
            let now = Switch {
                buffered: false,
                ..now
            };
            Self::put(&mut held, tenant, now);
            self.any.store(!held.is_empty(), Ordering::Relaxed);
        }
    }

    fn put(held: &mut HashMap<String, Switch>, tenant: &str, s: Switch) {
        if s == Switch::default() {
            held.remove(tenant);
        } else {
            held.insert(tenant.to_string(), s);
        }
    }

    pub fn len(&self) -> usize {
        self.by_tenant.read().map(|m| m.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenant_buffers_while_maintenance_is_on_or_its_buffer_is_not_empty() {
        let s = Switches::default();
        assert!(!s.buffering("a") && !s.pop_paused("a"));
        s.set(
            "a",
            Switch {
                push: true,
                ..Switch::default()
            },
        );
        assert!(s.buffering("a") && !s.buffering("b"));
        s.replace(
            s.generation(),
            [(
                "a".to_string(),
                Switch {
                    buffered: true,
                    ..Switch::default()
                },
            )],
        );
        assert!(s.buffering("a"), "maintenance off, buffer not drained yet");
        let paused = s.replace(
            s.generation(),
            [(
                "b".to_string(),
                Switch {
                    pop: true,
                    ..Switch::default()
                },
            )],
        );
        assert!(!s.buffering("a") && s.pop_paused("b") && !s.buffering("b"));
        assert_eq!(paused, ["b"], "b's pops are paused by this read");
        let pop = Switch {
            pop: true,
            ..Switch::default()
        };
        assert!(
            s.replace(s.generation(), [("b".to_string(), pop)])
                .is_empty(),
            "still paused"
        );
        assert!(!s.set("b", pop), "already paused");
        assert!(!s.set("b", Switch::default()));
        assert!(s.is_empty() && !s.pop_paused("b"));
    }

    #[test]
    fn a_poll_read_before_a_flip_here_does_not_undo_it() {
        let s = Switches::default();
        let read_at = s.generation();
        let push = Switch {
            push: true,
            ..Switch::default()
        };
        s.set("a", push);
        // The poll's read began before the flip committed: it saw no switch on.
        assert!(s.replace(read_at, []).is_empty());
        assert!(
            s.buffering("a"),
            "the flip stands until a poll that read after it"
        );
        s.replace(s.generation(), []);
        assert!(!s.buffering("a"), "a later read is applied");
    }

    #[test]
    fn a_drain_clears_only_the_buffered_flag() {
        let s = Switches::default();
        let both = Switch {
            push: true,
            buffered: true,
            ..Switch::default()
        };
        s.set("a", both);
        s.drained("a");
        assert!(
            s.buffering("a"),
            "push maintenance flipped on meanwhile stands"
        );
        s.set(
            "a",
            Switch {
                buffered: true,
                ..Switch::default()
            },
        );
        s.drained("a");
        assert!(!s.buffering("a") && s.is_empty());
    }
}
