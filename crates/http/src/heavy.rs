//! The CPU-heavy steps of large requests (parsing a big body, rendering a big answer) run on
//! tokio's blocking threads instead of the async workers. A worker holds each task it runs
//! until the task yields, so one tenant's batch of 1,000 messages (milliseconds of parsing)
//! held back every request queued behind it on that worker, another tenant's one-message pop
//! included (issue 36, noisy neighbours). On a thread of its own, the operating system
//! time-slices the big step against the workers, and a small request is picked up at once.
//! Small steps stay where they are: handing one to another thread costs more than it takes.

/// Bytes of body (or of payloads in an answer) from which a step moves off the workers.
pub(crate) const HEAVY_BYTES: usize = 64 * 1024;

/// Runs `step` here when `bytes` is small, else on a blocking thread. A panic in it goes on
/// as the handler's own, which the edge answers 500 as any other.
pub(crate) async fn step<T: Send + 'static>(
    bytes: usize,
    step: impl FnOnce() -> T + Send + 'static,
) -> T {
    if bytes < HEAVY_BYTES {
        return step();
    }
    match tokio::task::spawn_blocking(step).await {
        Ok(t) => t,
        Err(e) => match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            // Only a runtime shutting down cancels a blocking task.
            Err(_) => panic!("the runtime is shutting down"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn here() -> std::thread::ThreadId {
        std::thread::current().id()
    }

    #[tokio::test]
    async fn a_big_step_leaves_the_worker_and_a_small_one_stays() {
        let worker = here();
        assert_eq!(step(HEAVY_BYTES - 1, here).await, worker);
        assert_ne!(step(HEAVY_BYTES, here).await, worker);
    }

    #[tokio::test]
    async fn a_panic_in_a_big_step_is_the_callers() {
        let caught = tokio::spawn(step(HEAVY_BYTES, || -> u8 { panic!("in the step") })).await;
        let panic = caught
            .expect_err("the panic reached the caller")
            .into_panic();
        assert_eq!(panic.downcast_ref::<&str>(), Some(&"in the step"));
    }
}
