//! Exit codes scripts branch on, and the one error type every command returns.

use std::fmt;

/// What a command's exit code says (docs/cli.md, "Exit codes").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// It did what was asked.
    Ok = 0,
    /// The user's mistake: a bad flag, a bad file, a request the broker refused with a 4xx.
    User = 1,
    /// The broker could not be reached, or answered 5xx (after the retries).
    Unreachable = 2,
    /// The broker refused the token (401) or its role (403).
    Auth = 3,
    /// It succeeded and there was nothing to do: an empty pop, nothing lagging, nothing to
    /// requeue.
    NoOp = 4,
}

/// A command's failure: its exit code and the text to print (the broker's own text where
/// the broker refused; never a stack trace).
#[derive(Debug)]
pub struct Failure {
    pub exit: Exit,
    pub message: String,
    /// The broker's HTTP status, when the broker answered.
    pub status: Option<u16>,
}

impl Failure {
    pub fn user(message: impl Into<String>) -> Failure {
        Failure {
            exit: Exit::User,
            message: message.into(),
            status: None,
        }
    }

    pub fn unreachable(message: impl Into<String>) -> Failure {
        Failure {
            exit: Exit::Unreachable,
            message: message.into(),
            status: None,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Reading stdin or writing stdout failed: the user's pipe, not the broker. A reader that
/// has had enough (`regent tail q | head`) closes the pipe: that ends the command quietly.
impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Failure {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            return Failure {
                exit: Exit::Ok,
                message: String::new(),
                status: None,
            };
        }
        Failure::user(e.to_string())
    }
}

pub type Outcome = Result<Exit, Failure>;
