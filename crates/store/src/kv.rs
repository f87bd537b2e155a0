//! Key/value rows (`kv`): one per (tenant, namespace, key), the value as the client's JSON
//! text. A write locks its row first (`lock`), the service decides, then `write` or `remove`;
//! reads see only live rows (not past `expires_at`), so an expired row is absent before it is
//! pruned. Every statement names its namespace: on Citus, one shard's.

use chrono::{DateTime, Utc};
use deadpool_postgres::Client;

use crate::sql::kv::{
    GET, INSERT, LOCK, PRUNE, PRUNE_DUE, RANGE, RANGE_UNTIL, REMOVE, UPDATE, UPDATE_WITH_EXPIRY,
};
use crate::{StoreError, Tx};

/// A row as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct KvRow {
    pub key: String,
    /// JSON text; empty when only keys were asked for.
    pub value: String,
    pub version: i64,
    /// `None`: written `forever`.
    pub expires_at: Option<DateTime<Utc>>,
    pub updated_at: DateTime<Utc>,
    /// Past its expiry (only [`lock`] returns such a row).
    pub expired: bool,
}

fn row_of(r: &tokio_postgres::Row) -> KvRow {
    KvRow {
        key: r.get("key"),
        value: r.get("value"),
        version: r.get("version"),
        expires_at: r.get("expires_at"),
        updated_at: r.get("updated_at"),
        expired: r.get("expired"),
    }
}

/// A row's key.
#[derive(Clone, Copy, Debug)]
pub struct Key<'a> {
    pub tenant: &'a str,
    pub ns: &'a str,
    pub key: &'a str,
}

/// The row at `k`, expired or not, locked until the transaction ends.
pub async fn lock(tx: &Tx<'_>, k: Key<'_>) -> Result<Option<KvRow>, StoreError> {
    let st = tx.prepare_cached(LOCK).await?;
    Ok(tx
        .query_opt(&st, &[&k.tenant, &k.ns, &k.key])
        .await?
        .as_ref()
        .map(row_of))
}

/// The live rows among `keys` of a namespace, in no particular order.
pub async fn get(
    tx: &Tx<'_>,
    tenant: &str,
    ns: &str,
    keys: &[String],
) -> Result<Vec<KvRow>, StoreError> {
    let st = tx.prepare_cached(GET).await?;
    Ok(tx
        .query(&st, &[&tenant, &ns, &keys])
        .await?
        .iter()
        .map(row_of)
        .collect())
}

/// A page of a namespace's live rows whose keys start with a prefix: keys in `[from, until)`
/// (bytewise; no upper end when `until` is `None`) and past `after`, in key order, at most
/// `limit`. With `keys_only` the values are left out.
pub struct Range<'a> {
    pub from: &'a str,
    pub until: Option<&'a str>,
    pub after: &'a str,
    pub limit: i64,
    pub keys_only: bool,
}

pub async fn range(
    tx: &Tx<'_>,
    tenant: &str,
    ns: &str,
    r: &Range<'_>,
) -> Result<Vec<KvRow>, StoreError> {
    let page = [
        &tenant as &(dyn tokio_postgres::types::ToSql + Sync),
        &ns,
        &r.from,
        &r.after,
        &r.limit,
        &r.keys_only,
    ];
    let rows = match r.until {
        Some(until) => {
            let st = tx.prepare_cached(RANGE_UNTIL).await?;
            tx.query(&st, &[&page[..], &[&until]].concat()).await?
        }
        None => {
            let st = tx.prepare_cached(RANGE).await?;
            tx.query(&st, &page).await?
        }
    };
    Ok(rows.iter().map(row_of).collect())
}

/// A row's new life: its value, version and expiry (`Some(None)`: forever; `None`: kept).
pub struct NewRow<'a> {
    pub value: &'a str,
    pub version: i64,
    pub ttl_seconds: Option<Option<i64>>,
}

/// Writes `k`. `locked` says a row was there (locked by [`lock`]): it is updated. Otherwise
/// the row is inserted, and `None` comes back when another transaction inserted it first:
/// lock it and decide again.
pub async fn write(
    tx: &Tx<'_>,
    k: Key<'_>,
    locked: bool,
    new: &NewRow<'_>,
) -> Result<Option<KvRow>, StoreError> {
    let ttl = new.ttl_seconds.flatten();
    let sql = match (locked, new.ttl_seconds.is_some()) {
        (true, true) => UPDATE_WITH_EXPIRY,
        (true, false) => UPDATE,
        (false, _) => INSERT,
    };
    let st = tx.prepare_cached(sql).await?;
    let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
        vec![&k.tenant, &k.ns, &k.key, &new.value, &new.version];
    if !locked || new.ttl_seconds.is_some() {
        params.push(&ttl);
    }
    Ok(tx.query_opt(&st, &params).await?.as_ref().map(row_of))
}

/// Deletes `k` (locked by [`lock`]).
pub async fn remove(tx: &Tx<'_>, k: Key<'_>) -> Result<(), StoreError> {
    let st = tx.prepare_cached(REMOVE).await?;
    tx.execute(&st, &[&k.tenant, &k.ns, &k.key]).await?;
    Ok(())
}

/// Deletes up to `batch` rows past their expiry, the longest expired first; how many went.
/// The rows are found first and deleted per namespace, so on Citus every delete is one
/// shard's; a row written again meanwhile is not past its expiry any more and stays.
pub async fn prune(client: &Client, batch: i64) -> Result<u64, StoreError> {
    let due = client.prepare_cached(PRUNE_DUE).await?;
    let delete = client.prepare_cached(PRUNE).await?;
    let mut deleted = 0;
    for r in client.query(&due, &[&batch]).await? {
        let (tenant, ns, keys): (String, String, Vec<String>) =
            (r.get("tenant"), r.get("ns"), r.get("keys"));
        deleted += client.execute(&delete, &[&tenant, &ns, &keys]).await?;
    }
    Ok(deleted)
}
