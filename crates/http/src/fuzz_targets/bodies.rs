//! The body targets: each body parser a route's entry declares (`Entry::reads_body`), fed the
//! raw bytes as `RawBody` holds them after the body limit. The seeds are the spec's examples;
//! the keys are the field names the operation's body schema names (`Doc::body_keys`).

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
            let keys = e.doc.as_ref().map(|d| d.body_keys()).unwrap_or_default();
            Some(Target {
                name: format!("{} {} (body)", e.method, e.path),
                input: Input::Body,
                keys,
                seeds: r.seeds,
                routes: vec![(e.method, e.path)],
                run: Box::new(move |bytes| outcome(parse(&RawBody(Bytes::copy_from_slice(bytes))))),
            })
        })
        .collect()
}
