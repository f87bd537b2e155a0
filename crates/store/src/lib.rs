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

/// Every statement is planned once per connection, not at each execution. Left to choose,
/// PostgreSQL re-plans a statement whose array parameter it cannot size (`unnest($n)`) at
/// every call: the ack's lock statement spent four times its execution in planning. The hot
/// statements look rows up by key, where the generic plan is the one a custom plan would
/// pick. The few whose best plan could depend on a value (the time ranges of the inspection
/// and retention statements) get the generic plan too: write statements for it.
///
/// A plan kept for the life of a connection was made with the table sizes of its first run,
/// so sequential scans are priced out (`enable_seqscan = off`; one is still taken where no
/// index serves). Otherwise a statement first planned while `partitions` held a few rows
/// joined it by a sequential scan per cursor, and at 10,000 partitions a claim walking 3,000
/// cursors read nine million rows (`invariants::a_plan_made_on_a_small_table_...`). An index
/// scan of a table that stays small costs little; a sequential scan frozen into a plan
/// grows with the table.
///
/// JIT is off: a plan that still scans (a one-row table, no index to serve it) is priced at
/// the seq-scan penalty, far past `jit_above_cost`, and was compiled with LLVM on every run.
/// The stats round's claim of one row spent 330 ms in the compiler each time
/// (`invariants::a_pooled_statement_priced_past_the_jit_threshold_is_not_compiled`).
/// Regent's statements read few rows each; none gains from compiling.
const SESSION_PLANNING: &str =
    "SET plan_cache_mode = force_generic_plan; SET enable_seqscan = off; SET jit = off";

/// On Citus a statement is planned at each execution: the coordinator routes a statement to
/// the worker holding its partition by the parameter's value, which a generic plan does not
/// have ("could not create distributed plan"), and a distributed function call is delegated
/// only when its partition argument is a constant. A statement over every shard uses one
/// connection per worker: by default Citus opens more for it, and closes all but one at the
/// end of the transaction, so every such statement forked new backends on the workers (pops
/// spent more time in the kernel making processes than in PostgreSQL; end to end 1.4x with
/// one, BENCHMARKS.md "Regent on Citus").
const SESSION_PLANNING_CITUS: &str = "SET plan_cache_mode = force_custom_plan; \
     SET enable_seqscan = off; SET jit = off; SET citus.max_adaptive_executor_pool_size = 1";

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
                    Layout::Single => SESSION_PLANNING,
                    Layout::Citus => SESSION_PLANNING_CITUS,
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
            .execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])
            .await?;
        let migrated = migrate_locked(&mut client).await;
        client
            .execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK])
            .await?;
        drop(client);
        let _ = handle.await;
        migrated
    }

    /// Checks that the database answers.
    pub async fn ping(&self) -> Result<(), StoreError> {
        let c = self.client().await?;
        c.simple_query("SELECT 1").await?;
        Ok(())
    }
}

/// The migrations, then the layout, on a connection holding the migration lock.
async fn migrate_locked(client: &mut tokio_postgres::Client) -> anyhow::Result<Layout> {
    let report = embedded::migrations::runner().run_async(client).await?;
    for m in report.applied_migrations() {
        tracing::info!(migration = %m, "applied");
    }
    let layout = Layout::of(client).await?;
    match layout {
        Layout::Single => client.batch_execute(FUNCTIONS).await?,
        Layout::Citus => citus::distribute(client).await?,
    }
    Ok(layout)
}

/// The one definition of each database function on one PostgreSQL (`CREATE OR REPLACE`),
/// applied at every start after the migrations: a changed function is changed there, not by
/// a migration. On Citus, `citus/functions.sql` (applied by `citus::distribute`) instead.
const FUNCTIONS: &str = include_str!("../sql/functions.sql");
