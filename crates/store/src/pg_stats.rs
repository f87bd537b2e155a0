//! What PostgreSQL says about itself, for `/api/v1/analytics/postgres-stats`: its statistics
//! views (`pg_stat_database`, `pg_statio_user_tables`, `pg_statio_user_indexes`,
//! `pg_stat_user_tables`, `pg_stat_activity`), `pg_settings`, relation sizes, and what the
//! shared buffers hold when `pg_buffercache` is installed. Every list is bounded ([`TOP`]).
//! On Citus these are the coordinator's own, whose distributed tables are empty shells, but
//! for table sizes: those are summed over the shards on every node.
//!
//! No statement text of another session is read: only its first keyword (`SELECT`,
//! `INSERT`, ...). Another session's text can carry data (a literal payload, another
//! tenant's queue name), and any tenant's admin may ask.

use chrono::{DateTime, Utc};
use deadpool_postgres::Client;
use tokio_postgres::Row;

use crate::sql::pg_stats::{
    ACTIVE, BUFFERCACHE_SCHEMA, CACHE_SUMMARY, DATABASE, INDEX_CACHE, MEMORY_SETTINGS, TABLES,
    TABLE_CACHE, TABLE_SIZES, TABLE_SIZES_CITUS,
};
use crate::{Conn, Layout, StoreError};

/// Rows each list holds at most.
pub const TOP: i64 = 20;
/// A session counts as an active query once its statement has run this long.
pub const ACTIVE_AFTER_SECONDS: f64 = 1.0;

/// The database as `pg_stat_database` counts it since its statistics were last reset.
#[derive(Clone, Debug)]
pub struct Database {
    pub name: String,
    pub size_bytes: i64,
    pub size: String,
    pub backends: i32,
    pub blocks_read: i64,
    pub blocks_hit: i64,
    pub commits: i64,
    pub rollbacks: i64,
    pub deadlocks: i64,
    pub conflicts: i64,
    pub temp_files: i64,
    pub temp_bytes: i64,
    pub stats_reset: Option<DateTime<Utc>>,
}

/// Blocks one table (heap) or index read from disk and found in the shared buffers.
#[derive(Clone, Debug)]
pub struct Cache {
    pub schema: String,
    /// The table, or the index's table.
    pub table: String,
    /// The index, for an index's row.
    pub index: Option<String>,
    pub blocks_read: i64,
    pub blocks_hit: i64,
}

/// Blocks read and hit summed over every user table (heap) and every user index.
#[derive(Clone, Copy, Debug, Default)]
pub struct CacheSummary {
    pub table_read: i64,
    pub table_hit: i64,
    pub index_read: i64,
    pub index_hit: i64,
}

/// One table's row of `pg_stat_user_tables`, as far as these pages use it.
#[derive(Clone, Debug)]
pub struct TableStats {
    pub schema: String,
    pub table: String,
    pub live_tuples: i64,
    pub dead_tuples: i64,
    pub updates: i64,
    pub hot_updates: i64,
    pub last_vacuum: Option<DateTime<Utc>>,
    pub last_autovacuum: Option<DateTime<Utc>>,
    pub last_autoanalyze: Option<DateTime<Utc>>,
    pub autovacuum_count: i64,
    pub autoanalyze_count: i64,
    /// Dead tuples past which autovacuum takes the table: `autovacuum_vacuum_threshold` +
    /// `autovacuum_vacuum_scale_factor` × its row estimate (the table's own storage
    /// parameters, else the server's settings).
    pub vacuum_threshold: i64,
    /// Whether autovacuum runs at all and the table does not turn it off.
    pub autovacuum_enabled: bool,
}

/// The [`TOP`] tables `keep` lets through, most `by` first, then by name.
fn top(
    tables: &[TableStats],
    keep: impl Fn(&TableStats) -> bool,
    by: impl Fn(&TableStats) -> i64,
) -> Vec<TableStats> {
    let mut out: Vec<TableStats> = tables.iter().filter(|t| keep(t)).cloned().collect();
    out.sort_by(|a, b| by(b).cmp(&by(a)).then_with(|| a.table.cmp(&b.table)));
    out.truncate(TOP as usize);
    out
}

impl From<&Row> for TableStats {
    fn from(r: &Row) -> TableStats {
        TableStats {
            schema: r.get("schemaname"),
            table: r.get("relname"),
            live_tuples: r.get("n_live_tup"),
            dead_tuples: r.get("n_dead_tup"),
            updates: r.get("n_tup_upd"),
            hot_updates: r.get("n_tup_hot_upd"),
            last_vacuum: r.get("last_vacuum"),
            last_autovacuum: r.get("last_autovacuum"),
            last_autoanalyze: r.get("last_autoanalyze"),
            autovacuum_count: r.get("autovacuum_count"),
            autoanalyze_count: r.get("autoanalyze_count"),
            vacuum_threshold: r.get("vacuum_threshold"),
            autovacuum_enabled: r.get("autovacuum_enabled"),
        }
    }
}

/// A session of this database whose statement has run longer than [`ACTIVE_AFTER_SECONDS`].
#[derive(Clone, Debug)]
pub struct ActiveQuery {
    pub pid: i32,
    pub state: String,
    pub seconds: f64,
    pub wait_event_type: Option<String>,
    pub wait_event: Option<String>,
    pub backend_type: Option<String>,
    /// The statement's first keyword, upper-cased; never its text.
    pub kind: Option<String>,
}

/// One memory setting of `pg_settings`.
#[derive(Clone, Debug)]
pub struct Setting {
    pub name: String,
    pub bytes: Option<i64>,
    pub pretty: Option<String>,
}

/// What the shared buffers hold of one relation (`pg_buffercache`).
#[derive(Clone, Debug)]
pub struct Buffered {
    pub relation: String,
    pub buffers: i64,
    pub bytes: i64,
    pub size: String,
    pub percent_of_cache: f64,
}

/// One table's size on disk.
#[derive(Clone, Debug)]
pub struct TableSize {
    pub schema: String,
    pub table: String,
    pub total_bytes: i64,
    pub table_bytes: i64,
    pub index_bytes: i64,
    pub total: String,
    pub table_size: String,
    pub index_size: String,
    pub live_tuples: i64,
}

/// Everything the route shows.
#[derive(Clone, Debug)]
pub struct PgStats {
    pub at: DateTime<Utc>,
    pub database: Database,
    pub table_cache: Vec<Cache>,
    pub index_cache: Vec<Cache>,
    pub cache_summary: CacheSummary,
    pub dead_tuples: Vec<TableStats>,
    pub hot_updates: Vec<TableStats>,
    pub active: Vec<ActiveQuery>,
    pub autovacuum_due: Vec<TableStats>,
    pub settings: Vec<Setting>,
    /// `None` when `pg_buffercache` is not installed in this database.
    pub buffered: Option<Vec<Buffered>>,
    pub table_sizes: Vec<TableSize>,
}

/// The memory settings shown, in this order.
pub const SETTINGS: [&str; 6] = [
    "shared_buffers",
    "effective_cache_size",
    "work_mem",
    "maintenance_work_mem",
    "wal_buffers",
    "temp_buffers",
];

/// Reads it all, one statement after another on one connection.
pub async fn read(client: &Conn) -> Result<PgStats, StoreError> {
    let r = client.query_one(DATABASE, &[]).await?;
    let at = r.get("at");
    let database = Database {
        name: r.get("name"),
        size_bytes: r.get("size_bytes"),
        size: r.get("size"),
        backends: r.get("numbackends"),
        blocks_read: r.get("blks_read"),
        blocks_hit: r.get("blks_hit"),
        commits: r.get("xact_commit"),
        rollbacks: r.get("xact_rollback"),
        deadlocks: r.get("deadlocks"),
        conflicts: r.get("conflicts"),
        temp_files: r.get("temp_files"),
        temp_bytes: r.get("temp_bytes"),
        stats_reset: r.get("stats_reset"),
    };

    let cache = |r: &Row| Cache {
        schema: r.get("schemaname"),
        table: r.get("relname"),
        index: r.try_get("indexrelname").ok(),
        blocks_read: r.get("blks_read"),
        blocks_hit: r.get("blks_hit"),
    };
    let table_cache = client
        .query(TABLE_CACHE, &[&TOP])
        .await?
        .iter()
        .map(cache)
        .collect();
    let index_cache = client
        .query(INDEX_CACHE, &[&TOP])
        .await?
        .iter()
        .map(cache)
        .collect();
    let r = client.query_one(CACHE_SUMMARY, &[]).await?;
    let cache_summary = CacheSummary {
        table_read: r.get("table_read"),
        table_hit: r.get("table_hit"),
        index_read: r.get("index_read"),
        index_hit: r.get("index_hit"),
    };

    let tables: Vec<TableStats> = client
        .query(TABLES, &[])
        .await?
        .iter()
        .map(TableStats::from)
        .collect();
    let dead_tuples = top(&tables, |t| t.dead_tuples > 0, |t| t.dead_tuples);
    let hot_updates = top(&tables, |t| t.updates > 0, |t| t.updates);
    let autovacuum_due = top(
        &tables,
        |t| t.dead_tuples > t.vacuum_threshold,
        |t| t.dead_tuples,
    );

    let active = client
        .query(ACTIVE, &[&ACTIVE_AFTER_SECONDS, &TOP])
        .await?
        .iter()
        .map(|r| ActiveQuery {
            pid: r.get("pid"),
            state: r.get("state"),
            seconds: r.get("seconds"),
            wait_event_type: r.get("wait_event_type"),
            wait_event: r.get("wait_event"),
            backend_type: r.get("backend_type"),
            kind: r.get("kind"),
        })
        .collect();

    let names: Vec<String> = SETTINGS.iter().map(|s| s.to_string()).collect();
    let settings = client
        .query(MEMORY_SETTINGS, &[&names])
        .await?
        .iter()
        .map(|r| Setting {
            name: r.get("name"),
            bytes: r.get("bytes"),
            pretty: r.get("pretty"),
        })
        .collect();

    let buffered = buffer_usage(client).await?;

    let table_sizes = table_sizes(client).await?;

    Ok(PgStats {
        at,
        database,
        table_cache,
        index_cache,
        cache_summary,
        dead_tuples,
        hot_updates,
        active,
        autovacuum_due,
        settings,
        buffered,
        table_sizes,
    })
}

/// The relations of this database with the most pages in the shared buffers, when
/// `pg_buffercache` is installed here (`None` otherwise: Regent never installs it).
async fn buffer_usage(client: &Client) -> Result<Option<Vec<Buffered>>, StoreError> {
    let schema: Option<String> = client
        .query_opt(BUFFERCACHE_SCHEMA, &[])
        .await?
        .map(|r| r.get(0));
    let Some(schema) = schema else {
        return Ok(None);
    };
    // Not a fixed statement: the view is qualified by the schema the extension was installed
    // in, an identifier known only at run time.
    let view = format!("\"{}\".pg_buffercache", schema.replace('"', "\"\""));
    let sql = format!(
        "SELECT c.relname::text AS relation, count(*) AS buffers,
                count(*) * current_setting('block_size')::bigint AS bytes,
                pg_size_pretty(count(*) * current_setting('block_size')::bigint) AS size,
                (100.0 * count(*) / (SELECT setting::bigint FROM pg_settings
                                      WHERE name = 'shared_buffers'))::float8
                  AS percent_of_cache
           FROM {view} b
           JOIN pg_class c ON b.relfilenode = pg_relation_filenode(c.oid)
          WHERE b.reldatabase IN (0, (SELECT oid FROM pg_database
                                       WHERE datname = current_database()))
          GROUP BY c.oid, c.relname
          ORDER BY count(*) DESC, c.relname
          LIMIT $1"
    );
    let rows = client.query(&sql, &[&TOP]).await?;
    Ok(Some(
        rows.iter()
            .map(|r| Buffered {
                relation: r.get("relation"),
                buffers: r.get("buffers"),
                bytes: r.get("bytes"),
                size: r.get("size"),
                percent_of_cache: r.get("percent_of_cache"),
            })
            .collect(),
    ))
}

/// The largest tables, sizes on disk. On Citus a distributed, reference or coordinator-local
/// table's size is its shards' on every node (`citus_total_relation_size`), not its
/// coordinator shell's; its `rows` are still the coordinator's count, which is 0.
async fn table_sizes(client: &Conn) -> Result<Vec<TableSize>, StoreError> {
    let sql = match client.layout() {
        Layout::Single => TABLE_SIZES,
        Layout::Citus => TABLE_SIZES_CITUS,
    };
    Ok(client
        .query(sql, &[&TOP])
        .await?
        .iter()
        .map(|r| TableSize {
            schema: r.get("schemaname"),
            table: r.get("relname"),
            total_bytes: r.get("total_bytes"),
            table_bytes: r.get("table_bytes"),
            index_bytes: r.get("index_bytes"),
            total: r.get("total"),
            table_size: r.get("table_size"),
            index_size: r.get("index_size"),
            live_tuples: r.get("n_live_tup"),
        })
        .collect())
}
