//! The only layer that knows SQL. Every statement is prepared and cached per connection;
//! the hot paths take one transaction each, and functions that make up a transaction take a
//! `&Transaction` so the transaction route and push fusion can compose them.

/// The offset of the last message of partition `$partition` appended at or before the instant
/// `$at` (both SQL expressions), -1 if none: where a group starting after that instant
/// stands. Segments are appended whole, so a segment's time is each of its messages' time.
macro_rules! last_offset_at {
    ($partition:literal, $at:literal) => {
        concat!(
            "coalesce((SELECT max(g.end_offset) FROM segments g WHERE g.partition_id = ",
            $partition,
            " AND g.created_at <= ",
            $at,
            "), -1)"
        )
    };
}

pub mod ack;
pub mod dlq;
pub mod frames;
pub mod groups;
pub mod lease;
pub mod notify;
pub mod pop;
pub mod purge;
pub mod push;
pub mod queues;
pub mod seek;
pub mod tls;
pub mod tx_hash;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use tokio_postgres::error::SqlState;
use tokio_postgres::NoTls;

mod embedded {
    refinery::embed_migrations!("migrations");
}

const POOL_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Serialises concurrent migrations when several brokers start at once.
const MIGRATION_LOCK: i64 = 0x5245_4745_4e54; // "REGENT"

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("pool")]
    Pool(#[from] deadpool_postgres::PoolError),
    #[error("{}", db_message(.0))]
    Db(#[from] tokio_postgres::Error),
    /// A segment or dead letter whose bytes do not decode: damaged storage, not bad input.
    #[error("corrupt segment frame")]
    Corrupt,
}

impl From<frames::Corrupt> for StoreError {
    fn from(_: frames::Corrupt) -> StoreError {
        StoreError::Corrupt
    }
}

/// The server's own message when there is one ("invalid input syntax for type uuid: ..."),
/// which is what the ack contract reports for a group whose resolution failed.
fn db_message(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => db.message().to_string(),
        None => e.to_string(),
    }
}

impl StoreError {
    /// Worth running the whole transaction again: a serialization failure or deadlock victim,
    /// or a connection that broke before commit (nothing was committed). An exhausted pool is
    /// not: it already waited its bounded time, and waiting again only piles up requests.
    pub fn is_retryable(&self) -> bool {
        match self {
            StoreError::Pool(_) => false,
            StoreError::Db(e) => match e.code() {
                Some(c) => {
                    *c == SqlState::T_R_SERIALIZATION_FAILURE
                        || *c == SqlState::T_R_DEADLOCK_DETECTED
                        || *c == SqlState::ADMIN_SHUTDOWN
                        || *c == SqlState::CANNOT_CONNECT_NOW
                }
                None => e.is_closed(),
            },
            StoreError::Corrupt => false,
        }
    }

    /// The database could not be reached or is overloaded: the client may retry later.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, StoreError::Pool(_)) || self.is_retryable()
    }

    /// An optimistic append met a transaction id that is already indexed (see
    /// [`push::Dedup::Optimistic`]): the transaction is void and must be re-run carefully.
    pub fn is_duplicate(&self) -> bool {
        matches!(self, StoreError::Db(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION))
    }

    /// The client sent something the database rejected: bad data (class 22: a malformed
    /// uuid, a NUL in a payload) or a value past a limit (class 54: an oversized key). A 4xx
    /// or a per-item error, never a 500.
    pub fn is_client_error(&self) -> bool {
        match self {
            StoreError::Db(e) => e
                .code()
                .map(|c| c.code().starts_with("22") || c.code().starts_with("54"))
                .unwrap_or(false),
            _ => false,
        }
    }
}

/// A snapshot of the connection pool, for `/metrics`.
pub struct PoolStatus {
    pub max: usize,
    pub open: usize,
    pub idle: usize,
    pub waiting: usize,
}

/// The connection pool plus everything the store needs to run statements.
#[derive(Clone)]
pub struct Store {
    pool: Pool,
}

impl Store {
    pub fn connect(url: &str, pool_size: usize) -> anyhow::Result<Store> {
        let target = tls::target(url)?;
        if target.unverified {
            tracing::warn!(
                "PostgreSQL connections are encrypted but the server's certificate is not \
                 checked (sslmode=require without sslrootcert)"
            );
        }
        let manager = ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        let mgr = match target.tls {
            Some(tls) => Manager::from_config(target.config, tls, manager),
            None => Manager::from_config(target.config, NoTls, manager),
        };
        // A bounded wait: an exhausted pool answers `pool` / 503 instead of hanging a request.
        let pool = Pool::builder(mgr)
            .max_size(pool_size.max(2))
            .wait_timeout(Some(POOL_WAIT))
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .build()?;
        Ok(Store { pool })
    }

    /// The pool now: (most connections, open, idle, requests waiting for one).
    pub fn pool_status(&self) -> PoolStatus {
        let s = self.pool.status();
        PoolStatus {
            max: s.max_size,
            open: s.size,
            idle: s.available,
            waiting: s.waiting,
        }
    }

    /// No new connections; those in use close when they come back.
    pub fn close(&self) {
        self.pool.close();
    }

    pub async fn client(&self) -> Result<Object, StoreError> {
        Ok(self.pool.get().await?)
    }

    /// Runs the SQL files of `migrations/` that this database has not seen, under an
    /// advisory lock so brokers starting together do not race.
    pub async fn migrate(url: &str) -> anyhow::Result<()> {
        let target = tls::target(url)?;
        let (mut client, handle) = match target.tls {
            Some(tls) => {
                let (client, conn) = target.config.connect(tls).await?;
                (client, tokio::spawn(conn))
            }
            None => {
                let (client, conn) = target.config.connect(NoTls).await?;
                (client, tokio::spawn(conn))
            }
        };
        client
            .execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])
            .await?;
        let report = embedded::migrations::runner().run_async(&mut client).await;
        client
            .execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK])
            .await?;
        drop(client);
        let _ = handle.await;
        for m in report?.applied_migrations() {
            tracing::info!(migration = %m, "applied");
        }
        Ok(())
    }

    /// Checks that the database answers.
    pub async fn ping(&self) -> Result<(), StoreError> {
        let c = self.client().await?;
        c.simple_query("SELECT 1").await?;
        Ok(())
    }
}

/// Runs a block in a transaction and commits, from the start again when it fails in a way
/// that is safe to retry (see [`StoreError::is_retryable`]): a few attempts, then the error
/// stands. Every write is idempotent (push dedup, ack noop), so a commit whose answer was
/// lost is harmless to repeat. The block sees `tx: &Transaction` and evaluates to
/// `Result<T, StoreError>`. (A macro rather than a closure-taking method: an async closure
/// borrowing the transaction cannot be proven `Send` for axum's handlers.)
#[macro_export]
macro_rules! in_transaction {
    ($store:expr, |$tx:ident| $body:block) => {
        match $crate::commit_if!($store, |$tx| {
            let r: Result<_, $crate::store::StoreError> = async { $body }.await;
            r.map(Ok::<_, ::std::convert::Infallible>)
        }) {
            Ok(Ok(t)) => Ok(t),
            Ok(Err(never)) => match never {},
            Err(e) => Err(e),
        }
    };
}

/// Like [`in_transaction!`], but the block evaluates to `Result<Result<T, R>, StoreError>`
/// and an inner `Err` rolls the transaction back instead of committing.
#[macro_export]
macro_rules! commit_if {
    ($store:expr, |$tx:ident| $body:block) => {{
        let store: &$crate::store::Store = &$store;
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let result: Result<_, $crate::store::StoreError> = async {
                let mut client = store.client().await?;
                let txn = client.transaction().await?;
                let out = {
                    let $tx = &txn;
                    async { $body }.await
                }?;
                match &out {
                    Ok(_) => txn.commit().await?,
                    Err(_) => txn.rollback().await?,
                }
                Ok(out)
            }
            .await;
            match result {
                Err(e) if attempt < 4 && e.is_retryable() => {
                    tokio::time::sleep(std::time::Duration::from_millis(5 << attempt)).await;
                }
                other => break other,
            }
        }
    }};
}
