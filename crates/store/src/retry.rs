//! The one retry loop: a unit of work that failed in a way that is safe to repeat (see
//! [`StoreError::is_retryable`]) runs again from the start, after a short, growing, jittered
//! pause. Every write is idempotent (push dedup, ack noop), so a transaction whose commit
//! answer was lost is harmless to repeat.

use std::future::Future;
use std::time::Duration;

use crate::StoreError;

/// Attempts at most, the first included.
pub const ATTEMPTS: u32 = 4;

/// No attempt starts once the work has run this long. The failures worth repeating come
/// fast (a deadlock victim, a connection PostgreSQL closed on restart); a connection that
/// died silently fails only after the TCP user timeout (`crate::net`), and a second attempt
/// would likely wait as long on another connection of the same dead link, while the client
/// could already be told to come back (503 with `Retry-After`).
pub const RETRY_WITHIN: Duration = Duration::from_secs(2);

/// Runs `attempt` until it succeeds, fails for good, has run [`ATTEMPTS`] times, or has
/// run for [`RETRY_WITHIN`].
pub async fn retrying<T, F, Fut>(mut attempt: F) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, StoreError>>,
{
    let started = tokio::time::Instant::now();
    let mut n = 0;
    loop {
        n += 1;
        match attempt().await {
            Err(e) if runs_again(n, e.is_retryable(), started.elapsed()) => {
                tracing::debug!(error = %e, attempt = n, "retrying");
                tokio::time::sleep(backoff(n)).await;
            }
            other => return other,
        }
    }
}

/// Whether work whose `n`-th attempt failed (`retryable`: in a way safe to repeat) after
/// running `ran` in all starts again.
fn runs_again(n: u32, retryable: bool, ran: Duration) -> bool {
    retryable && n < ATTEMPTS && ran < RETRY_WITHIN
}

/// 10, 20, 40 ms, each with up to half again at random: deadlock victims that retried in
/// lockstep would meet again.
fn backoff(attempt: u32) -> Duration {
    let base = 5u64 << attempt.min(6);
    let jitter = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64)
        .unwrap_or(0)
        % (base / 2 + 1);
    Duration::from_millis(base + jitter)
}

/// Runs a block in a transaction and commits it, under [`retrying`]. The block sees
/// `tx: &Tx` and evaluates to `Result<T, StoreError>`. (A macro rather than a
/// closure-taking function: a closure handed a borrowed transaction cannot be proven `Send`
/// for the futures axum runs.)
#[macro_export]
macro_rules! in_transaction {
    ($store:expr, |$tx:ident| $body:block) => {
        match $crate::commit_if!($store, |$tx| {
            let r: Result<_, $crate::StoreError> = async { $body }.await;
            r.map(Ok::<_, ::std::convert::Infallible>)
        }) {
            Ok(Ok(t)) => Ok(t),
            Ok(Err(never)) => match never {},
            Err(e) => Err(e),
        }
    };
}

/// Like [`in_transaction!`], but the block evaluates to `Result<Result<T, R>, StoreError>`
/// and an inner `Err` rolls the transaction back instead of committing.
#[macro_export]
macro_rules! commit_if {
    ($store:expr, |$tx:ident| $body:block) => {{
        let store: &$crate::Store = &$store;
        $crate::retrying(|| async {
            let mut client = store.client().await?;
            let txn = client.begin().await?;
            let out: Result<_, $crate::StoreError> = {
                let $tx = &txn;
                async { $body }.await
            };
            let out = out?;
            match &out {
                Ok(_) => txn.commit().await?,
                Err(_) => txn.rollback().await?,
            }
            Ok(out)
        })
        .await
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_with_jitter_of_at_most_half() {
        for attempt in 1..ATTEMPTS {
            let base = 5u64 << attempt;
            let d = backoff(attempt).as_millis() as u64;
            assert!((base..=base + base / 2).contains(&d), "{attempt}: {d}");
        }
    }

    #[test]
    fn work_that_failed_slowly_or_often_or_for_good_is_not_started_again() {
        let quick = Duration::from_millis(30);
        assert!(runs_again(1, true, quick));
        assert!(runs_again(ATTEMPTS - 1, true, quick));
        assert!(!runs_again(ATTEMPTS, true, quick), "at most ATTEMPTS runs");
        assert!(!runs_again(1, false, quick), "a failure for good");
        assert!(
            !runs_again(1, true, RETRY_WITHIN),
            "a connection that took its timeout to die is answered, not tried again"
        );
    }

    #[tokio::test]
    async fn only_retryable_failures_run_again_and_not_forever() {
        let mut runs = 0;
        let r: Result<(), _> = retrying(|| {
            runs += 1;
            async { Err(StoreError::Corrupt) }
        })
        .await;
        assert!(r.is_err());
        assert_eq!(runs, 1, "a fault of ours is not retried");
    }
}
