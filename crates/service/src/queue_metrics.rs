//! The per-queue metrics behind the Prometheus families that name queues: each queue's depth,
//! dead letters and consumer groups' lag (`regent_store::queue_gauges`, the database's view,
//! the same on every broker) next to what this broker pushed and delivered to it since it
//! started (`regent_memory::queue_totals`).
//!
//! Bounded, since the names are clients': the `top` deepest queues are shown by name and
//! the rest summed into one `_other` queue; per queue shown, the [`GROUPS_PER_QUEUE`]
//! groups furthest behind are shown by name and the rest summed into one `_other` group
//! (`regent_rules::top`).

use regent_rules::top::{top_n, OTHER};
use regent_store::queue_gauges::{queue_gauges, QueueGauge};

use crate::{Error, Service};

/// Consumer groups of one queue shown by name at most.
pub const GROUPS_PER_QUEUE: usize = 20;

/// One queue's figures, or the sum of the queues not shown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueLine {
    pub tenant: String,
    pub queue: String,
    pub depth: i64,
    pub dead_letters: i64,
    /// Messages pushed to it through this broker since it started.
    pub pushed: u64,
    /// Messages this broker delivered from it since it started.
    pub delivered: u64,
    /// (group, messages behind), furthest behind first.
    pub groups: Vec<(String, i64)>,
}

/// The queues of a scope, bounded.
#[derive(Clone, Debug, Default)]
pub struct QueueMetrics {
    /// The deepest queues, deepest first.
    pub queues: Vec<QueueLine>,
    /// The other queues summed (queue `_other`; tenant `_other` too when the scope is every
    /// tenant), when there are any.
    pub other: Option<QueueLine>,
}

impl Service {
    /// The per-queue figures of `tenant`'s queues (every tenant's when `None`): the `top`
    /// deepest by name, the rest summed.
    pub async fn queue_metrics(
        &self,
        tenant: Option<&str>,
        top: usize,
    ) -> Result<QueueMetrics, Error> {
        let gauges = {
            let client = self.store.client().await?;
            queue_gauges(&client, tenant).await?
        };
        let totals = self
            .runtime
            .queue_totals
            .of_each(gauges.iter().map(|g| g.queue_id));
        let lines: Vec<QueueLine> = gauges
            .into_iter()
            .zip(totals)
            .map(|(g, t)| line(g, t.pushed, t.delivered))
            .collect();
        let (queues, rest) = top_n(lines, top, |l| l.depth, |l| l.queue.as_str());
        let other = (!rest.is_empty()).then(|| sum(tenant.unwrap_or(OTHER), rest));
        Ok(QueueMetrics { queues, other })
    }
}

fn line(g: QueueGauge, pushed: u64, delivered: u64) -> QueueLine {
    let groups = g.groups.into_iter().map(|l| (l.group, l.lag)).collect();
    let (mut shown, rest) = top_n(groups, GROUPS_PER_QUEUE, |l| l.1, |l| l.0.as_str());
    if !rest.is_empty() {
        shown.push((OTHER.to_string(), rest.iter().map(|l| l.1).sum()));
    }
    QueueLine {
        tenant: g.tenant,
        queue: g.queue,
        depth: g.depth,
        dead_letters: g.dead_letters,
        pushed,
        delivered,
        groups: shown,
    }
}

/// The queues not shown, as one: every count summed, every group's lag in one `_other`.
fn sum(tenant: &str, rest: Vec<QueueLine>) -> QueueLine {
    let lag: Option<i64> = rest
        .iter()
        .flat_map(|l| l.groups.iter().map(|g| g.1))
        .reduce(|a, b| a + b);
    QueueLine {
        tenant: tenant.to_string(),
        queue: OTHER.to_string(),
        depth: rest.iter().map(|l| l.depth).sum(),
        dead_letters: rest.iter().map(|l| l.dead_letters).sum(),
        pushed: rest.iter().map(|l| l.pushed).sum(),
        delivered: rest.iter().map(|l| l.delivered).sum(),
        groups: lag.map(|n| (OTHER.to_string(), n)).into_iter().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use regent_store::queue_gauges::GroupLag;
    use uuid::Uuid;

    fn gauge(queue: &str, depth: i64, groups: &[(&str, i64)]) -> QueueGauge {
        QueueGauge {
            queue_id: Uuid::new_v4(),
            tenant: "t".into(),
            queue: queue.into(),
            depth,
            dead_letters: 1,
            groups: groups
                .iter()
                .map(|(g, lag)| GroupLag {
                    group: g.to_string(),
                    lag: *lag,
                })
                .collect(),
        }
    }

    #[test]
    fn a_queue_shows_its_groups_furthest_behind_and_sums_the_rest() {
        let many: Vec<(String, i64)> = (0..GROUPS_PER_QUEUE as i64 + 2)
            .map(|i| (format!("g{i:02}"), i))
            .collect();
        let refs: Vec<(&str, i64)> = many.iter().map(|(g, n)| (g.as_str(), *n)).collect();
        let l = line(gauge("q", 5, &refs), 3, 2);
        assert_eq!(l.groups.len(), GROUPS_PER_QUEUE + 1);
        assert_eq!(l.groups[0], ("g21".to_string(), 21));
        assert_eq!(
            l.groups.last().unwrap(),
            &(OTHER.to_string(), 1),
            "g00 + g01"
        );
        assert_eq!((l.pushed, l.delivered), (3, 2));
    }

    #[test]
    fn the_queues_not_shown_are_one_sum() {
        let rest = vec![
            line(gauge("a", 2, &[("x", 1), ("y", 2)]), 10, 1),
            line(gauge("b", 3, &[]), 5, 0),
        ];
        let s = sum(OTHER, rest);
        assert_eq!(
            s,
            QueueLine {
                tenant: OTHER.into(),
                queue: OTHER.into(),
                depth: 5,
                dead_letters: 2,
                pushed: 15,
                delivered: 1,
                groups: vec![(OTHER.into(), 3)],
            }
        );
        assert!(sum("t", vec![line(gauge("c", 0, &[]), 0, 0)])
            .groups
            .is_empty());
    }
}
