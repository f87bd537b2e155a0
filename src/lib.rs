//! Regent: a multi-tenant, partitioned message broker that keeps all its state in PostgreSQL
//! and speaks Queen MQ's HTTP/JSON API.
//!
//! This crate assembles the others into one server ([`server`]: start-up and graceful
//! shutdown, [`listener`]: the HTTPS listener) and re-exports them for the binary and the
//! integration tests. The layers, top to bottom: [`http`] (routes, JSON, status codes) over
//! [`service`] (use cases, transaction boundaries) over [`broker`] (the rules, pure) and
//! [`store`] (SQL), with [`runtime`] (the in-memory state) beside `service`. ARCHITECTURE.md
//! has the map; the crate graph enforces it.

pub mod connections;
pub mod listener;
pub mod logging;
pub mod server;

pub use regent_bench as bench;
pub use regent_rules as broker;
pub use regent_private_pg as cluster;
pub use regent_config as config;
pub use regent_http as http;
pub use regent_memory as runtime;
pub use regent_service as service;
pub use regent_store as store;
pub use regent_tls as tls;
