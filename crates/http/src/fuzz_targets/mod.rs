//! The request parsers as fuzz targets (`crates/fuzz` drives them): every body the broker
//! reads, and every route's path segments and query string. Whatever the input, a parser
//! answers or refuses with a 4xx: a panic, or a 5xx for what a client sent, is a defect.
//!
//! Each target stops where its real handler would call the service, so no database is
//! needed: a run is millions of inputs in a few minutes.

mod bodies;
mod routes;

pub use routes::uri;

/// The numbers at their extremes, as a request's text would carry them: zero, minus one,
/// either side of the 32-bit, 53-bit and 64-bit edges, past any float, and `NaN` (in a JSON
/// body it goes as a string: JSON has no NaN). The fuzzer draws from them, and the HTTP
/// tests send each one in every number field of every route's example (`tests/api/extremes.rs`).
pub const NUMERIC_EXTREMES: &[&str] = &[
    "0",
    "-1",
    "2147483647",
    "2147483648",
    "-2147483649",
    "9007199254740991",
    "9007199254740993",
    "9223372036854775807",
    "-9223372036854775808",
    "1e30",
    "-1e30",
    "1e400",
    "NaN",
];

use axum::http::{Method, StatusCode};

use super::error::ApiError;

/// What a target's input is, so a generator can build likely ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// A request body; `keys` are the field names its parser reads, at any depth.
    Body,
    /// A route's path segments (the template's parameters, in order, as sent on the wire:
    /// percent-encoded) joined by `/`, then `?` and the raw query string; `keys` are the query
    /// parameters it reads. Bytes that make no valid URI never reach a route (hyper refuses
    /// them first), so they pass.
    Route { params: usize },
}

/// What a parser made of one input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Read: the real handler would call the service now.
    Accepted,
    /// Refused with this 4xx.
    Refused(StatusCode),
    /// Not an HTTP request at all (a route input that makes no valid URI): hyper answers it
    /// before any route does.
    NotARequest,
}

/// A parser fed one input.
type Parser = Box<dyn Fn(&[u8]) -> Outcome + Send + Sync>;

/// One parser under fuzzing.
pub struct Target {
    /// The route and what of it is read: `POST /api/v1/push (body)`.
    pub name: String,
    pub input: Input,
    /// The names the parser looks for: body fields or query parameters.
    pub keys: Vec<&'static str>,
    /// Valid inputs (the spec's examples), for mutation.
    pub seeds: Vec<String>,
    /// The routes of the table this target covers.
    pub routes: Vec<(Method, &'static str)>,
    run: Parser,
}

impl Target {
    /// A target of one's own (the fuzzer's tests use one that fails on purpose).
    pub fn custom(
        name: &str,
        input: Input,
        seeds: &[&str],
        run: impl Fn(&[u8]) -> Outcome + Send + Sync + 'static,
    ) -> Target {
        Target {
            name: name.to_string(),
            input,
            keys: Vec::new(),
            seeds: seeds.iter().map(|s| s.to_string()).collect(),
            routes: Vec::new(),
            run: Box::new(run),
        }
    }

    /// Feeds one input to the parser. Panics when it panics, or when it answers a 5xx.
    pub fn run(&self, input: &[u8]) -> Outcome {
        (self.run)(input)
    }
}

/// Every target: the bodies first, then the routes.
pub fn targets() -> Vec<Target> {
    let mut all = bodies::targets();
    all.extend(routes::targets());
    all
}

/// The outcome of a parse; a 5xx panics: the parsers see only what the client sent.
pub fn outcome<T>(r: Result<T, ApiError>) -> Outcome {
    match r {
        Ok(_) => Outcome::Accepted,
        Err(e) => {
            let status = e.status();
            assert!(
                status.is_client_error(),
                "answered {status} to client input: {e}"
            );
            Outcome::Refused(status)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// Every entry of the table says what of the request it reads, or that it reads nothing,
    /// so no parser goes unfuzzed; and one that says it reads nothing has no path parameter
    /// to read.
    #[test]
    fn every_route_of_the_table_is_covered() {
        let mut problems = Vec::new();
        for e in crate::routes::table() {
            let r = &e.reads;
            let declared = r.request.is_some() || r.body.is_some();
            let name = format!("{} {}", e.method, e.path);
            if !declared && !r.nothing {
                problems.push(format!("{name}: says nothing of what it reads (reads_request, reads_body or reads_nothing)"));
            }
            if r.nothing && (declared || e.path.contains('{')) {
                problems.push(format!(
                    "{name}: reads_nothing, yet it has something to read"
                ));
            }
        }
        assert!(problems.is_empty(), "{problems:#?}");
    }

    #[test]
    #[should_panic(expected = "answered 500 Internal Server Error to client input")]
    fn a_5xx_is_a_failure() {
        outcome::<()>(Err(ApiError::Internal("a fault".into())));
    }

    #[test]
    fn a_4xx_is_a_refusal() {
        let o = outcome::<()>(Err(ApiError::bad_request("no")));
        assert_eq!(o, Outcome::Refused(StatusCode::BAD_REQUEST));
    }

    #[test]
    fn seeds_are_accepted_and_names_unique() {
        let all = targets();
        let names: BTreeSet<&str> = all.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names.len(), all.len());
        for t in &all {
            assert!(!t.seeds.is_empty(), "{} has no seed", t.name);
            for s in &t.seeds {
                assert_eq!(t.run(s.as_bytes()), Outcome::Accepted, "{}: {s}", t.name);
            }
        }
    }
}
