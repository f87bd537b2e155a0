//! The cursor log's compaction clock (migration V21): every cursor's superseded rows are
//! deleted, a pass every `PURGE_INTERVAL_SECONDS`. A pass goes over the table a slice of
//! blocks at a time, one short statement every `TICK`, sized so the pass covers the table in
//! about one interval: the same work as one long statement a minute, spread out. The long
//! statement took up to a second of a core at once (10,000 rows, rescanned from the table's
//! front each time) and, on a busy broker, every delivery waiting behind it was late
//! (BENCHMARKS.md, issue 49, step 4).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::Service;

/// How often a slice runs while a pass is under way.
const TICK: Duration = Duration::from_millis(50);
/// The fewest blocks a slice covers: a small table's pass ends within a few ticks.
const MIN_SLICE: u64 = 8;

pub(crate) async fn run(s: Arc<Service>) {
    loop {
        let began = Instant::now();
        match pass(&s).await {
            Ok(0) => {}
            Ok(n) => tracing::debug!(deleted = n, "cursor log compacted"),
            Err(e) => tracing::warn!(error = %e, "cursor log compaction failed"),
        }
        // What is left of the interval: `sleep` takes any length (one past the clock's range
        // is forever), where `began + interval` would panic.
        tokio::time::sleep(s.purge_interval.saturating_sub(began.elapsed())).await;
    }
}

/// One pass from the table's first block to its end (on Citus, one statement per shard:
/// `regent_store::purge::compact_slice`).
async fn pass(s: &Service) -> Result<u64, regent_store::StoreError> {
    let ticks = (s.purge_interval.as_millis() / TICK.as_millis()).max(1) as u64;
    let (mut from, mut size, mut total) = (0, MIN_SLICE, 0);
    loop {
        let slice = regent_store::purge::compact_slice(&s.store, from, from + size).await?;
        total += slice.deleted;
        from += size;
        if from >= slice.blocks {
            return Ok(total);
        }
        size = MIN_SLICE.max(slice.blocks.div_ceil(ticks));
        tokio::time::sleep(TICK).await;
    }
}
