//! The one route table: every route with its method, path, access level and handler. The
//! router and the access policy are both built from it, so a route cannot exist without a
//! level.
//!
//! Architecture Invariant: a route is served if and only if it is in this table, at the
//! level the table gives (`tests/api/auth.rs` pins the levels to the spec and calls every
//! route the router serves). The OpenAPI document is generated from it too
//! (`crate::openapi`): a route added here needs an entry in that registry, or
//! `tests/api/openapi.rs` fails naming it.

use std::sync::Arc;

use axum::handler::Handler;
use axum::http::Method;
use axum::routing::{on, MethodFilter, MethodRouter};
use axum::Router;

use crate::body::RawBody;
use crate::error::ApiError;
use crate::openapi::Doc;

use super::{
    ack, analytics, configure, console, consumer_groups, dlq, fleet, health, lease, maintenance,
    messages, metrics, openapi, pop, push, queue_metrics, resources, stats, status, traces,
    transaction, whoami, AppState,
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

/// A route as the access policy sees it: method, path template (as axum matches it), level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub method: Method,
    pub path: &'static str,
    pub level: Level,
}

/// One route, declared once: where it is, who may call it, what serves it, its OpenAPI
/// operation and what of the request the fuzzer feeds its reader. Each route family
/// declares its entries beside its handlers (`fn routes()` in its module); [`table`] joins
/// them.
pub struct Entry {
    pub method: Method,
    pub path: &'static str,
    pub level: Level,
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
        doc: None,
        reads: Reads::default(),
    }
}

fn filter(method: &Method) -> MethodFilter {
    MethodFilter::try_from(method.clone()).expect("a method the router knows")
}

impl Entry {
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

    /// The route reads a JSON body with `parse`; `keys` are the field names it looks for, at
    /// any depth, `seeds` valid bodies.
    pub(crate) fn reads_body<T>(
        mut self,
        keys: &'static [&'static str],
        seeds: &[&str],
        parse: impl Fn(&RawBody) -> Result<T, ApiError> + Send + Sync + 'static,
    ) -> Entry {
        self.reads.body = Some(BodyReader {
            keys,
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
        }
    }
}

/// What of a request a route reads before it calls the service, for the fuzzer.
#[derive(Default)]
pub(crate) struct Reads {
    pub(crate) request: Option<RequestReader>,
    pub(crate) body: Option<BodyReader>,
}

/// A route's path segments and query string, read through axum's matching and decoding.
pub(crate) struct RequestReader {
    pub(crate) seeds: Vec<String>,
    pub(crate) reader: MethodRouter<()>,
}

/// A route's body parser.
pub(crate) struct BodyReader {
    pub(crate) keys: &'static [&'static str],
    pub(crate) seeds: Vec<String>,
    pub(crate) parse: Box<dyn Fn(&RawBody) -> Result<(), ApiError> + Send + Sync>,
}

/// The router serving every entry.
pub(crate) fn router(entries: &[Entry]) -> Router<Arc<AppState>> {
    entries.iter().fold(Router::new(), |router, e| {
        router.route(e.path, e.handler.clone())
    })
}

/// The table being built.
pub struct Table {
    pub entries: Vec<Entry>,
}

impl Table {
    fn at<H, T>(mut self, method: Method, path: &'static str, level: Level, handler: H) -> Table
    where
        H: Handler<T, Arc<AppState>>,
        T: 'static,
    {
        self.entries.push(route(method, path, level, handler));
        self
    }
}

/// Every route Regent serves: each family's, in the order the OpenAPI document lists them.
pub fn table() -> Table {
    let families = [
        consumer_groups::routes(),
        status::routes(),
        analytics::routes(),
        fleet::routes(),
        legacy().entries,
    ];
    Table {
        entries: families.into_iter().flatten().collect(),
    }
}

/// Routes not yet declared by their families (transitional).
fn legacy() -> Table {
    use Level::*;
    use Method as M;
    const MESSAGE: &str = "/api/v1/messages/{partition_id}/{transaction_id}";
    const MAINTENANCE: &str = "/api/v1/system/maintenance";
    const POP_MAINTENANCE: &str = "/api/v1/system/maintenance/pop";
    let t = Table {
        entries: Vec::new(),
    };
    t.at(M::GET, "/health", Public, health::health)
        .at(M::GET, "/metrics", Public, metrics::json_snapshot)
        .at(M::GET, "/metrics/prometheus", Public, metrics::prometheus)
        // The same exposition's per-queue families, which name the tenant's queues.
        .at(
            M::GET,
            "/api/v1/metrics/queues",
            Admin,
            queue_metrics::queues,
        )
        .at(
            M::POST,
            "/api/v1/configure",
            ReadWrite,
            configure::configure,
        )
        .at(M::POST, "/api/v1/push", ReadWrite, push::push)
        .at(
            M::GET,
            "/api/v1/pop/queue/{queue}",
            ReadWrite,
            pop::pop_queue,
        )
        .at(
            M::GET,
            "/api/v1/pop/queue/{queue}/partition/{partition}",
            ReadWrite,
            pop::pop_partition,
        )
        .at(M::GET, "/api/v1/pop", ReadWrite, pop::pop_scope)
        .at(M::POST, "/api/v1/ack", ReadWrite, ack::ack_single)
        .at(M::POST, "/api/v1/ack/batch", ReadWrite, ack::ack_batch)
        .at(
            M::POST,
            "/api/v1/transaction",
            ReadWrite,
            transaction::transaction,
        )
        .at(
            M::POST,
            "/api/v1/lease/{lease_id}/extend",
            ReadWrite,
            lease::extend,
        )
        .at(M::GET, "/api/v1/messages", ReadOnly, messages::list)
        .at(M::GET, MESSAGE, ReadOnly, messages::get)
        .at(M::DELETE, MESSAGE, ReadWrite, messages::delete)
        .at(
            M::POST,
            "/api/v1/messages/{partition_id}/{transaction_id}/retry",
            ReadWrite,
            messages::retry,
        )
        .at(
            M::POST,
            "/api/v1/messages/{partition_id}/{transaction_id}/dlq",
            ReadWrite,
            messages::to_dlq,
        )
        .at(M::GET, "/api/v1/dlq", ReadOnly, dlq::list)
        .at(M::POST, "/api/v1/dlq/requeue", ReadWrite, dlq::requeue)
        .at(M::POST, "/api/v1/dlq/delete", ReadWrite, dlq::delete)
        .at(
            M::GET,
            "/api/v1/resources/overview",
            ReadOnly,
            resources::overview,
        )
        .at(
            M::GET,
            "/api/v1/resources/queues",
            ReadOnly,
            resources::list_queues,
        )
        .at(
            M::GET,
            "/api/v1/resources/queues/{queue}",
            ReadOnly,
            resources::get_queue,
        )
        .at(
            M::DELETE,
            "/api/v1/resources/queues/{queue}",
            Admin,
            resources::delete_queue,
        )
        .at(
            M::GET,
            "/api/v1/resources/namespaces",
            ReadOnly,
            resources::namespaces,
        )
        .at(
            M::GET,
            "/api/v1/resources/tasks",
            ReadOnly,
            resources::tasks,
        )
        .at(
            M::GET,
            "/api/v1/resources/queues/{queue}/depth",
            ReadOnly,
            resources::queue_depth,
        )
        .at(
            M::GET,
            "/api/v1/resources/partitions",
            ReadOnly,
            resources::partitions,
        )
        .at(
            M::DELETE,
            "/api/v1/queues/{queue}/clear",
            Admin,
            resources::clear_queue,
        )
        .at(M::POST, "/api/v1/stats/refresh", Admin, stats::refresh)
        .at(M::GET, "/api/v1/whoami", ReadOnly, whoami::whoami)
        .at(M::GET, MAINTENANCE, Admin, maintenance::get_push)
        .at(M::POST, MAINTENANCE, Admin, maintenance::set_push)
        .at(M::GET, POP_MAINTENANCE, Admin, maintenance::get_pop)
        .at(M::POST, POP_MAINTENANCE, Admin, maintenance::set_pop)
        .at(
            M::GET,
            "/api/v1/system/shared-state",
            Admin,
            maintenance::shared_state,
        )
        .at(M::POST, "/api/v1/traces", ReadWrite, traces::record)
        .at(M::GET, "/api/v1/traces/names", ReadOnly, traces::names_list)
        .at(
            M::GET,
            "/api/v1/traces/by-name/{name}",
            ReadOnly,
            traces::by_name,
        )
        .at(
            M::GET,
            "/api/v1/traces/{partition_id}/{transaction_id}",
            ReadOnly,
            traces::of_message,
        )
        .at(M::GET, "/api/v1/openapi.json", Public, openapi::serve)
        // The web console: public, since the page and its scripts name no tenant's data; the
        // API calls it makes carry the user's token (`console.rs`).
        .at(M::GET, "/", Public, console::index)
        .at(M::GET, "/assets/{*file}", Public, console::asset)
}

/// Every route Regent serves, without the handlers.
pub fn routes() -> Vec<Route> {
    table().entries.iter().map(Entry::route).collect()
}

/// The level of a matched route; `None` for one the table does not name.
pub fn level(routes: &[Route], method: &Method, template: &str) -> Option<Level> {
    routes
        .iter()
        .find(|r| r.method == method && r.path == template)
        .map(|r| r.level)
}
