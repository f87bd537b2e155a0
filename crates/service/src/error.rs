//! What a use case answers when it cannot do what was asked. The HTTP layer maps each kind to
//! a status code; internal details travel only as far as the log.

use std::time::Duration;

use regent_memory::limiter::Refusal;
use regent_store::StoreError;

/// Clone: one failure of a claim made for several pops is every one's answer.
#[derive(Clone, Debug, thiserror::Error)]
pub enum Error {
    /// The request cannot be carried out as sent: the text says why, for the client.
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    NotFound(String),
    /// The request is valid but the tenant's state refuses it now (push maintenance): the
    /// text says until when.
    #[error("{0}")]
    Conflict(String),
    /// Over a tenant limit.
    #[error("{0:?}")]
    Limited(Refusal),
    /// Nothing was done and the client may try again after `retry_after`: the database is
    /// unreachable or overloaded, or the broker is going away.
    #[error("{reason}")]
    Unavailable {
        reason: &'static str,
        retry_after: Duration,
    },
    /// A fault of the broker's own. The detail is for the log, never for the client.
    #[error("{0}")]
    Internal(String),
}

/// How long a client is told to wait when the database is not answering: about the time a
/// restarted primary or a failover takes to accept connections again (retrying sooner only
/// adds to the storm a returning database meets).
pub const DATABASE_RETRY: Duration = Duration::from_secs(5);

/// How long a client is told to wait when the database is up but every connection stayed
/// busy (or its transaction kept losing to others): a moment is enough.
pub const BUSY_RETRY: Duration = Duration::from_secs(1);

/// How long a client is told to wait when this broker is going away: another broker of the
/// fleet (or this one, restarted) can serve it at once.
pub const SHUTDOWN_RETRY: Duration = Duration::from_secs(1);

impl Error {
    pub fn invalid(text: impl Into<String>) -> Error {
        Error::Invalid(text.into())
    }

    /// The request's answer never came: the task carrying it out panicked, or the broker is
    /// going away. Nothing of it was acknowledged.
    pub fn interrupted() -> Error {
        Error::Unavailable {
            reason: "the request was interrupted; it is safe to retry",
            retry_after: BUSY_RETRY,
        }
    }

    pub fn shutting_down() -> Error {
        Error::Unavailable {
            reason: "Server is shutting down",
            retry_after: SHUTDOWN_RETRY,
        }
    }
}

impl From<StoreError> for Error {
    fn from(e: StoreError) -> Error {
        if e.is_client_error() {
            Error::Invalid(e.to_string())
        } else if e.is_busy() {
            tracing::warn!(error = %e, "database busy");
            Error::Unavailable {
                reason: "Database busy",
                retry_after: BUSY_RETRY,
            }
        } else if e.is_unavailable() {
            tracing::warn!(error = %e, "database unavailable");
            Error::Unavailable {
                reason: "Database unavailable",
                retry_after: DATABASE_RETRY,
            }
        } else {
            Error::Internal(e.to_string())
        }
    }
}

impl From<Refusal> for Error {
    fn from(r: Refusal) -> Error {
        Error::Limited(r)
    }
}
