//! The document's own objects (OpenAPI 3.1): an operation, a parameter, a request body, a
//! response, a media type, a reference, a security requirement, a tag. Each is a type
//! serialised as the specification names its fields; the schemas they hold are values
//! (each derived from its own type, or written out where no type describes it).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

/// An operation object.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Operation {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<&'static str>,
    pub summary: &'static str,
    pub description: String,
    pub operation_id: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parameters: Vec<Parameter>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_body: Option<RequestBody>,
    pub responses: BTreeMap<String, OpResponse>,
    /// Empty for a public route: no token needed.
    pub security: Vec<SecurityRequirement>,
    #[serde(rename = "x-regent-level")]
    pub level: &'static str,
    /// Only on a route whose table entry has no operation.
    #[serde(
        rename = "x-regent-undocumented",
        skip_serializing_if = "Option::is_none"
    )]
    pub undocumented: Option<bool>,
}

/// Where a parameter is.
#[derive(Serialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub(crate) enum In {
    Path,
    Query,
}

/// A parameter object.
#[derive(Serialize, Clone)]
pub(crate) struct Parameter {
    pub name: &'static str,
    #[serde(rename = "in")]
    pub location: In,
    pub required: bool,
    pub description: String,
    pub schema: Value,
}

/// A request body object.
#[derive(Serialize)]
pub(crate) struct RequestBody {
    pub required: bool,
    pub description: String,
    pub content: Content,
}

/// A JSON body's content: its one media type.
#[derive(Serialize)]
pub(crate) struct Content {
    #[serde(rename = "application/json")]
    pub json: MediaType,
}

impl Content {
    pub(crate) fn json(schema: Value) -> Content {
        Content {
            json: MediaType { schema },
        }
    }
}

/// A media type object.
#[derive(Serialize)]
pub(crate) struct MediaType {
    pub schema: Value,
}

/// An operation's response: written here, or a reference to a shared one.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum OpResponse {
    Inline(ResponseObject),
    Ref(Ref),
    /// As a route gives it (another content type than JSON).
    Raw(Value),
}

/// A response object.
#[derive(Serialize)]
pub(crate) struct ResponseObject {
    pub description: String,
    pub headers: BTreeMap<&'static str, Ref>,
    pub content: Content,
}

/// A reference object, with the description it may override.
#[derive(Serialize, Clone)]
pub(crate) struct Ref {
    #[serde(rename = "$ref")]
    pub target: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl Ref {
    /// `#/components/<kind>/<name>`.
    pub(crate) fn component(kind: &str, name: &str) -> Ref {
        Ref {
            target: format!("#/components/{kind}/{name}"),
            description: None,
        }
    }
}

/// A security requirement: each scheme's name and the scopes (here, the level) it needs.
pub(crate) type SecurityRequirement = BTreeMap<&'static str, Vec<&'static str>>;

/// A tag object.
#[derive(Serialize)]
pub(crate) struct Tag {
    pub name: &'static str,
    pub description: &'static str,
}

/// The headers every answer carries (`x-request-id`), and `Retry-After` where it says so.
pub(crate) fn headers(retry_after: bool) -> BTreeMap<&'static str, Ref> {
    let mut h = BTreeMap::from([("x-request-id", Ref::component("headers", "RequestId"))]);
    if retry_after {
        h.insert("Retry-After", Ref::component("headers", "RetryAfter"));
    }
    h
}
