//! What can go wrong below the service layer, classified so the caller can answer well: the
//! client's data (a 4xx or a per-item error), the database unreachable (retry later), or a
//! fault of ours.

use tokio_postgres::error::SqlState;

use crate::frames;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("pool")]
    Pool(#[from] deadpool_postgres::PoolError),
    #[error("{}", db_message(.0))]
    Db(#[from] tokio_postgres::Error),
    /// A segment or dead letter whose bytes do not decode: damaged storage, not bad input.
    #[error("corrupt segment frame")]
    Corrupt,
    /// A message that the frame layout cannot hold.
    #[error("{0}")]
    TooLarge(#[from] frames::TooLarge),
    /// What the transaction decided on changed under it (a check before commit found a
    /// concurrent commit it had not seen): nothing of it may commit; run it again.
    #[error("changed by a concurrent transaction")]
    Changed,
}

impl From<frames::Corrupt> for StoreError {
    fn from(_: frames::Corrupt) -> StoreError {
        StoreError::Corrupt
    }
}

/// The server's own message when there is one ("invalid input syntax for type uuid: ..."),
/// which is what the ack contract reports for a group whose resolution failed.
fn db_message(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => db.message().to_string(),
        None => e.to_string(),
    }
}

/// The transaction lost to a concurrent one: a serialization failure or a deadlock victim.
fn lost_to_another(code: &SqlState) -> bool {
    *code == SqlState::T_R_SERIALIZATION_FAILURE || *code == SqlState::T_R_DEADLOCK_DETECTED
}

impl StoreError {
    /// Worth running the whole transaction again: a serialization failure or deadlock victim,
    /// or a connection that broke before commit (nothing was committed). An exhausted pool is
    /// not: it already waited its bounded time, and waiting again only piles up requests.
    pub fn is_retryable(&self) -> bool {
        match self {
            StoreError::Db(e) => match e.code() {
                Some(c) => {
                    lost_to_another(c)
                        || *c == SqlState::ADMIN_SHUTDOWN
                        || *c == SqlState::CANNOT_CONNECT_NOW
                }
                None => e.is_closed(),
            },
            StoreError::Changed => true,
            StoreError::Pool(_) | StoreError::Corrupt | StoreError::TooLarge(_) => false,
        }
    }

    /// PostgreSQL answered the statement with an error, so nothing of it was committed (a
    /// lost connection, by contrast, leaves a lone statement's commit unknown).
    pub fn was_refused(&self) -> bool {
        matches!(self, StoreError::Db(e) if e.code().is_some())
    }

    /// The database could not be reached or is overloaded: the client may retry later.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, StoreError::Pool(_)) || self.is_retryable()
    }

    /// The database is up but could not take this now: every pooled connection stayed busy
    /// for the pool's whole wait, or the transaction lost to another one (serialization,
    /// deadlock) every time it ran. A moment later may do; nothing is down.
    pub fn is_busy(&self) -> bool {
        match self {
            StoreError::Pool(deadpool_postgres::PoolError::Timeout(_)) => true,
            StoreError::Db(e) => e.code().is_some_and(lost_to_another),
            StoreError::Changed => true,
            _ => false,
        }
    }

    /// An optimistic append met a transaction id that is already indexed (see
    /// [`crate::append::Dedup::Optimistic`]): the transaction is void and must be re-run
    /// carefully.
    pub fn is_duplicate(&self) -> bool {
        matches!(self, StoreError::Db(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION))
    }

    /// A partition named by what the broker knew of it is gone, or its queue's options
    /// changed ([`crate::append::append_known`]): nothing was written; look it up again.
    pub fn is_stale(&self) -> bool {
        matches!(self, StoreError::Db(e) if e.code() == Some(&SqlState::NO_DATA_FOUND))
    }

    /// The client sent something the database rejected: bad data (class 22: a malformed
    /// uuid, a NUL in a payload) or a value past a limit (class 54: an oversized key), or a
    /// message too large to frame. A 4xx or a per-item error, never a 500.
    pub fn is_client_error(&self) -> bool {
        match self {
            StoreError::Db(e) => e
                .code()
                .map(|c| c.code().starts_with("22") || c.code().starts_with("54"))
                .unwrap_or(false),
            StoreError::TooLarge(_) => true,
            _ => false,
        }
    }
}
