//! The one route table: every route, declared once by its family (`fn routes()` beside its
//! handlers) as an [`Entry`]: method, path, access level, handler, OpenAPI operation and
//! what the fuzzer feeds its reader. The router, the access policy, the OpenAPI document
//! and the fuzz targets are all built from it, so adding a route is adding one entry.
//!
//! Architecture Invariant: a route is served if and only if it is in this table, at the
//! level the table gives (`tests/api/auth.rs` pins the levels to the spec and calls every
//! route the router serves). An entry without an operation is published as undocumented
//! and `tests/api/openapi.rs` fails naming it; one that does not say what it reads fails
//! `fuzz_targets`' coverage test.

use std::sync::Arc;

use axum::handler::Handler;
use axum::http::Method;
use axum::routing::{on, MethodFilter, MethodRouter};
use axum::Router;

use crate::body::RawBody;
use crate::error::ApiError;
use crate::openapi::Doc;

use super::{
    ack, analytics, configure, console, consumer_groups, dlq, ephemeral, fleet, health, kv, lease,
    maintenance, messages, metrics, openapi, pop, push, queue_metrics, resources, stats, status,
    streams, timers, traces, transaction, whoami, AppState,
};

/// What a route requires. Each level includes the ones before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// No token, and no tenant: the route names nothing a tenant owns.
    Public,
    ReadOnly,
    ReadWrite,
    Admin,
}

/// A route as the access policy sees it: method, path template (as axum matches it), level,
/// and whether a request takes one of its tenant's request rate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub method: Method,
    pub path: &'static str,
    pub level: Level,
    /// False for a route no limit may block ([`Entry::unrated`]).
    pub rated: bool,
}

/// One route, declared once: where it is, who may call it, what serves it, its OpenAPI
/// operation and what of the request the fuzzer feeds its reader. Each route family
/// declares its entries beside its handlers (`fn routes()` in its module); [`table`] joins
/// them.
pub struct Entry {
    pub method: Method,
    pub path: &'static str,
    pub level: Level,
    /// Whether a request takes one of its tenant's request rate.
    pub rated: bool,
    /// The OpenAPI operation (`crate::openapi`).
    pub(crate) doc: Option<Doc>,
    /// What the fuzzer feeds (`crate::fuzz_targets`); empty for a route that reads nothing.
    pub(crate) reads: Reads,
    handler: MethodRouter<Arc<AppState>>,
}

/// A route of the table: `method path`, at `level`, served by `handler`.
pub(crate) fn route<H, T>(method: Method, path: &'static str, level: Level, handler: H) -> Entry
where
    H: Handler<T, Arc<AppState>>,
    T: 'static,
{
    Entry {
        handler: on(filter(&method), handler),
        method,
        path,
        level,
        rated: true,
        doc: None,
        reads: Reads::default(),
    }
}

fn filter(method: &Method) -> MethodFilter {
    MethodFilter::try_from(method.clone()).expect("a method the router knows")
}

impl Entry {
    /// No limit of the tenant's may block the route: its requests are not counted against the
    /// request rate. For what must always work (cancelling a timer: a tenant over its limits
    /// must still be able to stop what it scheduled).
    pub(crate) fn unrated(mut self) -> Entry {
        self.rated = false;
        self
    }

    /// The route's OpenAPI operation.
    pub(crate) fn doc(mut self, doc: Doc) -> Entry {
        self.doc = Some(doc);
        self
    }

    /// The route reads its path segments or query string with `reader`: the handler's own
    /// reading, up to where it would call the service. `seeds` are valid inputs (the path's
    /// segments, then `?` and the query), for the fuzzer to mutate; the query keys it tries
    /// are the ones the operation documents.
    pub(crate) fn reads_request<H, T>(mut self, seeds: &[&str], reader: H) -> Entry
    where
        H: Handler<T, ()>,
        T: 'static,
    {
        self.reads.request = Some(RequestReader {
            seeds: seeds.iter().map(|s| s.to_string()).collect(),
            reader: on(filter(&self.method), reader),
        });
        self
    }

    /// The route reads neither its path, its query string nor a body (what it answers
    /// depends on the tenant alone), so the fuzzer has nothing to feed it.
    pub(crate) fn reads_nothing(mut self) -> Entry {
        self.reads.nothing = true;
        self
    }

    /// The route reads a JSON body with `parse`; `seeds` are valid bodies. The field names
    /// the fuzzer tries are the ones the operation's body schema names.
    pub(crate) fn reads_body<T>(
        mut self,
        seeds: &[&str],
        parse: impl Fn(&RawBody) -> Result<T, ApiError> + Send + Sync + 'static,
    ) -> Entry {
        self.reads.body = Some(BodyReader {
            seeds: seeds.iter().map(|s| s.to_string()).collect(),
            parse: Box::new(move |b| parse(b).map(drop)),
        });
        self
    }

    /// The route as the access policy sees it.
    pub fn route(&self) -> Route {
        Route {
            method: self.method.clone(),
            path: self.path,
            level: self.level,
            rated: self.rated,
        }
    }
}

/// What of a request a route reads before it calls the service, for the fuzzer.
#[derive(Default)]
pub(crate) struct Reads {
    pub(crate) request: Option<RequestReader>,
    pub(crate) body: Option<BodyReader>,
    /// Said so by the entry: there is nothing to read.
    pub(crate) nothing: bool,
}

/// A route's path segments and query string, read through axum's matching and decoding.
pub(crate) struct RequestReader {
    pub(crate) seeds: Vec<String>,
    pub(crate) reader: MethodRouter<()>,
}

/// A body parser, its parse's value dropped.
pub(crate) type BodyParse = Box<dyn Fn(&RawBody) -> Result<(), ApiError> + Send + Sync>;

/// A route's body parser.
pub(crate) struct BodyReader {
    pub(crate) seeds: Vec<String>,
    pub(crate) parse: BodyParse,
}

/// The router serving every entry.
pub(crate) fn router(entries: &[Entry]) -> Router<Arc<AppState>> {
    entries.iter().fold(Router::new(), |router, e| {
        router.route(e.path, e.handler.clone())
    })
}

/// Every route Regent serves: each family's, in the order the OpenAPI document lists them.
pub fn table() -> Vec<Entry> {
    [
        health::routes(),
        metrics::routes(),
        openapi::routes(),
        maintenance::routes(),
        queue_metrics::routes(),
        whoami::routes(),
        stats::routes(),
        push::routes(),
        transaction::routes(),
        pop::routes(),
        ack::routes(),
        lease::routes(),
        configure::routes(),
        resources::routes(),
        messages::routes(),
        dlq::routes(),
        status::routes(),
        analytics::routes(),
        fleet::routes(),
        consumer_groups::routes(),
        traces::routes(),
        streams::routes(),
        kv::routes(),
        timers::routes(),
        ephemeral::routes(),
        console::routes(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Every route Regent serves, without the handlers.
pub fn routes() -> Vec<Route> {
    table().iter().map(Entry::route).collect()
}

/// A matched route; `None` for one the table does not name.
pub fn find<'a>(routes: &'a [Route], method: &Method, template: &str) -> Option<&'a Route> {
    routes
        .iter()
        .find(|r| r.method == method && r.path == template)
}

/// The level of a matched route; `None` for one the table does not name.
pub fn level(routes: &[Route], method: &Method, template: &str) -> Option<Level> {
    find(routes, method, template).map(|r| r.level)
}
