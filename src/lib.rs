//! Regent: a multi-tenant, partitioned message broker that keeps all its state in PostgreSQL
//! and speaks Queen MQ's HTTP/JSON API.
//!
//! Layers, top to bottom: [`http`] (routes, JSON, status codes) over [`broker`] (the rules,
//! pure) over [`store`] (SQL). Only `store` knows SQL; only `http` knows JSON.

pub mod activity;
pub mod bench;
pub mod broker;
pub mod cluster;
pub mod config;
pub mod deliveries;
pub mod http;
pub mod limits;
pub mod peers;
pub mod server;
pub mod store;
pub mod tls;
pub mod wakeup;
