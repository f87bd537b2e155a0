//! The database link cut while pushes are inside their COMMIT (issue 36): the outcome unknown
//! to the broker. A deferred trigger this test adds (it runs at commit) holds every push's
//! commit for a few seconds; the link is cut while one is held; the commits complete on the
//! server with nobody to hear them. The broker must answer those pushes with a 503 that says
//! when to retry (never a 500, never a success it did not see), and the clients' retries of the
//! same transaction ids, once the link heals, must be `duplicate`s naming the messages that
//! committed, each delivered as one message: the ledger explains every redelivery.

use std::time::{Duration, Instant};

use crate::harness::netns::Host;
use crate::harness::{database, Case};

/// How long a held commit waits before it completes.
const HELD: Duration = Duration::from_secs(4);
/// How long the link stays cut: past the held commits, so they complete during the cut.
const CUT: Duration = Duration::from_secs(12);

/// Holds each transaction that writes a segment in its commit, once, while the switch is on.
const STALL: &str = "
CREATE TABLE regent_test_stall (held boolean NOT NULL);
INSERT INTO regent_test_stall VALUES (false);
CREATE FUNCTION regent_test_stall() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT held FROM regent_test_stall)
       AND current_setting('regent_test.stalled', true) IS DISTINCT FROM 'yes' THEN
        PERFORM set_config('regent_test.stalled', 'yes', true);
        PERFORM pg_sleep(%HELD%);
    END IF;
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER regent_test_stall AFTER INSERT ON segments
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION regent_test_stall();";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_during_commit_is_a_503_and_the_retry_finds_the_committed_push() {
    let Some(host) = Host::create() else {
        return;
    };
    let lease = Duration::from_secs(5);
    let mut case = Case::on_host("commit_cut", &host, lease).await;
    // On loopback: this connection is not cut. The switch starts off: the load runs freely.
    let db = database(&case.cluster.url()).await;
    let stall = STALL.replace("%HELD%", &HELD.as_secs().to_string());
    db.batch_execute(&stall).await.expect("the stall trigger");
    case.steady(Duration::from_secs(3)).await;

    db.execute("UPDATE regent_test_stall SET held = true", &[])
        .await
        .unwrap();
    let held = held_commits(&db).await;
    host.cut_database_link();
    db.execute("UPDATE regent_test_stall SET held = false", &[])
        .await
        .unwrap();
    let before = case.unavailable();
    tokio::time::sleep(CUT).await;
    let answered_503 = case.unavailable() - before;
    host.heal_database_link();
    case.recovered().await;
    let book = case.finish().await;
    println!(
        "commit_cut: {held} commits held when the link was cut; {answered_503} 503s during the cut; \
         {} pushes answered duplicate",
        book.duplicates
    );
    assert!(answered_503 > 0, "no 503 while the link was cut");
    // Each held commit completed with nobody to hear it; its client's retry found it.
    assert!(
        book.duplicates >= 1,
        "no retry found a push that committed during the cut"
    );
}

/// Waits (10 s at most) until a broker's transaction is held in its commit; how many are.
async fn held_commits(db: &tokio_postgres::Client) -> i64 {
    let give_up = Instant::now() + Duration::from_secs(10);
    loop {
        let n: i64 = db
            .query_one(
                "SELECT count(*) FROM pg_stat_activity
                  WHERE wait_event = 'PgSleep' AND pid <> pg_backend_pid()",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        if n > 0 {
            return n;
        }
        assert!(Instant::now() < give_up, "no push was held in its commit");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
