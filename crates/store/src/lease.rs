//! Extending a live lease.

use chrono::{DateTime, Utc};
use deadpool_postgres::Client;
use uuid::Uuid;

use crate::sql::lease::{ALL_LIVE, EXTEND, HELD, RELEASE};
use crate::{StoreError, Tx};

#[derive(Debug, PartialEq, Eq)]
pub enum Extended {
    /// Rows renewed and the earliest new expiry among them.
    Renewed {
        rows: u64,
        expires_at: DateTime<Utc>,
    },
    NotFound,
    Expired,
}

/// Every (partition, group) whose live lease is `lease_id` gets expiry = max(current,
/// now + seconds). Expired, released or unknown leases are not revived.
pub async fn extend(
    client: &Client,
    tenant: &str,
    lease_id: Uuid,
    seconds: i64,
) -> Result<Extended, StoreError> {
    let st = client.prepare_cached(EXTEND).await?;
    let rows = client
        .query(&st, &[&lease_id, &(seconds as f64), &tenant])
        .await?;
    if let Some(expires_at) = rows
        .iter()
        .map(|r| r.get::<_, DateTime<Utc>>("expires_at"))
        .min()
    {
        return Ok(Extended::Renewed {
            rows: rows.len() as u64,
            expires_at,
        });
    }
    let st = client.prepare_cached(HELD).await?;
    Ok(match client.query_opt(&st, &[&lease_id, &tenant]).await? {
        Some(_) => Extended::Expired,
        None => Extended::NotFound,
    })
}

/// Whether every lease id is live for this tenant (a transaction's `requiredLeases`). A
/// malformed id is simply not live.
pub async fn all_live(tx: &Tx<'_>, tenant: &str, lease_ids: &[String]) -> Result<bool, StoreError> {
    if lease_ids.is_empty() {
        return Ok(true);
    }
    let Ok(ids) = lease_ids
        .iter()
        .map(|l| Uuid::parse_str(l))
        .collect::<Result<Vec<Uuid>, _>>()
    else {
        return Ok(false);
    };
    let st = tx.prepare_cached(ALL_LIVE).await?;
    let live: i64 = tx.query_one(&st, &[&ids, &tenant]).await?.get("live");
    let mut distinct = ids.clone();
    distinct.sort();
    distinct.dedup();
    Ok(live as usize == distinct.len())
}

/// A partition whose lease [`release`] ended, and the consumer group that held it.
pub struct Released {
    pub queue: String,
    pub group: String,
}

/// Ends a live lease that no client received: its partitions are claimable again at once.
/// Like an expiry it charges no retry, and the lease id stops being valid for acks; the
/// expiry is pulled back to now (never pushed forward) so claim order stays least recently
/// claimed first. A lease that already ended, or never committed, releases nothing.
pub async fn release(
    client: &Client,
    tenant: &str,
    lease_id: Uuid,
) -> Result<Vec<Released>, StoreError> {
    let st = client.prepare_cached(RELEASE).await?;
    Ok(client
        .query(&st, &[&lease_id, &tenant])
        .await?
        .iter()
        .map(|r| Released {
            queue: r.get("queue"),
            group: r.get("consumer_group"),
        })
        .collect())
}
