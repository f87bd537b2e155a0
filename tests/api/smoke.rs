use serde_json::json;

use crate::support::{broker, Broker};

#[tokio::test]
async fn push_pop_ack_round_trip() {
    let b = broker().await;
    let pushed = b.push("orders", "Default", &["a", "b", "c"]).await;
    let pid = pushed[0]["partition_id"].as_str().unwrap().to_string();
    let pop = b.pop("orders", "batch=10").await;
    assert_eq!(Broker::txids(&pop), vec!["a", "b", "c"]);
    let lease = pop["leaseId"].as_str().unwrap();
    let res = b
        .ack_batch(None, json!([{"transactionId": "c", "partitionId": pid, "leaseId": lease, "status": "completed"}]))
        .await;
    assert_eq!(res[0]["success"], true, "{res:?}");
    assert_eq!(res[0]["leaseReleased"], true);
    assert_eq!(b.cursor(&pid, "__QUEUE_MODE__").await, Some((2, false, 0)));
    let again = b.pop("orders", "batch=10").await;
    assert_eq!(again["error"], "no_available_partition");
}
