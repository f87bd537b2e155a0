//! What a committed write tells parked pops, here or on another broker.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

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
    /// (queue id, partition id) of every `reopened` entry, in its order, for this broker's
    /// ready lists: set by an ack, whose pops then claim the partition instead of walking.
    /// Not sent to peers (their pops walk for a reopened group, as without it), and empty
    /// when what reopened is not known by partition (a release, a seek): every `reopened`
    /// entry has its partitions here, or none has.
    #[serde(skip)]
    pub reopened_at: Vec<(Uuid, Uuid)>,
    /// Ephemeral queues with something new to read: (queue, consumer group, pops to wake).
    /// An empty group is every group of the queue (a push); a named one, that group's (an
    /// ack that made a message due again).
    #[serde(rename = "e", default, skip_serializing_if = "Vec::is_empty")]
    pub ephemeral: Vec<(String, String, usize)>,
}

impl Announcement {
    /// One (queue, group) left something to read.
    pub fn reopened(tenant: &str, reopened: Vec<(String, String)>) -> Announcement {
        Announcement {
            tenant: tenant.to_string(),
            reopened,
            ..Default::default()
        }
    }

    /// Partitions acks left something to read on, for their groups: (queue name, queue id,
    /// partition id, group) each.
    pub fn reopened_partitions(
        tenant: &str,
        reopened: impl IntoIterator<Item = (String, Uuid, Uuid, String)>,
    ) -> Announcement {
        let mut a = Announcement {
            tenant: tenant.to_string(),
            ..Default::default()
        };
        for (queue, queue_id, partition, group) in reopened {
            a.add_reopened(queue, queue_id, partition, group);
        }
        a
    }

    /// Adds that an ack left `partition` of a queue with something to read for `group` (kept
    /// only while every `reopened` entry has its partition).
    pub fn add_reopened(&mut self, queue: String, queue_id: Uuid, partition: Uuid, group: String) {
        if self.reopened.len() == self.reopened_at.len() {
            self.reopened_at.push((queue_id, partition));
        }
        self.reopened.push((queue, group));
    }

    pub fn is_empty(&self) -> bool {
        self.queues.is_empty()
            && self.created.is_empty()
            && self.partitions.is_empty()
            && self.reopened.is_empty()
            && self.ephemeral.is_empty()
    }

    /// Ephemeral queue `queue` has something new for `group` ("": every group), worth
    /// waking `pops` parked pops per group for.
    pub fn ephemeral(tenant: &str, queue: &str, group: &str, pops: usize) -> Announcement {
        Announcement {
            tenant: tenant.to_string(),
            ephemeral: vec![(queue.to_string(), group.to_string(), pops)],
            ..Default::default()
        }
    }
}
