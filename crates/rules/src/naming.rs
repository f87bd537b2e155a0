//! Names the broker derives or reserves.

/// The consumer group of plain queue consumption, used when a request names none.
pub const QUEUE_MODE: &str = "__QUEUE_MODE__";

/// The partition of pushes that name none.
pub const DEFAULT_PARTITION: &str = "Default";

/// The tenant of every request while authentication is off.
pub const DEFAULT_TENANT: &str = "default";

/// An auto-created queue's namespace and task: the text before the first dot, and the text
/// between the first and the second dot (`billing.invoices` -> `billing`, `invoices`).
pub fn derive_namespace_task(queue: &str) -> (String, String) {
    let mut parts = queue.splitn(3, '.');
    let namespace = parts.next().unwrap_or("").to_string();
    let task = parts.next().unwrap_or("").to_string();
    (namespace, task)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_and_task() {
        assert_eq!(
            derive_namespace_task("billing.invoices"),
            ("billing".into(), "invoices".into())
        );
        assert_eq!(derive_namespace_task("a.b.c"), ("a".into(), "b".into()));
        assert_eq!(
            derive_namespace_task("orders"),
            ("orders".into(), "".into())
        );
    }
}
