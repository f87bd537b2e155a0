//! The body targets: each body parser a route's entry declares (`Entry::reads_body`), fed the
//! raw bytes as `RawBody` holds them after the body limit. The seeds are the spec's examples.

use axum::body::Bytes;

use super::{outcome, Input, Target};
use crate::body::RawBody;

/// One target per route that reads a body.
pub(super) fn targets() -> Vec<Target> {
    crate::routes::table()
        .into_iter()
        .filter_map(|e| {
            let r = e.reads.body?;
            let parse = r.parse;
            Some(Target {
                name: format!("{} {} (body)", e.method, e.path),
                input: Input::Body,
                keys: r.keys.to_vec(),
                seeds: r.seeds,
                routes: vec![(e.method, e.path)],
                run: Box::new(move |bytes| outcome(parse(&RawBody(Bytes::copy_from_slice(bytes))))),
            })
        })
        .collect()
}
