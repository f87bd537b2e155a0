//! The OpenAPI document, `GET /api/v1/openapi.json`: every route of the table documented and
//! nothing else (the CI check that a new route cannot ship undocumented), structurally valid
//! OpenAPI 3.1, and its schemas saying what the routes really answer.

use std::collections::{BTreeMap, BTreeSet};

use regent::http::auth::Level;
use regent::http::routes;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::support::{broker, Broker};

async fn document(b: &Broker) -> Value {
    let res = b
        .http
        .get(format!("{}/api/v1/openapi.json", b.url))
        .send()
        .await
        .expect("request sent");
    assert_eq!(res.status(), StatusCode::OK);
    let ct = res.headers()[reqwest::header::CONTENT_TYPE].clone();
    assert_eq!(ct, "application/json");
    res.json().await.expect("the document is JSON")
}

/// The OpenAPI spelling of a route table template (axum's `{*rest}` is `{rest}`).
fn openapi_path(template: &str) -> String {
    template.replace("{*", "{")
}

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// Every (path, method, operation) of the document.
fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths is an object") {
        for (method, op) in item.as_object().expect("a path item is an object") {
            if METHODS.contains(&method.as_str()) {
                out.push((path.clone(), method.clone(), op));
            }
        }
    }
    out
}

/// The CI check: a route the table serves without an operation fails here, named; so does a
/// documented operation for a route the table does not serve.
#[tokio::test]
async fn openapi_documents_every_served_route_and_only_those() {
    let b = broker().await;
    let doc = document(&b).await;
    let table = routes::routes();
    let served: BTreeSet<(String, String)> = table
        .iter()
        .map(|r| (openapi_path(r.path), r.method.as_str().to_ascii_lowercase()))
        .collect();

    // Everything wrong at once, so one run names every route to fix.
    let mut problems: Vec<String> = Vec::new();
    for r in &table {
        let op = &doc["paths"][openapi_path(r.path)][r.method.as_str().to_ascii_lowercase()];
        let summary = op["summary"].as_str().unwrap_or("");
        if summary.trim().is_empty() || op.get("x-regent-undocumented").is_some() {
            problems.push(format!(
                "{} {}: served but not documented (give its table entry an operation: \
                 `.doc(Doc::op(..))` in its family's `routes()`)",
                r.method, r.path
            ));
            continue;
        }
        let level = match r.level {
            Level::Public => "public",
            Level::ReadOnly => "read-only",
            Level::ReadWrite => "read-write",
            Level::Admin => "admin",
        };
        let security = match r.level {
            Level::Public => json!([]),
            _ => json!([{ "bearer": [level] }]),
        };
        if op["x-regent-level"] != json!(level) || op["security"] != security {
            problems.push(format!(
                "{} {}: the table says {level}, the document {} {}",
                r.method, r.path, op["x-regent-level"], op["security"]
            ));
        }
    }
    for (path, method, _) in operations(&doc) {
        if !served.contains(&(path.clone(), method.clone())) {
            problems.push(format!(
                "{} {path}: documented but not served",
                method.to_uppercase()
            ));
        }
    }
    // Each route declared once: a second entry for the same operation would shadow the first.
    let mut seen = BTreeSet::new();
    for r in &table {
        if !seen.insert((r.method.to_string(), r.path)) {
            problems.push(format!("{} {}: declared twice", r.method, r.path));
        }
    }
    assert!(
        problems.is_empty(),
        "the OpenAPI document and the route table disagree: {problems:#?}"
    );
}

/// A JSON pointer reference within the document.
fn resolve<'a>(doc: &'a Value, reference: &str) -> Option<&'a Value> {
    doc.pointer(reference.strip_prefix('#')?)
}

/// Every `$ref` anywhere under `v`, with where it sits.
fn refs<'a>(v: &'a Value, at: String, out: &mut Vec<(String, &'a str)>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == "$ref" {
                    if let Some(s) = x.as_str() {
                        out.push((at.clone(), s));
                    }
                } else {
                    refs(x, format!("{at}/{k}"), out);
                }
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                refs(x, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// Follows a reference object to what it names (one level is all this document uses).
fn deref<'a>(doc: &'a Value, v: &'a Value) -> &'a Value {
    match v.get("$ref").and_then(Value::as_str) {
        Some(r) => resolve(doc, r).unwrap_or(v),
        None => v,
    }
}

#[tokio::test]
async fn openapi_document_is_valid_openapi_3_1_in_structure() {
    let b = broker().await;
    let doc = document(&b).await;
    let mut errors: Vec<String> = Vec::new();

    assert!(
        doc["openapi"]
            .as_str()
            .is_some_and(|v| v.starts_with("3.1")),
        "openapi: {}",
        doc["openapi"]
    );
    assert_eq!(doc["info"]["title"], "Regent");
    assert_eq!(doc["info"]["version"], env!("CARGO_PKG_VERSION"));
    assert!(doc["info"]["description"]
        .as_str()
        .is_some_and(|d| d.contains("Queen")));

    let mut all = Vec::new();
    refs(&doc, String::new(), &mut all);
    assert!(!all.is_empty(), "the document shares its shapes by $ref");
    for (at, r) in all {
        if !r.starts_with("#/") || resolve(&doc, r).is_none() {
            errors.push(format!(
                "{at}: $ref {r} does not resolve within the document"
            ));
        }
    }

    let schemes = doc["components"]["securitySchemes"].as_object();
    let tags: BTreeSet<&str> = doc["tags"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    let mut ids = BTreeMap::new();
    for (path, method, op) in operations(&doc) {
        let here = format!("{} {path}", method.to_uppercase());
        let in_template: BTreeSet<&str> = path
            .split('/')
            .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
            .collect();
        let params: Vec<&Value> = op["parameters"]
            .as_array()
            .map(|p| p.iter().map(|p| deref(&doc, p)).collect())
            .unwrap_or_default();
        let declared: BTreeSet<&str> = params
            .iter()
            .filter(|p| p["in"] == "path")
            .filter_map(|p| p["name"].as_str())
            .collect();
        if in_template != declared {
            errors.push(format!(
                "{here}: the template's parameters {in_template:?} are not the declared path parameters {declared:?}"
            ));
        }
        let mut keys = BTreeSet::new();
        for p in &params {
            let (name, place) = (
                p["name"].as_str().unwrap_or(""),
                p["in"].as_str().unwrap_or(""),
            );
            if !["path", "query", "header", "cookie"].contains(&place) {
                errors.push(format!("{here}: parameter {name} is in {place:?}"));
            }
            if place == "path" && p["required"] != true {
                errors.push(format!("{here}: path parameter {name} must be required"));
            }
            if p["description"]
                .as_str()
                .is_none_or(|d| d.trim().is_empty())
            {
                errors.push(format!("{here}: parameter {name} has no description"));
            }
            if !p["schema"].is_object() {
                errors.push(format!("{here}: parameter {name} has no schema"));
            }
            if !keys.insert((name, place)) {
                errors.push(format!("{here}: parameter {name} ({place}) declared twice"));
            }
        }
        match op["responses"].as_object() {
            Some(r) if !r.is_empty() => {
                for (status, response) in r {
                    let valid = status == "default"
                        || (status.len() == 3 && status.chars().all(|c| c.is_ascii_digit()));
                    if !valid {
                        errors.push(format!("{here}: response key {status}"));
                    }
                    if deref(&doc, response)["description"].as_str().is_none() {
                        errors.push(format!("{here} {status}: a response needs a description"));
                    }
                    if let Some(content) = deref(&doc, response)["content"].as_object() {
                        for (ct, media) in content {
                            if !media["schema"].is_object() {
                                errors.push(format!("{here} {status} {ct}: no schema"));
                            }
                        }
                    }
                }
                if !r.keys().any(|s| s.starts_with('2')) {
                    errors.push(format!("{here}: no success response"));
                }
            }
            _ => errors.push(format!("{here}: no responses")),
        }
        if let Some(body) = op.get("requestBody") {
            if !deref(&doc, body)["content"].is_object() {
                errors.push(format!("{here}: a request body needs content"));
            }
        }
        for requirement in op["security"].as_array().into_iter().flatten() {
            for scheme in requirement
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| k)
            {
                if !schemes.is_some_and(|s| s.contains_key(scheme)) {
                    errors.push(format!("{here}: security scheme {scheme} is not declared"));
                }
            }
        }
        for tag in op["tags"].as_array().into_iter().flatten() {
            if !tag.as_str().is_some_and(|t| tags.contains(t)) {
                errors.push(format!("{here}: tag {tag} is not declared"));
            }
        }
        match op["operationId"].as_str() {
            Some(id) => {
                if let Some(other) = ids.insert(id.to_string(), here.clone()) {
                    errors.push(format!("{here}: operationId {id} is also {other}'s"));
                }
            }
            None => errors.push(format!("{here}: no operationId")),
        }
    }
    assert!(errors.is_empty(), "{errors:#?}");
}

/// Whether `value` is what `schema` describes, as far as this document's schemas go: types,
/// formats (uuid, date-time), `const`, `enum`, `required`, items, `oneOf`/`anyOf`, and every
/// key of an object with `properties` declared among them (undeclared keys are errors: the
/// point is that the document names every key a route sends).
fn conforms(doc: &Value, schema: &Value, value: &Value, at: &str, errors: &mut Vec<String>) {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        match resolve(doc, r) {
            Some(s) => conforms(doc, s, value, at, errors),
            None => errors.push(format!("{at}: $ref {r} does not resolve")),
        }
        return;
    }
    let matches = |s: &Value| {
        let mut e = Vec::new();
        conforms(doc, s, value, at, &mut e);
        e.is_empty()
    };
    if let Some(any) = schema.get("anyOf").and_then(Value::as_array) {
        if !any.iter().any(matches) {
            errors.push(format!("{at}: {value} matches none of anyOf"));
        }
    }
    if let Some(one) = schema.get("oneOf").and_then(Value::as_array) {
        let n = one.iter().filter(|s| matches(s)).count();
        if n != 1 {
            let why: Vec<Vec<String>> = one
                .iter()
                .map(|s| {
                    let mut e = Vec::new();
                    conforms(doc, s, value, at, &mut e);
                    e
                })
                .collect();
            errors.push(format!("{at}: matches {n} of oneOf, not one: {why:?}"));
        }
    }
    if schema.get("allOf").is_some() {
        errors.push(format!(
            "{at}: allOf is not checked here; do not use it in answers"
        ));
    }
    if let Some(c) = schema.get("const") {
        if c != value {
            errors.push(format!("{at}: {value} is not {c}"));
        }
    }
    if let Some(e) = schema.get("enum").and_then(Value::as_array) {
        if !e.contains(value) {
            errors.push(format!("{at}: {value} is not one of {e:?}"));
        }
    }
    if let Some(t) = schema.get("type") {
        let types: Vec<&str> = match t {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        let ok = types.iter().any(|t| match *t {
            "null" => value.is_null(),
            "boolean" => value.is_boolean(),
            "string" => value.is_string(),
            "number" => value.is_number(),
            "integer" => {
                value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            "array" => value.is_array(),
            "object" => value.is_object(),
            _ => false,
        });
        if !ok {
            errors.push(format!("{at}: {value} is not of type {t}"));
            return;
        }
    }
    if let (Some(f), Some(s)) = (schema.get("format").and_then(Value::as_str), value.as_str()) {
        let ok = match f {
            "uuid" => uuid::Uuid::parse_str(s).is_ok(),
            "date-time" => chrono::DateTime::parse_from_rfc3339(s).is_ok(),
            _ => true,
        };
        if !ok {
            errors.push(format!("{at}: {s:?} is not a {f}"));
        }
    }
    if let Value::Object(o) = value {
        for k in schema["required"].as_array().into_iter().flatten() {
            if let Some(k) = k.as_str() {
                if !o.contains_key(k) {
                    errors.push(format!("{at}: required key {k} is missing"));
                }
            }
        }
        let props = schema.get("properties").and_then(Value::as_object);
        let extra = schema.get("additionalProperties");
        for (k, v) in o {
            let here = format!("{at}.{k}");
            match (props.and_then(|p| p.get(k)), extra) {
                (Some(s), _) => conforms(doc, s, v, &here, errors),
                (None, Some(s)) if s.is_object() => conforms(doc, s, v, &here, errors),
                (None, Some(Value::Bool(true))) => {}
                (None, _) if props.is_some() => {
                    errors.push(format!("{here}: not declared in the documented schema"))
                }
                (None, _) => {}
            }
        }
    }
    if let Value::Array(a) = value {
        if let Some(n) = schema.get("minItems").and_then(Value::as_u64) {
            if (a.len() as u64) < n {
                errors.push(format!("{at}: fewer than {n} items"));
            }
        }
        if let Some(n) = schema.get("maxItems").and_then(Value::as_u64) {
            if (a.len() as u64) > n {
                errors.push(format!("{at}: more than {n} items"));
            }
        }
        if let Some(items) = schema.get("items") {
            for (i, v) in a.iter().enumerate() {
                conforms(doc, items, v, &format!("{at}[{i}]"), errors);
            }
        }
    }
}

/// Calls routes and checks each answer against the documented response for the status it
/// answered (which must be the one expected, and documented).
struct Checker<'a> {
    b: &'a Broker,
    doc: Value,
    errors: Vec<String>,
    checked: BTreeSet<String>,
}

impl Checker<'_> {
    fn check(&mut self, method: &Method, template: &str, expect: u16, status: u16, body: &Value) {
        let here = format!("{method} {template} {status}");
        self.checked.insert(format!("{method} {template}"));
        if status != expect {
            self.errors
                .push(format!("{here}: expected {expect}; answered {body}"));
            return;
        }
        let op = &self.doc["paths"][template][method.as_str().to_ascii_lowercase()];
        let response = &op["responses"][status.to_string()];
        if response.is_null() {
            self.errors.push(format!("{here}: status not documented"));
            return;
        }
        let response = deref(&self.doc, response).clone();
        let schema = &response["content"]["application/json"]["schema"];
        if !schema.is_object() {
            self.errors
                .push(format!("{here}: no JSON schema documented"));
            return;
        }
        let mut errors = Vec::new();
        conforms(&self.doc, schema, body, "$", &mut errors);
        self.errors
            .extend(errors.into_iter().map(|e| format!("{here}: {e}")));
    }

    /// `path` is the concrete path; one starting with `?` is the template's with that query.
    async fn send(
        &mut self,
        method: Method,
        template: &str,
        path: &str,
        body: Option<Value>,
        expect: u16,
    ) -> Value {
        let path = match path.strip_prefix('?') {
            Some(_) => format!("{template}{path}"),
            None => path.to_string(),
        };
        let text = body.map(|v| v.to_string());
        let (status, v) = self.b.request(method.clone(), &path, text.as_deref()).await;
        self.check(&method, template, expect, status.as_u16(), &v);
        v
    }

    async fn get(&mut self, template: &str, path: &str, expect: u16) -> Value {
        self.send(Method::GET, template, path, None, expect).await
    }

    async fn post(&mut self, template: &str, path: &str, body: Value, expect: u16) -> Value {
        self.send(Method::POST, template, path, Some(body), expect)
            .await
    }

    /// A POST without a body, as the Python client sends `{}`.
    async fn post_empty(&mut self, template: &str, path: &str, expect: u16) -> Value {
        self.send(Method::POST, template, path, None, expect).await
    }

    async fn delete(&mut self, template: &str, path: &str, expect: u16) -> Value {
        self.send(Method::DELETE, template, path, None, expect)
            .await
    }
}

const CONFIGURE: &str = "/api/v1/configure";
const PUSH: &str = "/api/v1/push";
const POP: &str = "/api/v1/pop/queue/{queue}";
const POP_PARTITION: &str = "/api/v1/pop/queue/{queue}/partition/{partition}";
const POP_SCOPE: &str = "/api/v1/pop";
const ACK: &str = "/api/v1/ack";
const ACK_BATCH: &str = "/api/v1/ack/batch";
const EXTEND: &str = "/api/v1/lease/{lease_id}/extend";
const TRANSACTION: &str = "/api/v1/transaction";
const DLQ: &str = "/api/v1/dlq";
const REQUEUE: &str = "/api/v1/dlq/requeue";
const DLQ_DELETE: &str = "/api/v1/dlq/delete";
const QUEUES: &str = "/api/v1/resources/queues";
const QUEUE: &str = "/api/v1/resources/queues/{queue}";
const MESSAGE: &str = "/api/v1/messages/{partition_id}/{transaction_id}";
const MAINTENANCE: &str = "/api/v1/system/maintenance";

/// The documented schemas against real answers, on the routes clients lean on most (push,
/// pop, ack, configure, the queue listing, the dead letters) and a few more: each answer's
/// keys must all be declared, with the documented types, the required ones present.
#[tokio::test]
async fn openapi_schemas_match_what_the_routes_answer() {
    let b = broker().await;
    let mut c = Checker {
        b: &b,
        doc: document(&b).await,
        errors: Vec::new(),
        checked: BTreeSet::new(),
    };

    let options = json!({"retryLimit": 0, "leaseTime": "30", "deadLetterQueue": true});
    let body = json!({"queue": "oa", "namespace": "ns", "options": options});
    c.post(CONFIGURE, CONFIGURE, body, 200).await;
    c.post(CONFIGURE, CONFIGURE, json!({"options": {}}), 400)
        .await;

    let items: Vec<Value> = ["a", "b", "c", "d"]
        .iter()
        .map(|t| json!({"queue": "oa", "partition": "p1", "transactionId": t, "payload": {"n": t}}))
        .collect();
    let pushed = c.post(PUSH, PUSH, json!({ "items": items }), 201).await;
    let pid = pushed[0]["partition_id"].as_str().expect("a partition id");
    let pid = pid.to_string();
    // A duplicate and a new message with a trace id; nothing at all; a malformed body.
    let trace = "0192f3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b";
    let items = json!([
        {"queue": "oa", "partition": "p1", "transactionId": "a"},
        {"queue": "oa", "partition": "p2", "traceId": trace, "payload": null},
    ]);
    c.post(PUSH, PUSH, json!({ "items": items }), 201).await;
    c.post(PUSH, PUSH, json!({"items": []}), 201).await;
    c.post(PUSH, PUSH, json!({"items": 3}), 400).await;

    // Messages, nothing claimable, a long-poll deadline, an unknown partition, the scope
    // route, and its 400.
    let part = "/api/v1/pop/queue/oa/partition/p1";
    let popped = c
        .get(
            POP_PARTITION,
            &format!("{part}?batch=2&autopilot=true"),
            200,
        )
        .await;
    let lease = popped["leaseId"].as_str().expect("a lease").to_string();
    c.get(POP, "/api/v1/pop/queue/oa?wait=false&consumerGroup=g1", 200)
        .await;
    c.get(POP, "/api/v1/pop/queue/none?wait=false", 200).await;
    c.get(
        POP,
        "/api/v1/pop/queue/none?wait=true&timeout=50&autopilot=true",
        200,
    )
    .await;
    c.get(POP_PARTITION, "/api/v1/pop/queue/oa/partition/nope", 200)
        .await;
    c.get(POP_SCOPE, "?namespace=ns&batch=1&consumerGroup=g2", 200)
        .await;
    c.get(POP_SCOPE, POP_SCOPE, 400).await;

    let ack = json!({"transactionId": "a", "partitionId": pid, "leaseId": lease});
    c.post(ACK, ACK, ack, 200).await;
    // A dead letter, for the listings below; an item that resolves to nothing.
    let acks = json!([
        {"transactionId": "b", "partitionId": pid, "leaseId": lease, "status": "dlq", "error": "bad"},
        {"transactionId": "zz", "partitionId": pid},
    ]);
    c.post(
        ACK_BATCH,
        ACK_BATCH,
        json!({ "acknowledgments": acks }),
        200,
    )
    .await;
    c.post(ACK, ACK, json!([1]), 400).await;

    // The lease ended with the dead letter: not renewed. Then a live one, renewed.
    let extend = format!("/api/v1/lease/{lease}/extend");
    c.post_empty(EXTEND, &extend, 200).await;
    let popped = c.get(POP_PARTITION, &format!("{part}?batch=1"), 200).await;
    let lease = popped["leaseId"].as_str().expect("a lease").to_string();
    let extend = format!("/api/v1/lease/{lease}/extend");
    c.post(EXTEND, &extend, json!({"seconds": 30}), 200).await;

    // A committed bundle (an ack, nested and flat pushes, a duplicate), then a refused one.
    let ops = json!([
        {"type": "ack", "transactionId": "c", "partitionId": pid, "leaseId": lease},
        {"type": "push", "items": [{"queue": "ob", "payload": {"x": 1}, "transactionId": "t1"}]},
        {"type": "push", "queue": "ob", "data": {"x": 2}, "transactionId": "t1"},
    ]);
    let bundle = json!({"operations": ops, "requiredLeases": [lease]});
    c.post(TRANSACTION, TRANSACTION, bundle, 200).await;
    let ops = json!([{"type": "ack", "transactionId": "d", "partitionId": pid,
        "status": "failed", "leaseId": lease}]);
    c.post(TRANSACTION, TRANSACTION, json!({ "operations": ops }), 200)
        .await;
    c.post(TRANSACTION, TRANSACTION, json!({"operations": []}), 400)
        .await;

    let listed = c.get(DLQ, "?queue=oa", 200).await;
    assert_eq!(listed["total"], 1, "the dead letter is listed: {listed}");
    let id = listed["messages"][0]["deadLetterId"].clone();
    c.post(REQUEUE, REQUEUE, json!({"all": true, "dryRun": true}), 200)
        .await;
    c.post(REQUEUE, REQUEUE, json!({"ids": [id, 999_999]}), 200)
        .await;
    c.post(
        DLQ_DELETE,
        DLQ_DELETE,
        json!({"queue": "oa", "dryRun": true}),
        200,
    )
    .await;
    c.post(DLQ_DELETE, DLQ_DELETE, json!({}), 400).await;

    c.get(QUEUES, QUEUES, 200).await;
    c.get(QUEUE, "/api/v1/resources/queues/oa", 200).await;
    c.get(QUEUE, "/api/v1/resources/queues/nope", 404).await;
    let depth = "/api/v1/resources/queues/{queue}/depth";
    c.get(depth, "/api/v1/resources/queues/oa/depth", 200).await;
    let overview = "/api/v1/resources/overview";
    c.get(overview, overview, 200).await;
    c.get("/api/v1/resources/partitions", "?queue=oa", 200)
        .await;
    let namespaces = "/api/v1/resources/namespaces";
    c.get(namespaces, namespaces, 200).await;

    c.get("/api/v1/messages", "?queue=oa", 200).await;
    c.get(MESSAGE, &format!("/api/v1/messages/{pid}/c"), 200)
        .await;
    c.get(MESSAGE, &format!("/api/v1/messages/{pid}/nope"), 404)
        .await;
    c.get(MESSAGE, "/api/v1/messages/not-a-uuid/x", 400).await;
    let retry = "/api/v1/messages/{partition_id}/{transaction_id}/retry";
    c.post_empty(retry, &format!("/api/v1/messages/{pid}/c/retry"), 200)
        .await;
    c.delete(MESSAGE, &format!("/api/v1/messages/{pid}/c"), 200)
        .await;

    let groups = "/api/v1/consumer-groups";
    c.get(groups, groups, 200).await;
    let group = "/api/v1/consumer-groups/{group}";
    c.get(group, "/api/v1/consumer-groups/__QUEUE_MODE__", 200)
        .await;
    let seek = "/api/v1/consumer-groups/{group}/queues/{queue}/partitions/{partition}/seek";
    let path = "/api/v1/consumer-groups/g/queues/oa/partitions/nope/seek";
    c.post_empty(seek, path, 404).await;
    c.get("/api/v1/status", "/api/v1/status", 200).await;
    c.get(
        "/api/v1/status/queues/{queue}",
        "/api/v1/status/queues/oa",
        200,
    )
    .await;
    let parked = "/api/v1/analytics/queue-parked-replicas";
    c.get(parked, "?queue=oa", 200).await;
    c.get(
        parked,
        "?from=2030-01-01T00:00:00Z&to=2020-01-01T00:00:00Z",
        400,
    )
    .await;
    c.get("/health", "/health", 200).await;
    c.get("/metrics", "/metrics", 200).await;

    // Under push maintenance: a buffered verdict, and a requeue refused.
    c.post(MAINTENANCE, MAINTENANCE, json!({"enabled": true}), 200)
        .await;
    let items = json!([{"queue": "oa", "transactionId": "m1"}]);
    c.post(PUSH, PUSH, json!({ "items": items }), 201).await;
    c.post(REQUEUE, REQUEUE, json!({"all": true}), 409).await;
    c.get(MAINTENANCE, MAINTENANCE, 200).await;

    let Checker {
        errors, checked, ..
    } = c;
    assert!(
        errors.is_empty(),
        "answers the document does not describe: {errors:#?}"
    );
    for route in [
        "POST /api/v1/push",
        "GET /api/v1/pop/queue/{queue}",
        "POST /api/v1/ack",
        "POST /api/v1/configure",
        "GET /api/v1/resources/queues",
        "GET /api/v1/dlq",
    ] {
        assert!(checked.contains(route), "{route} was not checked");
    }
}
