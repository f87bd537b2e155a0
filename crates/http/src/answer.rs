//! Answers as typed values: every route's answer is a `Serialize` type that also derives
//! `JsonSchema`, so the OpenAPI document describes the very types the handlers return
//! (`crate::openapi`). `#[serde(rename)]` keeps Queen's exact key casing, odd casing
//! included.
//!
//! Key order: Queen's server writes every object with its keys sorted (its JSON maps are
//! ordered maps), and so does Regent: [`Answer`] writes the value and sorts every object's
//! keys on the text (`crate::sorted`), so a type's fields are declared in the order that reads
//! best and the wire keeps Queen's order, and a client's payload inside an answer keeps its
//! numbers as sent. Push and pop write their bytes directly instead and say so.

use std::borrow::Cow;

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, SecondsFormat, Utc};
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Serialize, Serializer};

use regent_service::queues::Page;

/// A 200 answer of this value, its object keys sorted.
pub struct Answer<T>(pub T);

impl<T: Serialize> IntoResponse for Answer<T> {
    fn into_response(self) -> Response {
        render(StatusCode::OK, &self.0)
    }
}

impl<T: Serialize> Answer<T> {
    /// The same answer with another status (201 for what was created, 503 for a sick broker).
    pub fn with_status(self, status: StatusCode) -> Response {
        render(status, &self.0)
    }
}

/// The value's JSON with every object's keys sorted (see the module's note on key order).
fn render<T: Serialize>(status: StatusCode, value: &T) -> Response {
    Rendered(bytes(value)).with_status(status)
}

/// The bytes [`Answer`] writes for `value`: for an answer kept to be sent again.
pub fn bytes<T: Serialize>(value: &T) -> Vec<u8> {
    let written = serde_json::to_vec(value).expect("an answer serialises");
    crate::sorted::sort_keys(&written)
}

/// An answer rendered earlier by [`bytes`], sent as it is.
pub struct Rendered(pub Vec<u8>);

impl Rendered {
    pub fn with_status(self, status: StatusCode) -> Response {
        (status, [(header::CONTENT_TYPE, "application/json")], self.0).into_response()
    }
}

impl IntoResponse for Rendered {
    fn into_response(self) -> Response {
        self.with_status(StatusCode::OK)
    }
}

/// The page a listing answered: its `limit` (after clamping) and `offset`.
#[derive(Clone, Copy, Debug, Serialize, JsonSchema)]
pub struct Pagination {
    pub limit: i64,
    pub offset: i64,
}

impl From<Page> for Pagination {
    fn from(p: Page) -> Pagination {
        Pagination {
            limit: p.limit,
            offset: p.offset,
        }
    }
}

/// An instant as most routes write it: ISO-8601 UTC with milliseconds
/// (`2026-04-26T10:59:28.267Z`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Millis(pub DateTime<Utc>);

impl Millis {
    pub fn text(t: DateTime<Utc>) -> String {
        t.to_rfc3339_opts(SecondsFormat::Millis, true)
    }
}

impl From<DateTime<Utc>> for Millis {
    fn from(t: DateTime<Utc>) -> Millis {
        Millis(t)
    }
}

impl Serialize for Millis {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&Millis::text(self.0))
    }
}

impl JsonSchema for Millis {
    fn schema_name() -> Cow<'static, str> {
        "Millis".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string", "format": "date-time",
            "examples": ["2026-04-26T10:59:28.267Z"],
        })
    }
}

/// An instant with microseconds, as Queen's pop writes `createdAt`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Micros(pub DateTime<Utc>);

impl Micros {
    pub fn text(t: DateTime<Utc>) -> String {
        t.to_rfc3339_opts(SecondsFormat::Micros, true)
    }
}

impl Serialize for Micros {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&Micros::text(self.0))
    }
}

impl JsonSchema for Micros {
    fn schema_name() -> Cow<'static, str> {
        "Micros".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string", "format": "date-time",
            "examples": ["2026-04-26T10:59:28.267966Z"],
        })
    }
}

/// A field Queen has and Regent does not measure: always `null`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Null;

impl Serialize for Null {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_unit()
    }
}

impl JsonSchema for Null {
    fn schema_name() -> Cow<'static, str> {
        "Null".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "null", "description": "Always null: Regent does not keep this." })
    }
}

/// `true`, always: the `success` of an answer that has only the one outcome.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct True;

impl Serialize for True {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bool(true)
    }
}

impl JsonSchema for True {
    fn schema_name() -> Cow<'static, str> {
        "True".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "const": true })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Unsorted {
        zebra: u8,
        #[serde(rename = "leaseId")]
        lease_id: u8,
        lease_expires_at: u8,
        nested: Nested,
    }

    #[derive(Serialize)]
    struct Nested {
        b: u8,
        a: u8,
    }

    #[tokio::test]
    async fn an_answer_writes_its_keys_sorted_at_every_depth() {
        let r = Answer(Unsorted {
            zebra: 1,
            lease_id: 2,
            lease_expires_at: 3,
            nested: Nested { b: 4, a: 5 },
        })
        .into_response();
        let body = axum::body::to_bytes(r.into_body(), 1024).await.unwrap();
        assert_eq!(
            &body[..],
            br#"{"leaseId":2,"lease_expires_at":3,"nested":{"a":5,"b":4},"zebra":1}"#
        );
    }

    #[test]
    fn instants_keep_their_precision() {
        let t = DateTime::parse_from_rfc3339("2026-04-26T10:59:28.267966Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(
            serde_json::to_string(&Millis(t)).unwrap(),
            r#""2026-04-26T10:59:28.267Z""#
        );
        assert_eq!(
            serde_json::to_string(&Micros(t)).unwrap(),
            r#""2026-04-26T10:59:28.267966Z""#
        );
    }
}
