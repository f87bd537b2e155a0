//! Key/value (`POST /api/v1/kv`, spec §18.1): a batch of operations applied in order in ONE
//! transaction, each answered; and the same operations inside the transaction route's bundle
//! (its `kv` rider, `crate::transaction`). A write locks its row, then decides
//! (`regent_rules::kv::decide`), so concurrent writers of a key take turns and each sees what
//! the one before it committed. An op sent `required` that does not apply rolls everything
//! back. Expired rows are pruned on the retention clock.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use regent_rules::kv::READ_BUDGET_BYTES;
use regent_rules::kv::{decide, prefix_end, prefix_limit, Current, Decision, Write};
pub use regent_rules::kv::{Expiry, Num, Reason, Write as KvWrite};
pub use regent_memory::kv::KvTotal;
pub use regent_store::kv::KvRow;
use regent_store::kv::{self as store, Key, NewRow, Range};
use regent_store::{commit_if, StoreError, Tx};

use crate::{Error, Service};

/// Expired rows one prune statement deletes at most.
const PRUNE_BATCH: i64 = 10_000;

/// One operation, as sent. Values are JSON text.
#[derive(Clone, Debug)]
pub enum KvOp {
    Get {
        ns: String,
        key: String,
    },
    GetMany {
        ns: String,
        keys: Vec<String>,
    },
    GetPrefix {
        ns: String,
        prefix: String,
        after: Option<String>,
        limit: Option<i64>,
        keys_only: bool,
    },
    Write {
        ns: String,
        key: String,
        write: Write<String>,
        /// Not applying rolls the whole request back.
        required: bool,
    },
}

/// What one operation found or did.
#[derive(Clone, Debug)]
pub enum KvOutcome {
    Got {
        key: String,
        row: Option<KvRow>,
    },
    Many {
        /// In the order the keys were asked.
        rows: Vec<KvRow>,
        missing: Vec<String>,
        /// Rows left out past the read budget: in neither list.
        truncated: bool,
    },
    Prefix {
        rows: Vec<KvRow>,
        truncated: bool,
        /// Where the next page starts (`after`), when truncated.
        next_after: Option<String>,
    },
    Written {
        key: String,
        verdict: WriteVerdict,
    },
}

#[derive(Clone, Debug)]
pub enum WriteVerdict {
    Stored(KvRow),
    Removed {
        version: i64,
    },
    /// Not applied; the live row as it is, if there is one.
    Refused {
        reason: Reason,
        current: Option<KvRow>,
    },
}

/// A `required` operation that did not apply: everything was rolled back.
#[derive(Clone, Debug)]
pub struct KvFailed {
    /// The operation's position in its list.
    pub index: usize,
    pub reason: Reason,
    pub current: Option<KvRow>,
}

impl Service {
    /// A batch, in one transaction: every outcome, or the `required` operation that failed
    /// (nothing applied).
    pub async fn kv(
        &self,
        tenant: &Arc<str>,
        ops: Vec<KvOp>,
    ) -> Result<Result<Vec<KvOutcome>, KvFailed>, Error> {
        let done = commit_if!(self.store, |tx| { apply(tx, tenant, &ops).await })?;
        self.count_kv(tenant, done.as_deref().ok());
        Ok(done)
    }

    /// Counts what a committed list of operations did, for the metrics (`None`: rolled back
    /// by a `required` one).
    pub(crate) fn count_kv(&self, tenant: &str, done: Option<&[KvOutcome]>) {
        self.runtime.kv.count(tenant, |t| match done {
            None => t.rollbacks += 1,
            Some(outcomes) => {
                for o in outcomes {
                    match o {
                        KvOutcome::Written {
                            verdict: WriteVerdict::Refused { .. },
                            ..
                        } => t.refused += 1,
                        KvOutcome::Written { .. } => t.writes += 1,
                        _ => t.reads += 1,
                    }
                }
            }
        });
    }

    /// This broker's key/value counts per tenant, by tenant.
    pub fn kv_totals(&self) -> Vec<(String, KvTotal)> {
        self.runtime.kv.all()
    }

    /// Deletes the rows past their expiry, in bounded statements; how many went.
    pub(crate) async fn prune_kv(&self) -> Result<u64, Error> {
        let client = self.store.client().await?;
        let mut total = 0;
        loop {
            let n = store::prune(&client, PRUNE_BATCH).await?;
            total += n;
            if (n as i64) < PRUNE_BATCH {
                return Ok(total);
            }
        }
    }
}

/// `ops` in order inside `tx`; `Ok(Err)` when a `required` one did not apply (the caller
/// rolls back).
pub(crate) async fn apply(
    tx: &Tx<'_>,
    tenant: &str,
    ops: &[KvOp],
) -> Result<Result<Vec<KvOutcome>, KvFailed>, StoreError> {
    let mut out = Vec::with_capacity(ops.len());
    for (index, op) in ops.iter().enumerate() {
        let outcome = match op {
            KvOp::Get { ns, key } => {
                let row = store::get(tx, tenant, ns, std::slice::from_ref(key)).await?;
                KvOutcome::Got {
                    key: key.clone(),
                    row: row.into_iter().next(),
                }
            }
            KvOp::GetMany { ns, keys } => many(tx, tenant, ns, keys).await?,
            KvOp::GetPrefix {
                ns,
                prefix,
                after,
                limit,
                keys_only,
            } => {
                let end = prefix_end(prefix);
                let r = Range {
                    from: prefix,
                    until: end.as_deref(),
                    after: after.as_deref().unwrap_or(""),
                    limit: prefix_limit(*limit) + 1,
                    keys_only: *keys_only,
                };
                page(
                    store::range(tx, tenant, ns, &r).await?,
                    prefix_limit(*limit),
                )
            }
            KvOp::Write {
                ns,
                key,
                write,
                required,
            } => {
                let k = Key { tenant, ns, key };
                let verdict = written(tx, k, write).await?;
                if let (true, WriteVerdict::Refused { reason, current }) = (required, &verdict) {
                    return Ok(Err(KvFailed {
                        index,
                        reason: *reason,
                        current: current.clone(),
                    }));
                }
                KvOutcome::Written {
                    key: key.clone(),
                    verdict,
                }
            }
        };
        out.push(outcome);
    }
    Ok(Ok(out))
}

/// One write: lock, decide, write. An insert that meets a row another transaction inserted
/// meanwhile decides again against that row (now locked); that can only happen once.
async fn written(
    tx: &Tx<'_>,
    k: Key<'_>,
    write: &Write<String>,
) -> Result<WriteVerdict, StoreError> {
    loop {
        let found = store::lock(tx, k).await?;
        let current = found.as_ref().map(|r| Current {
            value: r.value.clone(),
            version: r.version,
            expired: r.expired,
        });
        let live = found.clone().filter(|r| !r.expired);
        let decision = decide(write, current.as_ref());
        match decision {
            Decision::Refuse(reason) => {
                return Ok(WriteVerdict::Refused {
                    reason,
                    current: live,
                })
            }
            Decision::Remove { version } => {
                store::remove(tx, k).await?;
                return Ok(WriteVerdict::Removed { version });
            }
            Decision::Store {
                value,
                version,
                expiry,
            } => {
                let new = NewRow {
                    value: &value,
                    version,
                    ttl_seconds: expiry.map(|e| match e {
                        Expiry::Seconds(s) => Some(s),
                        Expiry::Forever => None,
                    }),
                };
                if let Some(row) = store::write(tx, k, found.is_some(), &new).await? {
                    return Ok(WriteVerdict::Stored(row));
                }
            }
        }
    }
}

/// `getMany`: the live rows in the order asked (each key once), the keys with none, and rows
/// past the read budget left out of both.
async fn many(
    tx: &Tx<'_>,
    tenant: &str,
    ns: &str,
    keys: &[String],
) -> Result<KvOutcome, StoreError> {
    let mut seen = HashSet::new();
    let keys: Vec<String> = keys.iter().filter(|k| seen.insert(*k)).cloned().collect();
    let mut found: HashMap<String, KvRow> = store::get(tx, tenant, ns, &keys)
        .await?
        .into_iter()
        .map(|r| (r.key.clone(), r))
        .collect();
    let (mut rows, mut missing, mut spent, mut truncated) = (vec![], vec![], 0, false);
    for key in keys {
        match found.remove(&key) {
            None => missing.push(key),
            Some(r) if spent + r.value.len() > READ_BUDGET_BYTES && !rows.is_empty() => {
                truncated = true;
            }
            Some(r) => {
                spent += r.value.len();
                rows.push(r);
            }
        }
    }
    Ok(KvOutcome::Many {
        rows,
        missing,
        truncated,
    })
}

/// A `getPrefix` page from up to `limit + 1` rows: at most `limit` and within the read
/// budget (at least one row, however large); truncated when rows were left.
fn page(mut rows: Vec<KvRow>, limit: i64) -> KvOutcome {
    let mut spent = 0;
    let mut keep = 0;
    for r in rows.iter().take(limit as usize) {
        if keep > 0 && spent + r.value.len() > READ_BUDGET_BYTES {
            break;
        }
        spent += r.value.len();
        keep += 1;
    }
    let truncated = rows.len() > keep;
    rows.truncate(keep);
    let next_after = truncated
        .then(|| rows.last().map(|r| r.key.clone()))
        .flatten();
    KvOutcome::Prefix {
        rows,
        truncated,
        next_after,
    }
}
