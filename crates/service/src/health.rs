//! Whether this broker can serve, and what it has done since it started.

use regent_memory::activity::ProcessUse;
use regent_store::PoolStatus;

use crate::Service;

/// The answer of `/health`.
pub struct Health {
    pub database: bool,
    /// Background tasks down now (restarting after a panic).
    pub down: Vec<&'static str>,
}

impl Health {
    pub fn ok(&self) -> bool {
        self.database && self.down.is_empty()
    }
}

/// This broker's figures for `/metrics`.
pub struct Metrics<'a> {
    pub uptime_secs: f64,
    pub activity: &'a regent_memory::activity::Activity,
    pub pool: PoolStatus,
    pub process: ProcessUse,
    pub pending_handovers: usize,
    /// Entries in each in-memory map, by name.
    pub runtime: Vec<(&'static str, usize)>,
    /// The largest share of its stored-message cap any tenant holds (`Limiter::fullest`).
    pub cap_fullest: f64,
}

impl Service {
    pub async fn health(&self) -> Health {
        Health {
            database: self.store.ping().await.is_ok(),
            down: self.supervisor.down(),
        }
    }

    pub fn metrics(&self) -> Metrics<'_> {
        let activity = &self.runtime.activity;
        Metrics {
            uptime_secs: activity.started.elapsed().as_secs_f64(),
            activity,
            pool: self.store.pool_status(),
            process: ProcessUse::now(),
            pending_handovers: self.runtime.handovers.pending(),
            runtime: self.runtime_sizes(),
            cap_fullest: self.runtime.limiter.fullest(),
        }
    }

    /// An answer with status 503 went out (counted for `regent_unavailable_total`).
    pub fn answered_unavailable(&self) {
        self.runtime.activity.answered_unavailable();
    }
}
