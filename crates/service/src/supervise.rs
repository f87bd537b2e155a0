//! Background tasks that must keep running (the push and ack flushers, the purge clock, the
//! peer link, the JWKS refresh): each runs under a supervisor that logs a panic and starts the
//! task again after a pause. While a task is down, the broker is not healthy (`/health`
//! answers 503), so an orchestrator routes around it instead of sending it requests it
//! cannot serve.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The first pause before a restart; it doubles while the task keeps panicking soon after
/// each start, up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(100);
const MAX_PAUSE: Duration = Duration::from_secs(10);
/// A task that ran this long before it panicked starts again after the first pause.
const STABLE: Duration = Duration::from_secs(30);

/// The supervised tasks of one broker, and which of them are down now.
#[derive(Clone, Default)]
pub struct Supervisor {
    /// Task name to how many of its instances are down.
    down: Arc<Mutex<BTreeMap<&'static str, usize>>>,
}

impl Supervisor {
    /// Runs the future `make` returns as a task named `name`; when it panics, logs it and
    /// runs a new one. A task that returns has finished its work (the broker is stopping)
    /// and is not restarted.
    pub fn spawn<F, Fut>(&self, name: &'static str, make: F) -> tokio::task::JoinHandle<()>
    where
        F: Fn() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let down = self.down.clone();
        tokio::spawn(async move {
            let mut pause = FIRST_PAUSE;
            loop {
                let started = Instant::now();
                // Aborting the supervisor (at shutdown) aborts the task it watches too.
                let mut run = AbortOnDrop(tokio::spawn(make()));
                let ended = (&mut run.0).await;
                let Err(e) = ended else { return };
                if !e.is_panic() {
                    return;
                }
                tracing::error!(task = name, panic = %panic_text(e), "background task panicked; restarting it");
                if started.elapsed() >= STABLE {
                    pause = FIRST_PAUSE;
                }
                mark(&down, name, 1);
                tokio::time::sleep(pause).await;
                mark(&down, name, -1);
                pause = (pause * 2).min(MAX_PAUSE);
            }
        })
    }

    /// The tasks that are down now, by name.
    pub fn down(&self) -> Vec<&'static str> {
        lock(&self.down)
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(name, _)| *name)
            .collect()
    }
}

/// A task handle that aborts its task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn mark(down: &Mutex<BTreeMap<&'static str, usize>>, name: &'static str, by: isize) {
    let mut down = lock(down);
    let n = down.entry(name).or_default();
    *n = n.saturating_add_signed(by);
}

fn panic_text(e: tokio::task::JoinError) -> String {
    let payload = e.into_panic();
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn a_panicking_task_is_down_until_it_runs_again() {
        let s = Supervisor::default();
        let runs = Arc::new(AtomicUsize::new(0));
        let counted = runs.clone();
        let (finish, finished) = tokio::sync::watch::channel(false);
        let handle = s.spawn("flaky", move || {
            let n = counted.fetch_add(1, Ordering::SeqCst);
            let mut finished = finished.clone();
            async move {
                if n == 0 {
                    panic!("first run fails");
                }
                let _ = finished.wait_for(|f| *f).await;
            }
        });
        let deadline = Instant::now() + Duration::from_secs(2);
        while s.down().is_empty() {
            assert!(Instant::now() < deadline, "the panic was not noticed");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(s.down(), ["flaky"]);
        while runs.load(Ordering::SeqCst) < 2 {
            assert!(Instant::now() < deadline, "the task was not restarted");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(s.down().is_empty(), "running again: up");
        finish.send(true).unwrap();
        handle.await.unwrap();
        assert_eq!(
            runs.load(Ordering::SeqCst),
            2,
            "a task that returns stays ended"
        );
    }

    #[tokio::test]
    async fn aborting_the_supervisor_stops_its_task() {
        let s = Supervisor::default();
        let (alive, mut seen) = tokio::sync::mpsc::channel::<()>(1);
        let handle = s.spawn("forever", move || {
            let alive = alive.clone();
            async move {
                let _alive = alive;
                std::future::pending::<()>().await
            }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(seen.try_recv().is_err() && !seen.is_closed(), "running");
        handle.abort();
        let gone = tokio::time::timeout(Duration::from_secs(1), seen.recv()).await;
        assert_eq!(gone, Ok(None), "the task was dropped with its supervisor");
    }
}
