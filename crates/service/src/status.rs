//! The status pages' figures (spec §13.1–13.5): the series bucketed over a window, each
//! queue's share of it, and the current counts, leases and dead letters, read together.

use chrono::{DateTime, Duration, Utc};
use regent_rules::buckets::{bucket_minutes, point_count};
use regent_store::depth_history::{self, DepthPoint};
use regent_store::overview::{self, DeadSummary, Leases, Overview};
use regent_store::queues;
use regent_store::series::{self, Counts, Filter, QueueCounts, Span};

use crate::{Error, Service};

/// A window of the series: its bounds and its bucket width.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub bucket_minutes: i32,
}

impl Window {
    /// The window [from, to) with buckets as wide as its length asks (`None`: the spec's).
    pub fn new(from: DateTime<Utc>, to: DateTime<Utc>, bucket_minutes_: Option<i32>) -> Window {
        Window {
            from,
            to,
            bucket_minutes: bucket_minutes_.unwrap_or_else(|| bucket_minutes(to - from)),
        }
    }

    pub fn points(&self) -> i64 {
        point_count(self.from, self.to, self.bucket_minutes)
    }

    pub fn bucket(&self) -> Duration {
        Duration::minutes(i64::from(self.bucket_minutes))
    }
}

/// Everything `GET /api/v1/status` shows.
#[derive(Clone, Debug)]
pub struct Status {
    pub window: Window,
    /// Newest first, one per bucket with anything counted.
    pub points: Vec<(DateTime<Utc>, Counts)>,
    pub queues: Vec<QueueCounts>,
    pub now: Overview,
    pub leases: Leases,
    pub dead: DeadSummary,
    /// The backlog per bucket, newest first, as the stats rounds counted it: the tenant's or
    /// the filtered queue's; `None` when the filter names a namespace or task (not kept).
    pub depth: Option<Vec<DepthPoint>>,
}

fn span<'a>(f: &Filter<'a>, w: &Window) -> Span<'a> {
    Span {
        filter: *f,
        from: w.from,
        to: w.to,
        bucket_minutes: w.bucket_minutes,
    }
}

impl Service {
    pub async fn status(&self, tenant: &str, f: &Filter<'_>, w: Window) -> Result<Status, Error> {
        let client = self.store.client().await?;
        let mut points: Vec<(DateTime<Utc>, Counts)> =
            series::buckets(&client, tenant, &span(f, &w), false)
                .await?
                .into_iter()
                .map(|(at, _, c)| (at, c))
                .collect();
        points.reverse();
        let depth = self.depth(&client, tenant, f, &w).await?;
        Ok(Status {
            depth,
            window: w,
            points,
            queues: series::per_queue(&client, tenant, f, w.from, w.to).await?,
            now: overview::overview(&client, tenant, f).await?,
            leases: overview::leases(&client, tenant, f).await?,
            dead: overview::dead_summary(&client, tenant, f).await?,
        })
    }

    /// The backlog over the window: the tenant's, or one queue's (an unknown queue's is
    /// empty); `None` for a namespace or task, which are not kept.
    async fn depth(
        &self,
        client: &regent_store::Client,
        tenant: &str,
        f: &Filter<'_>,
        w: &Window,
    ) -> Result<Option<Vec<DepthPoint>>, Error> {
        if f.namespace.is_some() || f.task.is_some() {
            return Ok(None);
        }
        let (from, to, width) = (w.from, w.to, w.bucket_minutes);
        let Some(name) = f.queue else {
            return Ok(Some(
                depth_history::read(client, tenant, from, to, width).await?,
            ));
        };
        Ok(Some(match queues::find(client, tenant, name).await? {
            Some(q) => depth_history::read_queue(client, q.id, from, to, width).await?,
            None => Vec::new(),
        }))
    }

    /// The series bucketed over the window, oldest first; per queue with `by_queue` (the
    /// queue's name is then `Some`).
    pub async fn series(
        &self,
        tenant: &str,
        f: &Filter<'_>,
        w: Window,
        by_queue: bool,
    ) -> Result<Vec<(DateTime<Utc>, Option<String>, Counts)>, Error> {
        let client = self.store.client().await?;
        Ok(series::buckets(&client, tenant, &span(f, &w), by_queue).await?)
    }
}
