//! Integration tests: the real HTTP API against real PostgreSQL.

mod support;

mod ack_contract;
mod auth;
mod bad_input;
mod bench_smoke;
mod brokers;
mod console;
mod consumer_groups;
mod dev_command;
mod dlq_requeue;
mod fleet;
mod invariants;
mod jwks;
mod layering;
mod limits;
mod maintenance;
mod messages;
mod metrics;
mod openapi;
mod parked;
mod peers;
mod push_pop;
mod python_client;
mod queen_compat;
mod queue_metrics;
mod resources;
mod retention;
mod shutdown;
mod smoke;
mod stats;
mod status;
mod tenants;
mod tls;
mod traces;
mod transaction_api;
