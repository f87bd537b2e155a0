//! Turns: how many of a tenant's requests one broker works on at once (`concurrency` in
//! `TENANT_LIMITS`). A request past the tenant's number waits for a turn, first come first
//! served, instead of taking cores, pool connections and fused flushes from every other
//! tenant. Waiting is not refusing: nothing is answered 429 for it, so a client that keeps
//! under its rate is only ever slowed, never failed.
//!
//! A long-poll waiting for messages is not work: the turn is given back for the wait
//! ([`parked`]) and taken again when the pop wakes, so a tenant's parked pops never keep its
//! own pushes (which would wake them) from running.
//!
//! Bounded: past [`MAX_TENANTS`] tenants, those with no request holding or waiting for a turn
//! are forgotten (the same as new).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::limiter::MAX_TENANTS;
use crate::lock;

/// One semaphore per tenant with a `concurrency`, made on its first request.
#[derive(Default)]
pub struct Turns {
    gates: Mutex<HashMap<Arc<str>, Arc<Semaphore>>>,
}

tokio::task_local! {
    /// The turn the request running in this task holds, for [`parked`] to give back.
    static HELD: Arc<Turn>;
}

/// A request's turn: its tenant's gate, and the permit while the request works.
pub struct Turn {
    gate: Arc<Semaphore>,
    permit: Mutex<Option<OwnedSemaphorePermit>>,
}

impl Turns {
    /// Waits for a turn of `tenant`, which may run `concurrency` requests at once.
    pub async fn take(&self, tenant: &Arc<str>, concurrency: u32) -> Turn {
        let gate = self.gate(tenant, concurrency);
        let permit = gate
            .clone()
            .acquire_owned()
            .await
            .expect("gates never close");
        Turn {
            gate,
            permit: Mutex::new(Some(permit)),
        }
    }

    fn gate(&self, tenant: &Arc<str>, concurrency: u32) -> Arc<Semaphore> {
        let mut gates = lock(&self.gates);
        if !gates.contains_key(tenant) && gates.len() >= MAX_TENANTS {
            // Held only by the map: no request holds or waits for one of its turns.
            gates.retain(|_, g| Arc::strong_count(g) > 1);
        }
        gates
            .entry(tenant.clone())
            .or_insert_with(|| Arc::new(Semaphore::new(concurrency as usize)))
            .clone()
    }

    /// Tenants with a gate.
    pub fn tenants(&self) -> usize {
        lock(&self.gates).len()
    }
}

impl Turn {
    /// Runs `work` holding this turn, which [`parked`] can give back during its waits; the
    /// turn ends with it.
    pub async fn hold<F: Future>(self, work: F) -> F::Output {
        HELD.scope(Arc::new(self), work).await
    }
}

/// Runs `wait` without the task's turn, if it holds one, and takes a turn again after it
/// (waiting behind the requests that queued meanwhile, as a new request would).
pub async fn parked<F: Future>(wait: F) -> F::Output {
    let Ok(turn) = HELD.try_with(Arc::clone) else {
        return wait.await;
    };
    drop(lock(&turn.permit).take());
    let out = wait.await;
    let permit = turn.gate.clone().acquire_owned().await;
    *lock(&turn.permit) = Some(permit.expect("gates never close"));
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn tenant(name: &str) -> Arc<str> {
        name.into()
    }

    async fn soon<F: Future>(f: F) -> Option<F::Output> {
        tokio::time::timeout(Duration::from_millis(50), f)
            .await
            .ok()
    }

    #[tokio::test]
    async fn a_tenant_past_its_concurrency_waits_and_others_do_not() {
        let turns = Turns::default();
        let a = tenant("a");
        let first = turns.take(&a, 1).await;
        assert!(soon(turns.take(&a, 1)).await.is_none(), "a's second waits");
        assert!(
            soon(turns.take(&tenant("b"), 1)).await.is_some(),
            "b does not"
        );
        drop(first);
        assert!(
            soon(turns.take(&a, 1)).await.is_some(),
            "a's turn came back"
        );
    }

    #[tokio::test]
    async fn a_parked_wait_gives_the_turn_back_and_takes_it_again() {
        let turns = Arc::new(Turns::default());
        let a = tenant("a");
        let (wake, woken) = tokio::sync::oneshot::channel::<()>();
        let first = turns.take(&a, 1).await;
        let t = turns.clone();
        let (a2, a3) = (a.clone(), a.clone());
        let pop = tokio::spawn(first.hold(async move {
            parked(async move { woken.await.ok() }).await;
            // Holding the turn again: another request of `a` waits.
            soon(t.take(&a2, 1)).await.is_none()
        }));
        // The pop is parked: a push of the same tenant gets its turn, then wakes the pop.
        let push = tokio::time::timeout(Duration::from_secs(5), turns.take(&a3, 1))
            .await
            .expect("the parked pop gave its turn back");
        drop(push);
        wake.send(()).unwrap();
        assert!(pop.await.unwrap(), "the woken pop holds a turn again");
    }

    #[test]
    fn past_the_bound_only_gates_in_use_are_kept() {
        let turns = Turns::default();
        let busy = turns.gate(&tenant("busy"), 1);
        for i in 0..MAX_TENANTS {
            turns.gate(&tenant(&format!("t-{i}")), 1);
        }
        assert_eq!(turns.tenants(), 2, "busy, and the newest");
        assert!(Arc::ptr_eq(&busy, &turns.gate(&tenant("busy"), 1)));
    }
}
