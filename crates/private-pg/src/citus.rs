//! A private Citus cluster: a coordinator and N workers, each a [`PrivateCluster`] with Citus
//! preloaded, the workers registered with the coordinator. `regent dev --citus N` serves on
//! it and the Citus tests run against it, so that a distributed PostgreSQL is one command
//! away on a machine where Citus is installed (`scripts/citus` finds or builds it).
//!
//! The broker only ever talks to the coordinator: workers are reached through it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::PrivateCluster;

/// Every node: Citus loaded at start (it must be first in the list); prepared transactions
/// allowed, since a transaction that writes shards on two workers commits on them in two
/// phases; and the nodes' connections to each other without TLS. They are on loopback, and
/// a private cluster has no certificates (Citus asks for TLS by default, and libpq would then
/// look for client certificates in the home directory of whoever started the broker).
/// Citus runs a maintenance daemon (a background worker) in every database that has the
/// extension, and each keeps connections to the workers; the integration tests make a
/// database per test, so the nodes allow many of both.
const NODE_SETTINGS: &[&str] = &[
    "shared_preload_libraries=citus",
    "max_prepared_transactions=200",
    "citus.node_conninfo=sslmode=disable",
    "max_worker_processes=256",
    "max_connections=1000",
];

const MISSING: &str = "the Citus extension is not installed in this PostgreSQL (no citus.so in \
    `pg_config --pkglibdir`); scripts/citus builds it from a Citus source tarball";

/// Whether this machine's PostgreSQL has the Citus extension (`citus.so` in `pg_config
/// --pkglibdir`), so callers that only want Citus when it is there can say they skip.
pub fn installed() -> bool {
    std::process::Command::new("pg_config")
        .arg("--pkglibdir")
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .is_some_and(|dir| Path::new(&dir).join("citus.so").is_file())
}

/// A running coordinator and its workers. Call [`CitusCluster::stop`] to shut them down.
#[derive(Debug)]
pub struct CitusCluster {
    coordinator: PrivateCluster,
    workers: Vec<PrivateCluster>,
    /// One copy of a database at a time: two would race to close the template.
    copying: tokio::sync::Mutex<()>,
}

impl CitusCluster {
    /// Starts a coordinator and `workers` workers. `data_dir: None` => temporary clusters;
    /// `Some(dir)` => `dir/coordinator` and `dir/worker-<i>`, kept between runs (the
    /// coordinator's record of its workers is brought up to date with this run's ports).
    pub async fn start(workers: usize, data_dir: Option<PathBuf>) -> Result<CitusCluster> {
        if workers == 0 {
            bail!("a Citus cluster needs at least one worker");
        }
        let node_dir = |name: &str| data_dir.as_deref().map(|d: &Path| d.join(name));
        let coordinator = PrivateCluster::start_with(node_dir("coordinator"), NODE_SETTINGS)
            .await
            .map_err(explain_missing)?;
        let mut cluster = CitusCluster {
            coordinator,
            workers: Vec::with_capacity(workers),
            copying: Default::default(),
        };
        let started = cluster.start_workers(workers, node_dir).await;
        let registered = match started {
            Ok(()) => cluster.register().await,
            Err(e) => Err(e),
        };
        if let Err(e) = registered {
            cluster.stop().await.ok();
            return Err(e);
        }
        Ok(cluster)
    }

    async fn start_workers(
        &mut self,
        n: usize,
        node_dir: impl Fn(&str) -> Option<PathBuf>,
    ) -> Result<()> {
        for i in 1..=n {
            let worker =
                PrivateCluster::start_with(node_dir(&format!("worker-{i}")), NODE_SETTINGS)
                    .await
                    .with_context(|| format!("starting Citus worker {i}"))?;
            self.workers.push(worker);
        }
        Ok(())
    }

    /// The extension on every node, then the coordinator told where each worker and it
    /// listen. A persistent cluster's nodes come back on new ports, so a worker already
    /// known is moved to its new port rather than added again.
    async fn register(&self) -> Result<()> {
        self.register_in(DEFAULT_DATABASE).await
    }

    /// [`CitusCluster::register`] for database `db` (Citus keeps its node list per database).
    async fn register_in(&self, db: &str) -> Result<()> {
        for node in self.nodes() {
            execute(
                &in_database(&node.url(), db),
                "CREATE EXTENSION IF NOT EXISTS citus",
            )
            .await?;
        }
        let mut client = connect(&in_database(&self.coordinator.url(), db)).await?;
        let ports: Vec<u16> = self.workers.iter().map(PrivateCluster::port).collect();
        let tx = client.transaction().await?;
        let known = place_known_workers(&tx, &ports).await?;
        for (i, port) in ports.iter().enumerate().skip(known) {
            tx.execute(
                "SELECT citus_add_node('127.0.0.1', $1)",
                &[&i32::from(*port)],
            )
            .await
            .with_context(|| format!("adding Citus worker {}", i + 1))?;
        }
        tx.commit()
            .await
            .context("committing the Citus node list")?;
        // Last: setting it syncs Citus's metadata to every worker, which must be where the
        // node list says, and in sync, by then. A moved worker is out of sync until Citus's
        // maintenance daemon has synced it, which it does within seconds.
        wait_until_synced(&client).await?;
        client
            .execute(
                "SELECT citus_set_coordinator_host('127.0.0.1', $1)",
                &[&i32::from(self.coordinator.port())],
            )
            .await
            .context("registering the Citus coordinator")?;
        Ok(())
    }

    /// The coordinator's URL: the only one a broker needs.
    pub fn url(&self) -> String {
        self.coordinator.url()
    }

    /// The coordinator first, then the workers.
    fn nodes(&self) -> impl Iterator<Item = &PrivateCluster> {
        std::iter::once(&self.coordinator).chain(&self.workers)
    }

    /// Creates database `name` on every node, with the extension, the workers registered in
    /// the coordinator's copy. Returns its URL on the coordinator.
    pub async fn create_database(&self, name: &str) -> Result<String> {
        for node in self.nodes() {
            execute(&node.url(), &format!("CREATE DATABASE {name}")).await?;
        }
        self.register_in(name).await?;
        Ok(in_database(&self.url(), name))
    }

    /// Copies database `template` (one [`CitusCluster::create_database`] made) to `name` on
    /// every node, workers first, and returns the copy's URL on the coordinator. Each copy
    /// names the same nodes and shards, so the copies make one distributed database as the
    /// templates do. The template takes no connections from the first copy on: PostgreSQL
    /// copies only a database nobody is connected to, and Citus's own daemon would connect.
    pub async fn copy_database(&self, template: &str, name: &str) -> Result<String> {
        let _one_at_a_time = self.copying.lock().await;
        for node in self
            .workers
            .iter()
            .chain(std::iter::once(&self.coordinator))
        {
            let client = connect(&node.url()).await?;
            // One statement at a time: CREATE DATABASE refuses to run in a batch's implicit
            // transaction.
            for sql in [
                format!("ALTER DATABASE {template} ALLOW_CONNECTIONS false"),
                format!(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                      WHERE datname = '{template}'"
                ),
                format!("CREATE DATABASE {name} TEMPLATE {template}"),
            ] {
                client
                    .batch_execute(&sql)
                    .await
                    .with_context(|| format!("copying {template} to {name} on {}", node.url()))?;
            }
        }
        Ok(in_database(&self.url(), name))
    }

    pub fn coordinator(&self) -> &PrivateCluster {
        &self.coordinator
    }

    pub fn workers(&self) -> &[PrivateCluster] {
        &self.workers
    }

    /// Stops the workers, then the coordinator (each as [`PrivateCluster::stop`]).
    pub async fn stop(self) -> Result<()> {
        let mut first_error = None;
        for worker in self.workers {
            if let Err(e) = worker.stop().await {
                first_error.get_or_insert(e);
            }
        }
        if let Err(e) = self.coordinator.stop().await {
            first_error.get_or_insert(e);
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// Moves the workers the coordinator already knows, in node order, to `ports`; returns how
/// many it knew. Every row of the node list must keep a distinct address, and a node's new
/// port may be the old port of another, the coordinator's included (ports are picked free
/// at each start, and a port one node left is free for the next). So every row is first
/// set aside to an address no node has (a name under `.invalid`, which never resolves),
/// then each worker put where it is now; the caller sets the coordinator's own row last.
async fn place_known_workers(tx: &tokio_postgres::Transaction<'_>, ports: &[u16]) -> Result<usize> {
    const MOVE: &str = "SELECT citus_update_node($1, $2, $3)";
    let nodes = tx
        .query(
            "SELECT nodeid, nodeport, groupid <> 0 AS is_worker FROM pg_dist_node ORDER BY nodeid",
            &[],
        )
        .await
        .context("reading the Citus node list")?;
    for node in &nodes {
        let id: i32 = node.get("nodeid");
        let aside = format!("regent-moving-{id}.invalid");
        tx.execute(MOVE, &[&id, &aside, &node.get::<_, i32>("nodeport")])
            .await
            .context("setting the Citus node list aside")?;
    }
    let workers = nodes.iter().filter(|n| n.get::<_, bool>("is_worker"));
    let mut moved = 0;
    for (row, port) in workers.zip(ports) {
        moved += 1;
        tx.execute(
            MOVE,
            &[
                &row.get::<_, i32>("nodeid"),
                &"127.0.0.1",
                &i32::from(*port),
            ],
        )
        .await
        .with_context(|| format!("moving Citus worker {moved} to port {port}"))?;
    }
    Ok(moved)
}

/// How long a moved worker may take to get Citus's metadata again.
const SYNC_TIMEOUT: Duration = Duration::from_secs(30);

async fn wait_until_synced(client: &tokio_postgres::Client) -> Result<()> {
    let deadline = Instant::now() + SYNC_TIMEOUT;
    loop {
        let synced: bool = client
            .query_one(
                "SELECT coalesce(bool_and(metadatasynced), true) FROM pg_dist_node WHERE groupid <> 0",
                &[],
            )
            .await
            .context("reading the Citus workers' sync state")?
            .get(0);
        if synced {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!("Citus workers still out of sync after {SYNC_TIMEOUT:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A postmaster that cannot load Citus says so in its log tail; say what to do about it.
fn explain_missing(e: anyhow::Error) -> anyhow::Error {
    let shown = format!("{e:#}");
    if shown.contains("citus") && shown.contains("could not access file") {
        e.context(MISSING)
    } else {
        e
    }
}

/// Where `regent dev` serves, and the node list the cluster starts with.
const DEFAULT_DATABASE: &str = "postgres";

/// `url` (a private cluster's, ending in its database name) for database `db`.
fn in_database(url: &str, db: &str) -> String {
    let base = url.rsplit_once('/').map_or(url, |(base, _)| base);
    format!("{base}/{db}")
}

async fn connect(url: &str) -> Result<tokio_postgres::Client> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .with_context(|| format!("connecting to {url}"))?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!(error = %e, "Citus set-up connection ended");
        }
    });
    Ok(client)
}

async fn execute(url: &str, sql: &str) -> Result<()> {
    connect(url)
        .await?
        .batch_execute(sql)
        .await
        .with_context(|| format!("{sql} on {url}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Needs Citus installed (scripts/citus); says it is skipped otherwise.
    #[tokio::test]
    async fn a_coordinator_and_two_workers_route_a_distributed_table_to_both() {
        if !installed() {
            eprintln!("skipped: Citus is not installed (scripts/citus)");
            return;
        }
        let cluster = CitusCluster::start(2, None).await.unwrap();
        let client = connect(&cluster.url()).await.unwrap();
        let workers: i64 = client
            .query_one("SELECT count(*) FROM citus_get_active_worker_nodes()", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(workers, 2);
        client
            .batch_execute(
                "CREATE TABLE t (k int PRIMARY KEY, v text);
                 SELECT create_distributed_table('t', 'k');
                 INSERT INTO t SELECT g, 'x' FROM generate_series(1, 100) g;",
            )
            .await
            .unwrap();
        let nodes: i64 = client
            .query_one(
                "SELECT count(DISTINCT nodeport) FROM citus_shards WHERE table_name = 't'::regclass",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(nodes, 2, "the shards are spread over both workers");
        let rows: i64 = client
            .query_one("SELECT count(*) FROM t", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(rows, 100);
        cluster.stop().await.unwrap();
    }

    /// A node's new port can be another node's old one: a worker can come back on the port
    /// another worker had, or on the coordinator's. Both moves are made (inside a transaction
    /// rolled back, so the running cluster is left as it was).
    #[tokio::test]
    async fn workers_that_take_other_nodes_ports_are_moved() {
        let cluster = CitusCluster::start(2, None).await.unwrap();
        let mut client = connect(&cluster.url()).await.unwrap();
        let ports: Vec<u16> = cluster.workers().iter().map(PrivateCluster::port).collect();
        let traded = vec![ports[1], cluster.coordinator().port()];
        let tx = client.transaction().await.unwrap();
        let moved = place_known_workers(&tx, &traded).await.unwrap();
        assert_eq!(moved, 2);
        let known: Vec<i32> = tx
            .query(
                "SELECT nodeport FROM pg_dist_node WHERE groupid <> 0 ORDER BY nodeid",
                &[],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(
            known,
            traded.iter().map(|p| i32::from(*p)).collect::<Vec<_>>()
        );
        tx.rollback().await.unwrap();
        cluster.stop().await.unwrap();
    }

    /// A persistent cluster's nodes come back on new ports: the coordinator's record of its
    /// workers follows them, and the data on the workers is reachable again.
    #[tokio::test]
    async fn a_persistent_cluster_finds_its_workers_on_their_new_ports() {
        let root = std::env::temp_dir().join(format!("regent-citustest-{}", uuid::Uuid::now_v7()));
        let first = CitusCluster::start(2, Some(root.clone())).await.unwrap();
        connect(&first.url())
            .await
            .unwrap()
            .batch_execute(
                "CREATE TABLE kept (k int PRIMARY KEY);
                 SELECT create_distributed_table('kept', 'k');
                 INSERT INTO kept SELECT generate_series(1, 100);",
            )
            .await
            .unwrap();
        first.stop().await.unwrap();

        let second = CitusCluster::start(2, Some(root.clone())).await.unwrap();
        let client = connect(&second.url()).await.unwrap();
        let known: Vec<i32> = client
            .query(
                "SELECT nodeport FROM pg_dist_node WHERE groupid <> 0 ORDER BY nodeid",
                &[],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        let ports: Vec<i32> = second
            .workers()
            .iter()
            .map(|w| i32::from(w.port()))
            .collect();
        assert_eq!(
            known, ports,
            "the coordinator knows its workers where they are now"
        );
        let rows: i64 = client
            .query_one("SELECT count(*) FROM kept", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(rows, 100);
        second.stop().await.unwrap();
        std::fs::remove_dir_all(&root).unwrap();
    }
}
