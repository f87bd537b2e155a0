//! Pops of one queue by one consumer group, fused: they queue in a lane
//! (`regent_memory::lanes`) and a leader claims for all of them in one transaction, as
//! pushes and acks are fused. At batch 1 a consumer's pop was a transaction and a commit per
//! message; fused, the consumers waiting at the same moment share one. Each still gets its own
//! lease, so its acks, extensions and release touch only what it was given.

use std::sync::Arc;

use tokio::sync::oneshot;
use uuid::Uuid;

use super::attempt::{Ask, Found};
use super::PopRequest;
use crate::fusion::MAX_FUSED_ITEMS;
use crate::handover::release_in_background;
use crate::{Error, Service};

/// What pops must share to be claimed together.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct LaneKey {
    tenant: String,
    queue: String,
    group: String,
    auto_ack: bool,
}

pub(crate) struct LaneJob {
    req: PopRequest,
    lease_id: Uuid,
    reply: oneshot::Sender<Result<Found, Error>>,
}

impl Service {
    /// How many entries each in-memory map holds: the runtime's, and the pop lanes.
    pub(crate) fn runtime_sizes(&self) -> Vec<(&'static str, usize)> {
        let mut sizes = self.runtime.sizes();
        sizes.push(("pop_lanes", self.pop_lanes.len()));
        sizes
    }

    /// One pop of a whole queue, claimed in its lane with whoever else is waiting there.
    pub(super) async fn claim_in_lane(
        self: &Arc<Self>,
        tenant: &str,
        queue: &str,
        req: &PopRequest,
        lease_id: Uuid,
    ) -> Result<Found, Error> {
        let key = LaneKey {
            tenant: tenant.to_string(),
            queue: queue.to_string(),
            group: req.group.clone(),
            auto_ack: req.auto_ack,
        };
        let (reply, answer) = oneshot::channel();
        let job = LaneJob {
            req: req.clone(),
            lease_id,
            reply,
        };
        if self.pop_lanes.join(key.clone(), job) {
            // Its own task: the claim serves other requests too, so this one's client going
            // away must not cancel it.
            tokio::spawn(self.clone().lead(key));
        }
        answer.await.map_err(|_| Error::interrupted())?
    }

    /// A leader's turn: claims for whatever waits in the lane until nothing does.
    async fn lead(self: Arc<Self>, key: LaneKey) {
        let mut turn = Turn {
            service: &self,
            key: &key,
            over: false,
        };
        let weight = |j: &LaneJob| weight(j.req.batch, j.req.partitions);
        while let Some(jobs) = self.pop_lanes.next(&key, MAX_FUSED_ITEMS, weight) {
            self.claim_for(&key.tenant, &key.queue, jobs).await;
        }
        turn.over = true;
    }

    /// One claim for `jobs`, each answered with its share; a lone job's claim is the same
    /// transaction with one ask.
    async fn claim_for(self: &Arc<Self>, tenant: &str, queue: &str, jobs: Vec<LaneJob>) {
        // A pop whose client went away while it waited is not claimed for.
        let jobs: Vec<LaneJob> = jobs.into_iter().filter(|j| !j.reply.is_closed()).collect();
        let Some(first) = jobs.first() else {
            return;
        };
        let asks: Vec<Ask> = jobs.iter().map(|j| Ask::of(&j.req, j.lease_id)).collect();
        let waiting = jobs.iter().all(|j| j.req.wait);
        match self
            .claim_together(tenant, queue, &first.req, &asks, waiting)
            .await
        {
            Ok(found) => {
                for (job, found) in jobs.into_iter().zip(found) {
                    let claimed = !found.is_empty();
                    let gone = job.reply.send(Ok(found)).is_err();
                    // Its handover's release may have run before this claim committed.
                    if gone && claimed && !job.req.auto_ack {
                        release_in_background(self, job.lease_id, tenant.to_string());
                    }
                }
            }
            Err(e) => {
                for job in jobs {
                    let _ = job.reply.send(Err(e.clone()));
                }
            }
        }
    }
}

/// What a pop weighs in a fused claim: its batch, or its partitions when more (each is a slot
/// of the claim's lease array and a cursor row the claim may lock), so a claim stays within
/// `MAX_FUSED_ITEMS` of both however many pops wait.
fn weight(batch: i64, partitions: i64) -> usize {
    batch.max(partitions).max(1) as usize
}

/// A leader's place in its lane: one that stops before its turn is over (a panic) leaves the
/// lane, and when it was the last, the requests still waiting are answered as interrupted
/// instead of waiting for a claim no one will make.
struct Turn<'a> {
    service: &'a Service,
    key: &'a LaneKey,
    over: bool,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        if !self.over {
            drop(self.service.pop_lanes.abandon(self.key));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pop_weighs_its_batch_or_its_partitions_whichever_is_more() {
        assert_eq!(weight(1, 1), 1);
        assert_eq!(weight(100, 1), 100);
        assert_eq!(weight(1, 1000), 1000, "partition slots count too");
        assert_eq!(weight(0, 0), 1, "every pop weighs something");
    }
}
