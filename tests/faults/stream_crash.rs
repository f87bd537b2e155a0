//! A crash between a stream cycle's COMMIT and its answer (the broker's test hook,
//! `REGENT_TEST_ABORT_AFTER_COMMIT`, on the cycle's sink item): the client sees the connection
//! drop with no answer; after a restart, its retry of the same cycle is answered from the
//! commit, and the state, the sink message and the source ack are each there once.

use std::time::Duration;

use serde_json::json;

use crate::harness::{call, Case};

const HOOK: &str = "REGENT_TEST_ABORT_AFTER_COMMIT";
const DOOMED: &str = "window-committed-then-crashed";
const GROUP: &str = "streams.crash";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_between_a_cycles_commit_and_its_answer_makes_the_retry_a_replay() {
    let mut case = Case::start("stream_crash", 1, Duration::from_secs(5), &[(HOOK, DOOMED)]).await;
    case.steady(Duration::from_secs(2)).await;
    let url = case.brokers[0].url();
    let post = reqwest::Method::POST;
    let reg = json!({"name": "crash", "source_queue": "stream-src", "config_hash": "h"});
    let reg = call(&url, post.clone(), "/streams/v1/queries", Some(&reg)).await;
    let push = json!({"items": [
        {"queue": "stream-src", "partition": "p", "transactionId": "in-1", "payload": {"n": 2}},
        {"queue": "stream-src", "partition": "p", "transactionId": "in-2", "payload": {"n": 3}}]});
    call(&url, post.clone(), "/api/v1/push", Some(&push)).await;
    let pop = call(
        &url,
        reqwest::Method::GET,
        &format!("/api/v1/pop/queue/stream-src?wait=false&batch=10&consumerGroup={GROUP}"),
        None,
    )
    .await;
    let partition = pop["partitionId"].clone();
    let cycle = json!({
        "query_id": reg["query_id"], "partition_id": partition, "consumer_group": GROUP,
        "state_ops": [{"type": "upsert", "key": "sum", "value": {"acc": 5}}],
        "push_items": [{"queue": "stream-sink", "payload": {"sum": 5}, "transactionId": DOOMED}],
        "ack": {"transactionId": "in-2", "leaseId": pop["leaseId"], "status": "completed"},
        "release_lease": true,
    });

    let retry = case.crash_after_commit("/streams/v1/cycle", &cycle).await;
    let answer = &retry.body;
    assert_eq!(answer["success"], true, "{answer}");
    assert_eq!(
        answer["push_results"][0]["status"], "queued",
        "the first commit's answer: {answer}"
    );
    assert_eq!(answer["ack_result"]["count"], 2, "{answer}");
    case.recovered().await;

    let read = json!({"query_id": reg["query_id"], "partition_id": partition});
    let state = call(&url, post.clone(), "/streams/v1/state/get", Some(&read)).await;
    assert_eq!(state["rows"].as_array().map(Vec::len), Some(1), "{state}");
    assert_eq!(state["rows"][0]["value"], json!({"acc": 5}), "{state}");
    let sink = call(
        &url,
        reqwest::Method::GET,
        "/api/v1/pop/queue/stream-sink?wait=false&batch=10",
        None,
    )
    .await;
    assert_eq!(sink["messages"].as_array().map(Vec::len), Some(1), "{sink}");
    let again = call(
        &url,
        reqwest::Method::GET,
        &format!("/api/v1/pop/queue/stream-src?wait=false&batch=10&consumerGroup={GROUP}"),
        None,
    )
    .await;
    assert!(
        again["messages"].as_array().is_none_or(Vec::is_empty),
        "acked once: {again}"
    );
    let query = reg["query_id"].as_str().unwrap();
    let parts = call(
        &url,
        reqwest::Method::GET,
        &format!("/streams/v1/queries/{query}/partitions"),
        None,
    )
    .await;
    assert_eq!(parts["partitions"][0]["cycles"], 1, "{parts}");
    case.finish().await;
}
