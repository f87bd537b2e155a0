//! Maintenance modes (spec §15), per tenant: push maintenance holds pushes in the buffer (in
//! PostgreSQL) and appends them in arrival order when it ends; pop maintenance answers every
//! pop `paused` at once. Each broker polls the switches (and whether anything is buffered)
//! every [`POLL`], so a switch flipped on one broker is seen by all within it; the broker
//! that flips one sees it at once.
//!
//! The drain runs on every broker's poll, one tenant at a time under a transaction-scoped
//! advisory lock, so a buffered push is appended exactly once: its removal from the buffer
//! and its append commit together.

use std::sync::Arc;
use std::time::Duration;

use regent_memory::switches::Switch;
use regent_memory::Announcement;
use regent_store::in_transaction;
use regent_store::maintenance::{self, Drain, Switches};

use crate::{Error, Service};

/// How often each broker reads the switches.
pub const POLL: Duration = Duration::from_millis(250);
/// Buffered messages appended per drain transaction: short transactions, so a drain of
/// millions never holds partition locks for long.
const DRAIN_BATCH: i64 = 1000;

/// A tenant's switches and how many of its pushes wait.
#[derive(Clone, Copy, Debug)]
pub struct Status {
    pub push: bool,
    pub pop: bool,
    pub buffered: i64,
}

fn switch(s: Switches) -> Switch {
    Switch {
        push: s.push,
        pop: s.pop,
        buffered: s.buffered,
    }
}

impl Service {
    /// Sets the tenant's push switch, pop switch, or both, for every broker of the database.
    pub async fn set_maintenance(
        &self,
        tenant: &str,
        push: Option<bool>,
        pop: Option<bool>,
    ) -> Result<Status, Error> {
        let client = self.store.client().await?;
        maintenance::set(&client, tenant, push, pop).await?;
        let (switches, buffered) = maintenance::get(&client, tenant).await?;
        if self.runtime.switches.set(tenant, switch(switches)) {
            self.runtime.wakeups.paused(tenant);
        }
        Ok(Status {
            push: switches.push,
            pop: switches.pop,
            buffered,
        })
    }

    pub async fn maintenance(&self, tenant: &str) -> Result<Status, Error> {
        let client = self.store.client().await?;
        let (switches, buffered) = maintenance::get(&client, tenant).await?;
        Ok(Status {
            push: switches.push,
            pop: switches.pop,
            buffered,
        })
    }

    /// Appends one batch of the tenant's buffered pushes, and announces it.
    async fn drain_once(&self, tenant: &str) -> Result<Drain, Error> {
        let drain = in_transaction!(self.store, |tx| {
            maintenance::drain(tx, tenant, DRAIN_BATCH, self.window()).await
        })?;
        if let Drain::Appended(partitions) = &drain {
            let mut queues: Vec<(String, usize)> = Vec::new();
            for (_, queue, _) in partitions {
                match queues.iter_mut().find(|(q, _)| q == queue) {
                    Some((_, n)) => *n += 1,
                    None => queues.push((queue.clone(), 1)),
                }
            }
            self.announce(&Announcement {
                tenant: tenant.to_string(),
                queues,
                created: Vec::new(),
                partitions: partitions.iter().map(|(q, _, p)| (*q, *p)).collect(),
                reopened: Vec::new(),
                reopened_at: Vec::new(),
                ephemeral: Vec::new(),
            });
        }
        Ok(drain)
    }

    /// One poll: read every switch, then drain the tenants whose maintenance has ended.
    async fn poll_switches(&self) -> Result<(), Error> {
        let read_at = self.runtime.switches.generation();
        let all = {
            let client = self.store.client().await?;
            maintenance::poll(&client).await?
        };
        let paused = self
            .runtime
            .switches
            .replace(read_at, all.iter().map(|(t, s)| (t.clone(), switch(*s))));
        for tenant in paused {
            self.runtime.wakeups.paused(&tenant);
        }
        for (tenant, _) in all.iter().filter(|(_, s)| s.buffered && !s.push) {
            loop {
                match self.drain_once(tenant).await? {
                    Drain::Appended(_) => continue,
                    // Drained by this broker: its pushes go straight to the log again.
                    Drain::Empty => {
                        self.runtime.switches.drained(tenant);
                        break;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Polls for ever. A failing poll is logged when it starts failing and when it recovers, not
/// four times a second while the database is away.
pub(crate) async fn run(s: Arc<Service>) {
    let mut failing = false;
    loop {
        match s.poll_switches().await {
            Err(e) if !failing => {
                failing = true;
                tracing::warn!(error = %e, retry_in = ?POLL, "reading the maintenance switches failed");
            }
            Ok(()) if failing => {
                failing = false;
                tracing::info!("reading the maintenance switches again");
            }
            _ => {}
        }
        tokio::time::sleep(POLL).await;
    }
}
