//! `GET /api/v1/openapi.json`: an OpenAPI 3.1 document of every route, generated from the
//! route table (`crate::routes`): each entry carries its operation ([`Doc`]), written beside
//! its handler by the route's family; its prose description is the route's section of the
//! family's file under `crate::about`.
//!
//! The table decides what is documented: `paths` is built by walking `routes::table()`, so
//! a served route always appears, with its path parameters and its access level (a
//! `security` requirement and `x-regent-level`). An entry without an operation appears with
//! an empty summary and `x-regent-undocumented: true`, and the CI check
//! (`tests/api/openapi.rs`) fails naming it.
//!
//! Architecture Invariant: an answer's schema is its type's. A JSON answer is documented with
//! `Doc::answers::<T>()`, `T` being the type the handler returns, and schemars derives the
//! schema from it (serde's renames included), so the document cannot describe another shape
//! than the one sent. So is a request body's: `Doc::body_of::<T>()`, `T` being the request
//! type its reader reads the body into (`crate::read::fields`, each field still a JSON value
//! for the readers, which keep Queen's error texts); the fuzzer's body keys are its property
//! names. The few bodies still written out (`Doc::body`) are built from the constants their
//! parsers read (queue options, limits).

mod object;
pub(crate) mod schemas;

use std::collections::BTreeMap;
use std::sync::OnceLock;

use axum::body::Bytes;
use axum::http::{header, Method};
use axum::response::{IntoResponse, Response};
use schemars::generate::SchemaSettings;
use schemars::transform::RecursiveTransform;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use self::object::{
    Content, In, OpResponse, Operation, Parameter, Ref, RequestBody, ResponseObject,
    SecurityRequirement,
};
use super::params::Paging;
use super::routes::{self, Entry as Routed, Level, Route};

/// A route's OpenAPI operation: its summary, its query parameters, its body, and its
/// answers; answers that are typed values are described by their types' own schemas.
pub struct Doc {
    pub summary: &'static str,
    tag: Tag,
    /// The query parameters.
    query: Vec<Parameter>,
    body: Option<Body>,
    responses: BTreeMap<u16, Reply>,
    /// Whether a refused quota (`maxMessages`) is among this route's 429s.
    quota: bool,
}

/// An operation's group in the document: its name and what its operations have in common.
pub(crate) type Tag = (&'static str, &'static str);

/// A JSON request body: whether it may be left out, what it is, and its schema.
struct Body {
    required: bool,
    description: String,
    /// The request type's schema.
    schema: fn(&mut SchemaGenerator) -> Schema,
}

impl Body {
    fn render(&self, g: &mut SchemaGenerator) -> RequestBody {
        RequestBody {
            required: self.required,
            description: self.description.clone(),
            content: Content::json((self.schema)(g).to_value()),
        }
    }
}

/// One documented answer.
enum Reply {
    /// A response object as given (another content type).
    Raw(Value),
    /// A shared response (an error component), in this route's words.
    Ref(Ref),
    /// A JSON answer described by the schema of the type the handler returns.
    Typed {
        description: String,
        schema: fn(&mut SchemaGenerator) -> Schema,
        /// The answer carries `Retry-After`.
        retry_after: bool,
    },
}

impl Doc {
    /// A route's operation, under `tag` (its name and what its operations have in common),
    /// with its one-line summary.
    pub(crate) fn op(tag: Tag, summary: &'static str) -> Doc {
        Doc {
            summary,
            tag,
            query: Vec::new(),
            body: None,
            responses: BTreeMap::new(),
            quota: false,
        }
    }

    /// A query parameter: its JSON Schema (type, default, bounds) and what it means.
    pub(crate) fn query(mut self, name: &'static str, schema: Value, description: &str) -> Doc {
        self.query.push(Parameter {
            name,
            location: In::Query,
            required: false,
            description: description.to_string(),
            schema,
        });
        self
    }

    /// The query parameters of `T`, one per field in the order `T` declares them: each
    /// field's schema is its parameter's, its description the parameter's own, and its wire
    /// name a key the fuzzer tries ([`Doc::query_names`]). The handler reads the query
    /// string into `T` ([`crate::params::Params::read`], Queen's rules: an empty value is
    /// absent, garbage numbers fall back to the default), so no parameter is required.
    pub(crate) fn query_of<T: JsonSchema + Deserialize<'static>>(mut self) -> Doc {
        let mut g = query_generator();
        let schema = g.root_schema_for::<T>().to_value();
        let props = schema.get("properties").and_then(Value::as_object);
        for name in crate::read::names::<T>() {
            let mut schema = props
                .and_then(|p| p.get(*name))
                .cloned()
                .unwrap_or_else(|| panic!("{} names no schema for {name}", T::schema_name()));
            let description = match schema.as_object_mut().and_then(|o| o.remove("description")) {
                Some(Value::String(d)) => d,
                _ => String::new(),
            };
            self = self.query(name, schema, &description);
        }
        self
    }

    /// `limit` and `offset`, as [`crate::params::Params::page`] reads them for `paging`.
    pub(crate) fn paged(self, paging: Paging, what: &str) -> Doc {
        self.query(
            "limit",
            schemas::int_param(paging.default, Some(1), Some(paging.max)),
            &format!("{what} per page."),
        )
        .query(
            "offset",
            schemas::int_param(0, Some(0), None),
            &format!("{what} to skip."),
        )
    }

    /// The names of the documented query parameters (what the fuzzer tries).
    pub(crate) fn query_names(&self) -> Vec<&'static str> {
        self.query.iter().map(|p| p.name).collect()
    }

    /// The JSON request body, of type `T`: the schema is `T`'s own, and so are the field
    /// names the fuzzer tries ([`Doc::body_keys`]); `required: false` when an empty body is
    /// read as `{}`.
    pub(crate) fn body_of<T: JsonSchema>(mut self, required: bool, description: &str) -> Doc {
        self.body = Some(Body {
            required,
            description: description.to_string(),
            schema: |g| g.subschema_for::<T>(),
        });
        self
    }

    /// Every field name the request body's schema names, at any depth (what the fuzzer
    /// tries, as it tries the documented query parameters).
    pub(crate) fn body_keys(&self) -> Vec<&'static str> {
        let Some(body) = &self.body else {
            return Vec::new();
        };
        let mut g = request_generator();
        let schema = (body.schema)(&mut g).to_value();
        let defs = g.take_definitions(true);
        let mut names = std::collections::BTreeSet::new();
        field_names(&schema, &defs, &mut Vec::new(), &mut names);
        names.into_iter().map(|n| intern(&n)).collect()
    }

    /// A JSON answer with this status, of type `T`: the schema is `T`'s own.
    pub(crate) fn answers<T: JsonSchema>(self, status: u16, description: &str) -> Doc {
        self.typed::<T>(status, description, false)
    }

    /// As [`Doc::answers`], for an answer that carries `Retry-After`.
    pub(crate) fn answers_with_retry<T: JsonSchema>(self, status: u16, description: &str) -> Doc {
        self.typed::<T>(status, description, true)
    }

    fn typed<T: JsonSchema>(mut self, status: u16, description: &str, retry_after: bool) -> Doc {
        self.responses.insert(
            status,
            Reply::Typed {
                description: description.to_string(),
                schema: |g| g.subschema_for::<T>(),
                retry_after,
            },
        );
        self
    }

    /// A response object as given (another content type, extra headers).
    pub(crate) fn reply_raw(mut self, status: u16, response: Value) -> Doc {
        self.responses.insert(status, Reply::Raw(response));
        self
    }

    /// An error answer in the shared envelope, with the texts this route gives.
    pub(crate) fn fails(mut self, status: u16, texts: &str) -> Doc {
        let component = error_component(status).expect("an error status with a component");
        self.responses.insert(
            status,
            Reply::Ref(Ref {
                description: Some(texts.to_string()),
                ..Ref::component("responses", component)
            }),
        );
        self
    }

    /// A push or a requeue: over `maxMessages` it is refused whole with 429.
    pub(crate) fn quota(mut self) -> Doc {
        self.quota = true;
        self
    }
}

impl Reply {
    fn render(&self, g: &mut SchemaGenerator) -> OpResponse {
        match self {
            Reply::Raw(v) => OpResponse::Raw(v.clone()),
            Reply::Ref(r) => OpResponse::Ref(r.clone()),
            Reply::Typed {
                description,
                schema,
                retry_after,
            } => OpResponse::Inline(ResponseObject {
                description: description.clone(),
                headers: object::headers(*retry_after),
                content: Content::json(schema(g).to_value()),
            }),
        }
    }
}

/// The property names under `schema`, following references into `defs` (each once).
fn field_names(
    schema: &Value,
    defs: &Map<String, Value>,
    followed: &mut Vec<String>,
    names: &mut std::collections::BTreeSet<String>,
) {
    match schema {
        Value::Object(o) => {
            for (k, v) in o {
                match k.as_str() {
                    "properties" => {
                        if let Some(props) = v.as_object() {
                            names.extend(props.keys().cloned());
                        }
                        field_names(v, defs, followed, names);
                    }
                    "$ref" => {
                        let name = v.as_str().and_then(|r| r.rsplit('/').next());
                        if let Some(name) = name.filter(|n| !followed.iter().any(|f| f == n)) {
                            followed.push(name.to_string());
                            if let Some(d) = defs.get(name) {
                                field_names(d, defs, followed, names);
                            }
                        }
                    }
                    // Values, not shapes: their keys are no field names.
                    "default" | "examples" | "const" | "enum" | "description" => {}
                    _ => field_names(v, defs, followed, names),
                }
            }
        }
        Value::Array(items) => {
            for v in items {
                field_names(v, defs, followed, names);
            }
        }
        _ => {}
    }
}

/// A field name as the fuzzer holds it, `'static`: each name is leaked once, and the names
/// are a fixed set (the request bodies' fields).
fn intern(name: &str) -> &'static str {
    static NAMES: std::sync::Mutex<std::collections::BTreeSet<&'static str>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(n) = names.get(name) {
        return n;
    }
    let n: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.insert(n);
    n
}

/// The level's name on the wire of this document.
pub fn level_name(level: Level) -> &'static str {
    match level {
        Level::Public => "public",
        Level::ReadOnly => "read-only",
        Level::ReadWrite => "read-write",
        Level::Admin => "admin",
    }
}

/// The component response for an error status.
fn error_component(status: u16) -> Option<&'static str> {
    Some(match status {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        409 => "Conflict",
        413 => "PayloadTooLarge",
        431 => "HeadersTooLarge",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "Unavailable",
        _ => return None,
    })
}

/// The names of a template's parameters, in order (`{*rest}` names `rest`).
pub fn path_params(template: &str) -> Vec<&str> {
    template
        .split('/')
        .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
        .map(|s| s.trim_start_matches('*'))
        .collect()
}

/// The template in OpenAPI's spelling: axum's `{*rest}` is `{rest}`.
fn openapi_path(template: &str) -> String {
    template.replace("{*", "{")
}

/// A stable, unique operation id: the method, then the path's words in camelCase
/// (`GET /api/v1/pop/queue/{queue}` is `getPopQueueByQueue`).
fn operation_id(method: &Method, template: &str) -> String {
    let mut id = method.as_str().to_ascii_lowercase();
    let rest = template.strip_prefix("/api/v1").unwrap_or(template);
    for segment in rest.split(['/', '.']).filter(|s| !s.is_empty()) {
        let (by, word) = match segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Some(p) => ("By", p.trim_start_matches('*')),
            None => ("", segment),
        };
        id.push_str(by);
        for part in word.split(['-', '_']).filter(|p| !p.is_empty()) {
            let mut c = part.chars();
            if let Some(first) = c.next() {
                id.extend(first.to_uppercase());
                id.push_str(c.as_str());
            }
        }
    }
    id
}

fn path_parameter(name: &'static str) -> Parameter {
    let (description, schema) = schemas::path_param(name);
    Parameter {
        name,
        location: In::Path,
        required: true,
        description: description.to_string(),
        schema,
    }
}

/// The operation object of one route of the table.
fn operation(
    route: &Route,
    entry: Option<&Doc>,
    g: &mut SchemaGenerator,
    requests: &mut SchemaGenerator,
) -> Operation {
    let level = level_name(route.level);
    let mut parameters: Vec<Parameter> = path_params(route.path)
        .into_iter()
        .map(path_parameter)
        .collect();
    let mut responses: BTreeMap<u16, OpResponse> = entry
        .map(|e| {
            e.responses
                .iter()
                .map(|(status, r)| (*status, r.render(g)))
                .collect()
        })
        .unwrap_or_default();
    let mut op = Operation {
        tags: Vec::new(),
        summary: "",
        description: String::new(),
        operation_id: operation_id(&route.method, route.path),
        parameters: Vec::new(),
        request_body: None,
        responses: BTreeMap::new(),
        security: match route.level {
            Level::Public => Vec::new(),
            _ => vec![SecurityRequirement::from([("bearer", vec![level])])],
        },
        level,
        undocumented: None,
    };
    match entry {
        Some(e) => {
            op.tags = vec![e.tag.0];
            op.summary = e.summary;
            // What the route does, Queen compatibility notes, the Python client's caller.
            op.description = crate::about::of(&route.method, route.path)
                .unwrap_or_default()
                .to_string();
            parameters.extend(e.query.iter().cloned());
            op.request_body = e.body.as_ref().map(|b| b.render(requests));
        }
        None => {
            op.description =
                "Undocumented: the route's table entry has no operation (`Entry::doc`).".into();
            op.undocumented = Some(true);
        }
    }
    // What every route of its kind can answer, unless the entry says it in its own words;
    // the texts are the shared components' (`schemas::components`).
    let has_body = entry.is_some_and(|e| e.body.is_some());
    let mut common: Vec<(u16, &str)> = Vec::new();
    if has_body || !parameters.is_empty() {
        common.push((400, "BadRequest"));
    }
    if has_body {
        common.push((413, "PayloadTooLarge"));
    }
    if route.level != Level::Public {
        common.push((401, "Unauthorized"));
        common.push((403, "Forbidden"));
        let quota = entry.is_some_and(|e| e.quota);
        common.push((
            429,
            if quota {
                "OverLimit"
            } else {
                "TooManyRequests"
            },
        ));
    }
    common.push((431, "HeadersTooLarge"));
    common.push((500, "InternalError"));
    common.push((503, "Unavailable"));
    for (status, component) in common {
        responses
            .entry(status)
            .or_insert_with(|| OpResponse::Ref(Ref::component("responses", component)));
    }
    op.responses = responses
        .into_iter()
        .map(|(status, r)| (status.to_string(), r))
        .collect();
    op.parameters = parameters;
    op
}

/// The settings of the answers' schemas: JSON Schema 2020-12 (OpenAPI 3.1's), describing
/// what is serialised, each named type under `components/schemas`.
fn generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12()
        .for_serialize()
        .with(|s| {
            s.definitions_path = "/components/schemas".into();
            s.meta_schema = None;
        })
        .into_generator()
}

/// The settings of the request bodies' schemas: as [`generator`]'s, describing what is
/// read (a field that may be left out is not required). A request type's field that may be
/// left out but is documented without `null` says `#[schemars(with = "T", default)]`: the
/// `"default": null` that makes is dropped here (absent has no value to show).
fn request_generator() -> SchemaGenerator {
    request_settings().into_generator()
}

/// The settings of the query strings' schemas: as [`request_generator`]'s, each parameter's
/// schema whole (a parameter's schema names no shared one). A parameter is absent or has a
/// value, never null: an `Option` field's schema is its value's.
fn query_generator() -> SchemaGenerator {
    request_settings()
        .with(|s| s.inline_subschemas = true)
        .with_transform(RecursiveTransform(|s: &mut Schema| {
            if let Some(Value::Array(types)) = s.get_mut("type") {
                types.retain(|t| t != "null");
                if let [only] = types.as_slice() {
                    let only = only.clone();
                    s.insert("type".into(), only);
                }
            }
        }))
        .into_generator()
}

fn request_settings() -> SchemaSettings {
    SchemaSettings::draft2020_12()
        .for_deserialize()
        .with(|s| {
            s.definitions_path = "/components/schemas".into();
            s.meta_schema = None;
        })
        .with_transform(RecursiveTransform(|s: &mut Schema| {
            if s.get("default").is_some_and(Value::is_null) {
                s.remove("default");
            }
            if let Some(Value::String(d)) = s.get_mut("description") {
                *d = unwrap_lines(d);
            }
        }))
}

/// A doc comment's text as one line per paragraph: a line break inside a paragraph is the
/// comment's wrapping, not the text's (a blank line, or a line starting a list item or a
/// table row, stays).
fn unwrap_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut lines = text.split('\n').peekable();
    while let Some(line) = lines.next() {
        out.push_str(line);
        if let Some(next) = lines.peek() {
            let breaks = line.is_empty()
                || next.is_empty()
                || next.starts_with(['-', '*', '|'])
                || next
                    .split_once(". ")
                    .is_some_and(|(n, _)| n.parse::<u32>().is_ok());
            out.push(if breaks { '\n' } else { ' ' });
        }
    }
    out
}

/// The whole document for these entries.
fn build(entries: &[Routed]) -> Value {
    let mut g = generator();
    let mut requests = request_generator();
    let mut paths: BTreeMap<String, BTreeMap<String, Operation>> = BTreeMap::new();
    let mut tags: Vec<Tag> = Vec::new();
    for e in entries {
        if let Some(tag) = e.doc.as_ref().map(|d| d.tag) {
            if !tags.contains(&tag) {
                tags.push(tag);
            }
        }
        let route = e.route();
        let doc = e.doc.as_ref();
        paths.entry(openapi_path(route.path)).or_default().insert(
            route.method.as_str().to_ascii_lowercase(),
            operation(&route, doc, &mut g, &mut requests),
        );
    }
    // The error envelopes the shared responses name.
    g.subschema_for::<crate::error::ErrorBody>();
    g.subschema_for::<crate::error::LimitBody>();
    let mut components = schemas::components();
    let named = components["schemas"]
        .as_object_mut()
        .expect("the shared schemas");
    let answers = g.take_definitions(true);
    for (name, schema) in answers.into_iter().chain(requests.take_definitions(true)) {
        // A type both read and answered is one schema; two types of one name are a mistake.
        if let Some(other) = named.insert(name.clone(), schema.clone()) {
            assert_eq!(other, schema, "two schemas named {name}");
        }
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Regent",
            "version": env!("CARGO_PKG_VERSION"),
            "summary": "A multi-tenant, partitioned message broker on PostgreSQL, speaking Queen MQ's HTTP/JSON API.",
            "description": INFO,
            "license": { "name": env!("CARGO_PKG_LICENSE"), "identifier": env!("CARGO_PKG_LICENSE") },
        },
        "tags": tags.iter()
            .map(|&(name, description)| object::Tag { name, description })
            .collect::<Vec<_>>(),
        "paths": paths,
        "components": components,
    })
}

const INFO: &str = "\
Regent serves Queen MQ's HTTP/JSON API (the Queen 0.15 server's routes, with the seed \
contract's acknowledgement), so Queen's clients work against it unchanged; the reference is \
the Python client `queen-mq==1.3.0`. Field names are Queen's exact wire names, mixed casing \
included (`transaction_id` and `queueName` in one push verdict, snake_case on the trace and \
lagging routes). Where Regent differs from Queen 0.15 the operation says so: mostly honest \
status codes (201 for a push, 404 for an unknown queue) where Queen answers 200 on the wire, \
and a few Regent extensions (`/api/v1/dlq/requeue`, `/api/v1/dlq/delete`, this document).\n\n\
Every error the broker makes itself is `{\"error\": \"<text>\"}`; a 429 adds `code` and \
`retryAfter`, a 503 carries `Retry-After`. Every answer carries `x-request-id` (the client's \
own, else a new UUID). With `JWT_ENABLED=true` every route but the public ones needs a bearer \
token whose role reaches the route's level (`x-regent-level`: public, read-only, read-write, \
admin; each includes the ones before it), and acts for the tenant of its `tenant` claim; with \
authentication off, everything is tenant `default` and no token is needed. `OPTIONS` on any \
path answers 204 with Queen's CORS headers, without a token; a known path with another method \
is a 405, an unknown path a 404 `{\"error\": \"Not found\"}`.";

/// The document, built once.
pub fn document() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| build(&routes::table()))
}

pub(crate) fn routes() -> Vec<Routed> {
    vec![
        routes::route(Method::GET, "/api/v1/openapi.json", Level::Public, serve)
            .reads_nothing()
            .doc(
                Doc::op(crate::health::TAG, "This OpenAPI document").reply_raw(
                    200,
                    json!({
                        "description": "The document.",
                        "headers": object::headers(false),
                        "content": { "application/json": { "schema": {
                            "type": "object", "required": ["openapi", "info", "paths"],
                        } } },
                    }),
                ),
            ),
    ]
}

/// `GET /api/v1/openapi.json`.
async fn serve() -> Response {
    static BODY: OnceLock<Bytes> = OnceLock::new();
    let body = BODY.get_or_init(|| {
        Bytes::from(serde_json::to_vec(document()).expect("the document serialises"))
    });
    ([(header::CONTENT_TYPE, "application/json")], body.clone()).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_ids_read_as_the_path() {
        assert_eq!(
            operation_id(&Method::GET, "/api/v1/pop/queue/{queue}"),
            "getPopQueueByQueue"
        );
        assert_eq!(
            operation_id(
                &Method::DELETE,
                "/api/v1/messages/{partition_id}/{transaction_id}"
            ),
            "deleteMessagesByPartitionIdByTransactionId"
        );
        assert_eq!(
            operation_id(&Method::GET, "/metrics/prometheus"),
            "getMetricsPrometheus"
        );
        assert_eq!(
            operation_id(&Method::GET, "/api/v1/openapi.json"),
            "getOpenapiJson"
        );
    }

    #[test]
    fn path_parameters_are_read_off_the_template() {
        assert_eq!(
            path_params("/api/v1/consumer-groups/{group}/queues/{queue}/seek"),
            ["group", "queue"]
        );
        assert_eq!(path_params("/files/{*rest}"), ["rest"]);
        assert_eq!(openapi_path("/files/{*rest}"), "/files/{rest}");
    }
}
