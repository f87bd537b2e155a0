//! Regent's only SQL. Every statement is prepared and cached per connection; functions that
//! make up a transaction take a `&Transaction`, so the service layer decides where each
//! transaction begins and ends and composes them (push fusion, the transaction route).
//!
//! Architecture Invariant: this crate applies no broker rule. It reads and writes what it is
//! told to; what a status means, what an ack does to a cursor, where a group starts, is the
//! caller's (the service layer, with `regent-rules`). The crate graph enforces it: this
//! crate does not depend on `regent-rules`.

pub mod append;
pub mod citus;
pub mod claim;
pub mod cursor;
pub mod dead_letters;
pub mod depth_history;
pub mod ephemeral;
pub mod error;
pub mod fleet;
pub mod frames;
pub mod groups;
pub mod history;
pub mod kv;
pub mod layout;
pub mod lease;
pub mod maintenance;
pub mod message;
pub mod messages;
pub mod net;
pub mod notify;
pub mod overview;
pub mod partitions;
pub mod pg_stats;
pub mod purge;
pub mod queue_gauges;
pub mod queues;
pub mod retention;
mod retry;
pub mod seek;
pub mod series;
pub mod sql;
pub mod stats;
pub mod streams;
pub mod timers;
pub mod tls;
pub mod traces;

pub use deadpool_postgres::{Client, Transaction};
pub use error::StoreError;
pub use layout::Layout;
pub use message::{Message, StoredMessage};
pub use retry::{retrying, ATTEMPTS};

use deadpool_postgres::{Hook, HookError, Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use tokio_postgres::NoTls;

mod embedded {
    // The migrations sit at the repository's top level (`migrations/`), beside `src` and
    // `deploy`; refinery resolves the path from this crate's manifest.
    refinery::embed_migrations!("../../migrations");
}

const POOL_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Serialises concurrent migrations when several brokers start at once.
const MIGRATION_LOCK: i64 = 0x5245_4745_4e54; // "REGENT"

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
    layout: Layout,
}

/// A transaction, and the layout its statements are written for. Everything a
/// `Transaction` does, it does (it dereferences to one).
pub struct Tx<'a> {
    inner: Transaction<'a>,
    layout: Layout,
}

impl<'a> std::ops::Deref for Tx<'a> {
    type Target = Transaction<'a>;
    fn deref(&self) -> &Transaction<'a> {
        &self.inner
    }
}

/// A pooled connection, and the layout its statements are written for. Everything a pooled
/// `Client` does, it does (it dereferences to one); [`Conn::begin`] starts a [`Tx`].
pub struct Conn {
    inner: Object,
    layout: Layout,
}

impl std::ops::Deref for Conn {
    type Target = Object;
    fn deref(&self) -> &Object {
        &self.inner
    }
}

impl std::ops::DerefMut for Conn {
    fn deref_mut(&mut self) -> &mut Object {
        &mut self.inner
    }
}

impl Conn {
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// [`Layout::one_statement_paths`].
    pub fn one_statement_paths(&self) -> bool {
        self.layout.one_statement_paths()
    }

    pub async fn begin(&mut self) -> Result<Tx<'_>, StoreError> {
        Ok(Tx {
            inner: self.inner.transaction().await?,
            layout: self.layout,
        })
    }
}

impl Tx<'_> {
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// [`Layout::one_statement_paths`].
    pub fn one_statement_paths(&self) -> bool {
        self.layout.one_statement_paths()
    }

    pub async fn commit(self) -> Result<(), StoreError> {
        Ok(self.inner.commit().await?)
    }

    pub async fn rollback(self) -> Result<(), StoreError> {
        Ok(self.inner.rollback().await?)
    }
}

impl Store {
    /// `layout` is what [`Store::migrate`] found.
    pub fn connect(url: &str, pool_size: usize, layout: Layout) -> anyhow::Result<Store> {
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
            .post_create(Hook::async_fn(move |client, _| {
                let planning = match layout {
                    // Each new connection's planning settings: why, in sql/session.sql.
                    Layout::Single => sql::session::PLANNING,
                    Layout::Citus => sql::session::PLANNING_CITUS,
                };
                Box::pin(async move {
                    client
                        .batch_execute(planning)
                        .await
                        .map_err(HookError::Backend)
                })
            }))
            .build()?;
        Ok(Store { pool, layout })
    }

    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// [`Layout::one_statement_paths`].
    pub fn one_statement_paths(&self) -> bool {
        self.layout.one_statement_paths()
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

    pub async fn client(&self) -> Result<Conn, StoreError> {
        Ok(Conn {
            inner: self.pool.get().await?,
            layout: self.layout,
        })
    }

    /// Runs the SQL files of `migrations/` that this database has not seen, then lays the
    /// tables out for Citus when the database is a Citus coordinator with workers
    /// ([`Layout::of`], `citus::distribute`), all under an advisory lock so brokers starting
    /// together do not race. Returns the layout.
    pub async fn migrate(url: &str) -> anyhow::Result<Layout> {
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
            .execute(sql::session::MIGRATION_LOCK, &[&MIGRATION_LOCK])
            .await?;
        let migrated = migrate_locked(&mut client).await;
        client
            .execute(sql::session::MIGRATION_UNLOCK, &[&MIGRATION_LOCK])
            .await?;
        drop(client);
        let _ = handle.await;
        migrated
    }

    /// Checks that the database answers.
    pub async fn ping(&self) -> Result<(), StoreError> {
        let c = self.client().await?;
        c.simple_query(sql::session::PING).await?;
        Ok(())
    }
}

/// The migrations, then the layout and the database functions, on a connection holding the
/// migration lock.
async fn migrate_locked(client: &mut tokio_postgres::Client) -> anyhow::Result<Layout> {
    history::rebaseline(client).await?;
    let report = embedded::migrations::runner().run_async(client).await?;
    // One line for however many: a new database applies every migration at once.
    if let [first, .., last] | [first @ last] = report.applied_migrations().as_slice() {
        let n = report.applied_migrations().len();
        tracing::info!(from = %first, to = %last, "applied {n} migrations");
    }
    let layout = Layout::of(client).await?;
    client.batch_execute(FUNCTIONS).await?;
    if layout == Layout::Citus {
        citus::distribute(client).await?;
    }
    Ok(layout)
}

/// The one definition of each database function (`CREATE OR REPLACE`), applied at every start
/// after the migrations, on both layouts: a changed function is changed there, not by a
/// migration. On Citus, `citus/functions.sql` (applied by `citus::distribute`) then adds the
/// Citus body of `regent_append` and routes the functions to the workers.
const FUNCTIONS: &str = include_str!("../sql/functions.sql");
