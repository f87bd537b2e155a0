//! Fault tests: real `regent serve` processes on real PostgreSQL, each case with a cluster of
//! its own, under load from producers and consumers that behave as careful clients; a fault is
//! injected, the load goes on, and the ledger of every transaction id shows that nothing
//! acknowledged was lost, nothing delivered was never pushed or arrived altered, and every
//! redelivery had a reason (an ack that did not commit). Every 503 must say when to retry,
//! and nothing may answer another 5xx.

mod harness;

mod broker_killed;
mod commit_cut;
mod crash_after_commit;
mod network_cut;
mod peers_stalled;
mod postgres_killed;
mod postgres_restarted;
mod postgres_stopped;
mod rolling_restart;
mod slow_link;
mod stream_crash;
mod timers_killed;
mod two_brokers;
