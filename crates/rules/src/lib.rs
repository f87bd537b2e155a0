//! The broker's rules, free of I/O: what a status means, what a set of acks does to a cursor,
//! what a queue's options are when the client left them out. Everything here is unit-tested.

pub mod ack_plan;
pub mod bounds;
pub mod buckets;
pub mod delivery;
pub mod encryption;
pub mod ephemeral;
pub mod group_state;
pub mod kv;
pub mod limits;
pub mod message_status;
pub mod naming;
pub mod options;
pub mod push_plan;
pub mod requeue;
pub mod status;
pub mod streams;
pub mod subscription;
pub mod timers;
pub mod top;
pub mod tx_hash;
