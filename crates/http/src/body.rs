//! Reading JSON bodies with Queen's error texts instead of axum's plain-text rejections.

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
        if self.0.iter().all(u8::is_ascii_whitespace) {
            return Err(ApiError::bad_request("Empty request body"));
        }
        serde_json::from_slice(&self.0)
            .map_err(|e| ApiError::bad_request(format!("Invalid JSON: {e}")))
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
        serde_json::from_slice(&self.0).map_err(|e| ApiError::bad_request(format!("bad body: {e}")))
    }

    /// For routes the Python client calls with `{}`, which it sends as no body at all.
    pub fn json_or_empty_object(&self) -> Result<Value, ApiError> {
        if self.0.iter().all(u8::is_ascii_whitespace) {
            return Ok(Value::Object(Default::default()));
        }
        self.json()
    }
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
    use super::nesting_depth;

    #[test]
    fn depth_ignores_brackets_in_strings() {
        assert_eq!(nesting_depth(br#"{"a":[1,{"b":"[[[{{{"}]}"#), 3);
        assert_eq!(nesting_depth(br#"{"a":"\"[["}"#), 1);
        assert_eq!(nesting_depth(b"42"), 0);
    }
}
