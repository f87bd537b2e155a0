//! A crash between a push's COMMIT and its answer, made deterministic by the broker's test
//! hook (`REGENT_TEST_ABORT_AFTER_COMMIT`, docs/development.md, "The fault suite"): the client sees the
//! connection drop with no answer; after a restart its retry of the same transaction id is a
//! `duplicate` of the message that committed, and that message is delivered once.

use std::time::Duration;

use serde_json::json;

use crate::harness::ledger::Ack;
use crate::harness::{load, Case};

const HOOK: &str = "REGENT_TEST_ABORT_AFTER_COMMIT";
const DOOMED: &str = "committed-then-crashed";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_between_commit_and_answer_makes_the_retry_a_duplicate_delivered_once() {
    let mut case = Case::start(
        "crash_after_commit",
        1,
        Duration::from_secs(5),
        &[(HOOK, DOOMED)],
    )
    .await;
    case.steady(Duration::from_secs(4)).await;

    case.ledger.sent(&[DOOMED.to_string()]);
    let push = json!({ "items": [load::item(DOOMED, 0)] });
    let retry = case.crash_after_commit("/api/v1/push", &push).await;
    let answer = &retry.body[0];
    assert_eq!(answer["status"], "duplicate", "{answer}");
    case.ledger.answered(&retry.body);
    case.recovered().await;

    let book = case.finish().await;
    let deliveries = book.deliveries_of(DOOMED);
    assert_eq!(deliveries.len(), 1, "delivered once: {deliveries:?}");
    assert_eq!(
        answer["message_id"].as_str(),
        Some(deliveries[0].message_id.as_str()),
        "the duplicate names the message that committed"
    );
    assert_eq!(deliveries[0].ack, Ack::Committed);
}
