//! Queen Streams' rules (`/streams/v1/*`): what registering a query does against the one
//! already stored under its name, a cycle's state operations reduced to one write per key,
//! what identifies a cycle when the client retries it, and the sizes a cycle may have.

use uuid::Uuid;
use xxhash_rust::xxh3::xxh3_128;

/// A state row's key, in bytes: well under PostgreSQL's limit for a B-tree entry, so a long
/// key is refused with its own text instead of failing the index insert.
pub const MAX_STATE_KEY_BYTES: usize = 2048;

/// A state row's value, as JSON text, in bytes.
pub const MAX_STATE_VALUE_BYTES: usize = 1 << 20;

/// What a registration does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Registration {
    /// A new name: a new query id (`fresh: true`).
    Create,
    /// The same name and hash: the stored query, as it is.
    Keep,
    /// Another hash with `reset: true`: the stored query's state is deleted and the sent hash
    /// adopted.
    Reset,
    /// Another hash without `reset`: refused (409), nothing changed.
    Conflict,
}

/// Registering a query whose name holds `stored` (its config hash) with `sent`. `reset` only
/// matters when the hashes differ, as the client documents it ("wipe existing state if
/// config_hash mismatches"): the SDK sends its `reset` flag on every start, so a pipeline
/// left with `reset=True` must not lose its state each time it restarts unchanged.
pub fn register(stored: Option<&str>, sent: &str, reset: bool) -> Registration {
    match stored {
        None => Registration::Create,
        Some(h) if h == sent => Registration::Keep,
        Some(_) if reset => Registration::Reset,
        Some(_) => Registration::Conflict,
    }
}

/// One state operation of a cycle.
#[derive(Clone, Debug, PartialEq)]
pub enum StateOp<V> {
    Upsert { key: String, value: V },
    Delete { key: String },
}

impl<V> StateOp<V> {
    pub fn key(&self) -> &str {
        match self {
            StateOp::Upsert { key, .. } | StateOp::Delete { key } => key,
        }
    }
}

/// A cycle's state operations as writes: the last operation on each key wins, as if they ran
/// in order; returned as (keys to delete, rows to upsert), each key once.
pub fn collapse<V>(ops: Vec<StateOp<V>>) -> (Vec<String>, Vec<(String, V)>) {
    let mut last: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (i, op) in ops.iter().enumerate() {
        last.insert(op.key().to_string(), i);
    }
    let (mut deletes, mut upserts) = (Vec::new(), Vec::new());
    for (i, op) in ops.into_iter().enumerate() {
        if last.get(op.key()) != Some(&i) {
            continue;
        }
        match op {
            StateOp::Delete { key } => deletes.push(key),
            StateOp::Upsert { key, value } => upserts.push((key, value)),
        }
    }
    (deletes, upserts)
}

/// A cycle's identity: a hash of its request body. A client retrying a cycle whose answer it
/// lost sends the same bytes, so the same digest; any other cycle of the same (query,
/// partition) differs at least in its ack (another lease or message) or its state.
pub fn cycle_digest(body: &[u8]) -> Uuid {
    Uuid::from_u128(xxh3_128(body))
}

/// The transaction id of a sink push the client sent without one: derived from the cycle and
/// the item's place in it, so a cycle applied twice pushes each item once (the second is a
/// duplicate), where a fresh id would push it again.
pub fn sink_transaction_id(digest: Uuid, index: usize) -> String {
    format!("stream-{digest}-{index}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registration_table() {
        use Registration::*;
        assert_eq!(register(None, "h1", false), Create);
        assert_eq!(register(None, "h1", true), Create);
        assert_eq!(register(Some("h1"), "h1", false), Keep);
        assert_eq!(register(Some("h1"), "h2", false), Conflict);
        assert_eq!(register(Some("h1"), "h2", true), Reset);
        assert_eq!(
            register(Some("h1"), "h1", true),
            Keep,
            "an unchanged restart keeps its state"
        );
    }

    fn up(k: &str, v: i32) -> StateOp<i32> {
        StateOp::Upsert {
            key: k.into(),
            value: v,
        }
    }
    fn del(k: &str) -> StateOp<i32> {
        StateOp::Delete { key: k.into() }
    }

    #[test]
    fn the_last_operation_on_a_key_wins() {
        let (d, u) = collapse(vec![up("a", 1), del("b"), up("a", 2), up("b", 3), del("c")]);
        assert_eq!(d, vec!["c".to_string()]);
        assert_eq!(u, vec![("a".to_string(), 2), ("b".to_string(), 3)]);
        let (d, u) = collapse(vec![up("a", 1), del("a")]);
        assert_eq!((d, u), (vec!["a".to_string()], vec![]));
        let (d, u) = collapse::<i32>(vec![]);
        assert!(d.is_empty() && u.is_empty());
    }

    #[test]
    fn a_retry_has_the_digest_of_its_first_attempt_and_items_their_ids() {
        let a = cycle_digest(br#"{"query_id":"q","ack":{"leaseId":"l1"}}"#);
        let b = cycle_digest(br#"{"query_id":"q","ack":{"leaseId":"l2"}}"#);
        assert_eq!(
            a,
            cycle_digest(br#"{"query_id":"q","ack":{"leaseId":"l1"}}"#)
        );
        assert_ne!(a, b);
        assert_eq!(sink_transaction_id(a, 3), sink_transaction_id(a, 3));
        assert_ne!(sink_transaction_id(a, 3), sink_transaction_id(a, 4));
        assert_ne!(sink_transaction_id(a, 3), sink_transaction_id(b, 3));
    }
}
