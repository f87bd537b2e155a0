//! Reading JSON bodies with Queen's error texts instead of axum's plain-text rejections.
//! A field holding NUL (`\u0000`) is refused here, before any SQL: PostgreSQL's text and
//! jsonb cannot hold it, and a statement it failed would take its transaction down, with
//! every request fused into that transaction. Payloads may hold it (stored as sent).

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde_json::Value;

use super::error::ApiError;

/// The raw body, with an oversized one turned into our 413.
pub struct RawBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match Bytes::from_request(req, state).await {
            Ok(b) => Ok(RawBody(b)),
            Err(r) if r.status() == StatusCode::PAYLOAD_TOO_LARGE => Err(ApiError::PayloadTooLarge),
            Err(r) => Err(ApiError::bad_request(format!(
                "Invalid body: {}",
                r.body_text()
            ))),
        }
    }
}

impl RawBody {
    /// Queen's texts: `Empty request body`, `Invalid JSON: ...`.
    pub fn json(&self) -> Result<Value, ApiError> {
        let v = self.json_fields_first()?;
        self.no_nul(&v)?;
        Ok(v)
    }

    /// [`RawBody::json`] without its NUL check, for a route whose parser names the fields
    /// that must not hold NUL in its own texts: it parses, then calls [`RawBody::no_nul`] for
    /// anything its checks did not name, before any SQL.
    pub fn json_fields_first(&self) -> Result<Value, ApiError> {
        if self.0.iter().all(u8::is_ascii_whitespace) {
            return Err(ApiError::bad_request("Empty request body"));
        }
        serde_json::from_slice(&self.0)
            .map_err(|e| ApiError::bad_request(format!("Invalid JSON: {e}")))
    }

    /// The NUL check of [`RawBody::json`], after [`RawBody::json_fields_first`].
    pub fn no_nul(&self, v: &Value) -> Result<(), ApiError> {
        refuse_nul(&self.0, v, "Invalid JSON")
    }

    /// [`RawBody::json`] for a body that carries no payload: NUL is refused in every key and
    /// string, `data` included (a trace's `data` is stored as jsonb, which cannot hold it).
    pub fn json_without_payloads(&self) -> Result<Value, ApiError> {
        let v = self.json_fields_first()?;
        if holds_nul(&self.0) && nul_anywhere(&v) {
            return Err(ApiError::bad_request(format!(
                "Invalid JSON: {NUL_IN_STRING}"
            )));
        }
        Ok(v)
    }

    /// Like [`RawBody::json`], but only validated, not parsed into a tree: for bodies whose
    /// payloads should pass through as the client's own JSON text. The same nesting limit
    /// applies as to a parsed body, so a payload no consumer's parser could read is refused.
    pub fn raw_json(&self) -> Result<&serde_json::value::RawValue, ApiError> {
        if self.0.iter().all(u8::is_ascii_whitespace) {
            return Err(ApiError::bad_request("Empty request body"));
        }
        let raw: &serde_json::value::RawValue = serde_json::from_slice(&self.0)
            .map_err(|e| ApiError::bad_request(format!("Invalid JSON: {e}")))?;
        if nesting_depth(raw.get().as_bytes()) > MAX_DEPTH {
            return Err(ApiError::bad_request(
                "Invalid JSON: recursion limit exceeded",
            ));
        }
        Ok(raw)
    }

    /// The ack routes' texts (the seed): `bad body: ...`.
    pub fn ack_json(&self) -> Result<Value, ApiError> {
        if self.0.iter().all(u8::is_ascii_whitespace) {
            return Err(ApiError::bad_request("bad body: empty request body"));
        }
        let v = serde_json::from_slice(&self.0)
            .map_err(|e| ApiError::bad_request(format!("bad body: {e}")))?;
        refuse_nul(&self.0, &v, "bad body")?;
        Ok(v)
    }

    /// For routes the Python client calls with `{}`, which it sends as no body at all.
    pub fn json_or_empty_object(&self) -> Result<Value, ApiError> {
        if self.0.iter().all(u8::is_ascii_whitespace) {
            return Ok(Value::Object(Default::default()));
        }
        self.json()
    }
}

/// The text of a refused NUL, after the route's prefix (`Invalid JSON`, `bad body`).
pub const NUL_IN_STRING: &str =
    "a field holds the NUL character (\\u0000), which PostgreSQL cannot store";

/// Refuses a parsed body with NUL in a key or a string, except inside a message's payload
/// (`payload`, `data`): payloads are stored as the bytes sent, NUL and all. Bodies read with
/// [`RawBody::raw_json`] carry payloads and check their fields one by one.
fn refuse_nul(json: &[u8], v: &Value, prefix: &str) -> Result<(), ApiError> {
    if holds_nul(json) && nul_outside_payloads(v) {
        return Err(ApiError::bad_request(format!("{prefix}: {NUL_IN_STRING}")));
    }
    Ok(())
}

fn nul_anywhere(v: &Value) -> bool {
    nul_in(v, &[])
}

fn nul_outside_payloads(v: &Value) -> bool {
    nul_in(v, &["payload", "data"])
}

/// Whether a key or a string holds NUL, not looking inside the values of the keys `exempt`.
fn nul_in(v: &Value, exempt: &[&str]) -> bool {
    match v {
        Value::String(s) => s.contains('\0'),
        Value::Array(items) => items.iter().any(|v| nul_in(v, exempt)),
        Value::Object(fields) => fields
            .iter()
            .any(|(k, v)| k.contains('\0') || (!exempt.contains(&k.as_str()) && nul_in(v, exempt))),
        _ => false,
    }
}

/// Whether valid JSON text may decode to a string holding NUL (the cheap look first): the
/// only way to write it is the escape `\u0000` (a raw control character is not valid JSON),
/// and a backslash appears only inside strings, each escape two characters from its
/// backslash on.
fn holds_nul(json: &[u8]) -> bool {
    let mut i = 0;
    while let Some(at) = json[i..].iter().position(|&b| b == b'\\') {
        let escape = i + at;
        if json[escape + 1..].starts_with(b"u0000") {
            return true;
        }
        i = escape + 2;
        if i >= json.len() {
            return false;
        }
    }
    false
}

/// serde_json's own limit when it builds a tree.
const MAX_DEPTH: usize = 128;

/// The deepest nesting of arrays and objects in valid JSON text (brackets inside strings do
/// not count).
fn nesting_depth(json: &[u8]) -> usize {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in json {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

#[cfg(test)]
mod tests {
    use super::{holds_nul, nesting_depth, nul_outside_payloads};
    use serde_json::json;

    #[test]
    fn nul_in_a_payload_is_the_clients_bytes() {
        assert!(nul_outside_payloads(&json!({"a": ["x\0"]})));
        assert!(nul_outside_payloads(&json!({"a\0": 1})));
        assert!(!nul_outside_payloads(
            &json!({"items": [{"payload": {"k": "\0"}, "data": "\0"}]})
        ));
        assert!(nul_outside_payloads(
            &json!({"items": [{"payload": 1, "queue": "\0"}]})
        ));
    }

    #[test]
    fn nul_is_found_only_as_an_escape_of_its_own() {
        assert!(holds_nul(br#"{"a":"x\u0000y"}"#));
        assert!(holds_nul(br#"{"\u0000":1}"#));
        assert!(holds_nul(br#"["\\\u0000"]"#));
        assert!(!holds_nul(br#"{"a":"\\u0000"}"#));
        assert!(!holds_nul(br#"{"a":"\u0001","b":"u0000"}"#));
        assert!(!holds_nul(br#"{"a":"\\"}"#));
        assert!(!holds_nul(b"42"));
    }

    #[test]
    fn depth_ignores_brackets_in_strings() {
        assert_eq!(nesting_depth(br#"{"a":[1,{"b":"[[[{{{"}]}"#), 3);
        assert_eq!(nesting_depth(br#"{"a":"\"[["}"#), 1);
        assert_eq!(nesting_depth(b"42"), 0);
    }
}
