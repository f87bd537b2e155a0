//! The route targets: a route's path segments and query string go through axum's own
//! matching and percent-decoding and the route's real extractors (`PathParams`, `Params`),
//! then the reading its handler does before the service call. One router holds them all,
//! so a segment that names another route (`/consumer-groups/lagging`) is routed there, as it
//! would be.

use std::sync::{Arc, LazyLock};

use axum::body::Body;
use axum::handler::Handler;
use axum::http::{Method, Request, Uri};
use axum::routing::{on, MethodFilter};
use axum::Router;
use chrono::Utc;
use futures::executor::block_on;
use tower::ServiceExt;

use regent_config::Config;
use regent_service::pop::Target as PopTarget;

use super::{Input, Outcome, Target};
use crate::error::ApiError;
use crate::params::Params;
use crate::path::PathParams;
use crate::{console, dlq, messages, pop, resources, traces};

/// The pop defaults and clamps, as a broker with an empty environment has them.
static CONFIG: LazyLock<Config> = LazyLock::new(Config::defaults);

/// Routes of the table whose handler reads neither a path segment nor the query string (the
/// body targets read their bodies; `/` reads only `Accept-Encoding` and `If-None-Match`).
#[cfg(test)]
pub(super) const READS_NOTHING: &[(&str, &str)] = &[
    ("GET", "/health"),
    ("GET", "/metrics"),
    ("GET", "/metrics/prometheus"),
    ("GET", "/api/v1/metrics/queues"),
    ("GET", "/api/v1/analytics/postgres-stats"),
    ("GET", "/api/v1/status/buffers"),
    ("POST", "/api/v1/configure"),
    ("POST", "/api/v1/push"),
    ("POST", "/api/v1/ack"),
    ("POST", "/api/v1/ack/batch"),
    ("POST", "/api/v1/transaction"),
    ("POST", "/api/v1/dlq/requeue"),
    ("POST", "/api/v1/dlq/delete"),
    ("GET", "/api/v1/resources/overview"),
    ("POST", "/api/v1/stats/refresh"),
    ("GET", "/api/v1/whoami"),
    ("GET", "/api/v1/system/maintenance"),
    ("POST", "/api/v1/system/maintenance"),
    ("GET", "/api/v1/system/maintenance/pop"),
    ("POST", "/api/v1/system/maintenance/pop"),
    ("GET", "/api/v1/system/shared-state"),
    ("POST", "/api/v1/traces"),
    ("GET", "/api/v1/openapi.json"),
    ("GET", "/"),
];

type Read = Result<(), ApiError>;

fn read<T>(r: Result<T, ApiError>) -> Read {
    r.map(drop)
}

/// A route under fuzzing: where it is, what its query may hold, valid inputs.
struct Reader {
    method: Method,
    path: &'static str,
    keys: Vec<&'static str>,
    seeds: Vec<String>,
}

struct Readers {
    router: Router,
    list: Vec<Reader>,
}

impl Readers {
    fn at<H, T>(
        mut self,
        (method, path): (Method, &'static str),
        keys: &'static [&'static str],
        seeds: &[&str],
        handler: H,
    ) -> Readers
    where
        H: Handler<T, ()>,
        T: 'static,
    {
        let filter = MethodFilter::try_from(method.clone()).expect("a method the router knows");
        self.router = self.router.route(path, on(filter, handler));
        self.list.push(Reader {
            method,
            path,
            keys: keys.to_vec(),
            seeds: seeds.iter().map(|s| s.to_string()).collect(),
        });
        self
    }

    /// The readers the route table's entries declare, in the same router.
    fn declared(mut self) -> Readers {
        for e in crate::routes::table().entries {
            let Some(r) = e.reads.request else { continue };
            self.router = self.router.route(e.path, r.reader);
            self.list.push(Reader {
                method: e.method,
                path: e.path,
                keys: e.doc.as_ref().map(|d| d.query_names()).unwrap_or_default(),
                seeds: r.seeds,
            });
        }
        self
    }
}

const PAGE: &[&str] = &["limit", "offset"];
const POP: &[&str] = &[
    "batch",
    "wait",
    "timeout",
    "consumerGroup",
    "subscriptionMode",
    "subscriptionFrom",
    "autoAck",
    "autopilot",
    "partitions",
    "namespace",
    "task",
];
const POP_SEEDS: &[&str] = &[
    "orders?batch=10&wait=true&timeout=30000&consumerGroup=g&subscriptionMode=new&autoAck=true",
    "orders?subscriptionFrom=2026-01-02T03:04:05Z&autopilot=1&partitions=5",
];
const MESSAGE_SEEDS: &[&str] = &["0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d/ord-77-created"];

fn readers() -> Readers {
    use Method as M;
    const MESSAGE: &str = "/api/v1/messages/{partition_id}/{transaction_id}";
    let assets: Vec<String> = console::asset_names()
        .iter()
        .map(|a| a.trim_start_matches("assets/").to_string())
        .collect();
    let r = Readers {
        router: Router::new(),
        list: Vec::new(),
    };
    let pop_queue = |PathParams(q): PathParams<String>, p: Params| async move {
        read(pop::ask(&CONFIG, &p, PopTarget::Queue(q)))
    };
    let pop_partition = |PathParams((q, part)): PathParams<(String, String)>, p: Params| async move {
        read(pop::ask(&CONFIG, &p, PopTarget::Partition(q, part)))
    };
    let pop_scope =
        |p: Params| async move { read(pop::scope(&p).and_then(|t| pop::ask(&CONFIG, &p, t))) };
    let message = |PathParams((pid, _)): PathParams<(String, String)>| async move {
        read(messages::partition_id(&pid))
    };
    let message_to_dlq = |PathParams((pid, _)): PathParams<(String, String)>, p: Params| async move {
        let _ = p.str("consumerGroup").filter(|g| !g.is_empty());
        read(messages::partition_id(&pid))
    };
    let page = |p: Params| async move {
        let _ = resources::page(&p);
        Read::Ok(())
    };
    let queue_and_page = |PathParams(_): PathParams<String>, p: Params| async move {
        let _ = resources::page(&p);
        Read::Ok(())
    };
    r.at((M::GET, "/api/v1/pop/queue/{queue}"), POP, POP_SEEDS, pop_queue)
        .at(
            (M::GET, "/api/v1/pop/queue/{queue}/partition/{partition}"),
            POP,
            &["orders/customer-42?batch=1&wait=false&timeout=-5&consumerGroup=g"],
            pop_partition,
        )
        .at(
            (M::GET, "/api/v1/pop"),
            POP,
            &["?namespace=billing&task=invoice&batch=100&subscriptionMode=all"],
            pop_scope,
        )
        .at(
            (M::GET, "/api/v1/messages"),
            &["from", "to", "queue", "partition", "ns", "task", "status", "limit", "offset"],
            &["?queue=q&partition=Default&ns=n&task=t&status=pending&limit=50&offset=10&from=2026-01-01T00:00:00Z"],
            |p: Params| async move { read(messages::list_query(&p, Utc::now())) },
        )
        .at((M::GET, MESSAGE), &[], MESSAGE_SEEDS, message)
        .at((M::DELETE, MESSAGE), &[], MESSAGE_SEEDS, message)
        .at(
            (M::POST, "/api/v1/messages/{partition_id}/{transaction_id}/retry"),
            &[],
            MESSAGE_SEEDS,
            message,
        )
        .at(
            (M::POST, "/api/v1/messages/{partition_id}/{transaction_id}/dlq"),
            &["consumerGroup"],
            &["0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d/t-1?consumerGroup=ledger"],
            message_to_dlq,
        )
        .at(
            (M::GET, "/api/v1/dlq"),
            &["queue", "consumerGroup", "partition", "from", "to", "reason", "limit", "offset"],
            &["?queue=q&consumerGroup=g&partition=p&reason=boom&from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z&limit=10"],
            |p: Params| async move { read(dlq::list_filter(&p)) },
        )
        .at(
            (M::GET, "/api/v1/resources/queues"),
            &["search", "limit", "offset"],
            &["?search=ord&limit=10&offset=20"],
            |p: Params| async move {
                let _ = resources::listing(&p);
                Read::Ok(())
            },
        )
        .at((M::GET, "/api/v1/resources/queues/{queue}"), PAGE, &["orders?limit=5"], queue_and_page)
        .at(
            (M::DELETE, "/api/v1/resources/queues/{queue}"),
            &[],
            &["orders"],
            |PathParams(_): PathParams<String>| async { Read::Ok(()) },
        )
        .at(
            (M::GET, "/api/v1/resources/namespaces"),
            PAGE,
            &["?limit=10&offset=0"],
            page,
        )
        .at(
            (M::GET, "/api/v1/resources/tasks"),
            PAGE,
            &["?limit=10&offset=0"],
            page,
        )
        .at(
            (M::GET, "/api/v1/resources/queues/{queue}/depth"),
            &["group"],
            &["orders?group=ledger"],
            |PathParams(_): PathParams<String>, p: Params| async move {
                let _ = p.str("group").filter(|g| !g.is_empty());
                Read::Ok(())
            },
        )
        .at(
            (M::GET, "/api/v1/resources/partitions"),
            &["queue", "limit", "offset"],
            &["?queue=orders&limit=100&offset=100"],
            |p: Params| async move {
                let _ = resources::partitions_query(&p);
                Read::Ok(())
            },
        )
        .at(
            (M::DELETE, "/api/v1/queues/{queue}/clear"),
            &["partition"],
            &["orders?partition=Default"],
            |PathParams(_): PathParams<String>, p: Params| async move {
                let _ = p.str("partition").filter(|p| !p.is_empty());
                Read::Ok(())
            },
        )
        .at(
            (M::POST, "/api/v1/lease/{lease_id}/extend"),
            &[],
            &["0190a6c4-0000-7000-8000-000000000001"],
            |PathParams(_): PathParams<String>| async { Read::Ok(()) },
        )
        .at(
            (M::GET, "/api/v1/traces/names"),
            PAGE,
            &["?limit=50&offset=0"],
            |p: Params| async move {
                let _ = traces::page(&p, 50);
                Read::Ok(())
            },
        )
        .at(
            (M::GET, "/api/v1/traces/by-name/{name}"),
            PAGE,
            &["checkout?limit=100"],
            |PathParams(_): PathParams<String>, p: Params| async move {
                let _ = traces::page(&p, 100);
                Read::Ok(())
            },
        )
        .at(
            (M::GET, "/api/v1/traces/{partition_id}/{transaction_id}"),
            &[],
            MESSAGE_SEEDS,
            |PathParams((pid, _)): PathParams<(String, String)>| async move {
                let _ = uuid::Uuid::parse_str(&pid);
                Read::Ok(())
            },
        )
        // No state needed: the real handler, seeded with the embedded assets' names.
        .at(
            (M::GET, "/assets/{*file}"),
            &[],
            &assets.iter().map(String::as_str).collect::<Vec<_>>(),
            console::asset,
        )
}

pub(super) fn targets() -> Vec<Target> {
    let Readers { router, list } = readers().declared();
    let router = Arc::new(router);
    list.into_iter()
        .map(|r| {
            let router = router.clone();
            let (method, path) = (r.method.clone(), r.path);
            Target {
                name: format!("{} {} (path, query)", r.method, r.path),
                input: Input::Route {
                    params: params(r.path),
                },
                keys: r.keys,
                seeds: r.seeds,
                routes: vec![(r.method, r.path)],
                run: Box::new(move |input| call(&router, &method, path, input)),
            }
        })
        .collect()
}

fn params(template: &str) -> usize {
    template.split('/').filter(|s| s.starts_with('{')).count()
}

/// One request through the router: 2xx and 3xx are accepted, 4xx refused, 5xx a defect.
fn call(router: &Router, method: &Method, template: &str, input: &[u8]) -> Outcome {
    let Ok(uri) = Uri::try_from(uri(template, input)) else {
        return Outcome::NotARequest;
    };
    let request = Request::builder()
        .method(method.clone())
        .uri(uri)
        .body(Body::empty())
        .expect("a request of a valid URI");
    let response = block_on(router.clone().oneshot(request)).expect("the router is infallible");
    let status = response.status();
    assert!(
        !status.is_server_error(),
        "answered {status} to client input"
    );
    if status.is_client_error() {
        Outcome::Refused(status)
    } else {
        Outcome::Accepted
    }
}

/// The template with its parameters replaced by the input's segments, in order (the last
/// takes the rest, slashes and all), then the input's query string.
fn uri(template: &str, input: &[u8]) -> Vec<u8> {
    let (path, query) = match input.iter().position(|&b| b == b'?') {
        Some(i) => (&input[..i], Some(&input[i + 1..])),
        None => (input, None),
    };
    let mut segments = path.splitn(params(template).max(1), |&b| b == b'/');
    let mut out = Vec::with_capacity(template.len() + input.len() + 1);
    for part in template.split('/').skip(1) {
        out.push(b'/');
        if part.starts_with('{') {
            out.extend_from_slice(segments.next().unwrap_or_default());
        } else {
            out.extend_from_slice(part.as_bytes());
        }
    }
    if let Some(q) = query {
        out.push(b'?');
        out.extend_from_slice(q);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::uri;

    #[test]
    fn segments_fill_the_template_in_order() {
        let t = "/api/v1/messages/{partition_id}/{transaction_id}";
        assert_eq!(uri(t, b"p/t?x=1"), b"/api/v1/messages/p/t?x=1");
        assert_eq!(uri(t, b"p/t/u"), b"/api/v1/messages/p/t/u");
        assert_eq!(uri(t, b"p"), b"/api/v1/messages/p/");
        assert_eq!(uri("/api/v1/pop", b"?a=b"), b"/api/v1/pop?a=b");
        assert_eq!(uri("/", b"x?"), b"/?");
    }
}
