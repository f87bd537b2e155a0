//! `POST /api/v1/lease/:leaseId/extend`. The Python client 1.3.0 posts no body and reads
//! `newExpiresAt` from an object, so the answer is an object with every alias.

use axum::extract::State as AxState;
use axum::http::Method;
use axum::Extension;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ack;
use super::answer::{Answer, Millis};
use super::auth::Principal;
use super::body::RawBody;
use super::error::ApiError;
use super::openapi::Doc;
use super::path::PathParams;
use super::read;
use super::routes::{route, Entry, Level::ReadWrite};
use super::State;
use regent_service::lease::{Extended, MAX_EXTEND_SECONDS};

const DEFAULT_SECONDS: i64 = 60;

pub(crate) fn routes() -> Vec<Entry> {
    vec![route(Method::POST, "/api/v1/lease/{lease_id}/extend", ReadWrite, extend)
        .doc(Doc::op(ack::TAG, "Extend a lease")
            .body_of::<ExtendBody>(false, "Optional; an empty body is `{}`.")
            .fails(400, "`seconds must be a positive integer`, `request body must be a JSON object`, `Invalid JSON: …`.")
            .answers::<LeaseExtended>(200, "Renewed, or not (`success: false`, the expiry keys null)."))
        .reads_request(&["0190a6c4-0000-7000-8000-000000000001"], |_: PathParams<String>| async {})
        .reads_body(&[r#"{"seconds": 120}"#, "{}", "", r#"{"seconds": null}"#], parse_seconds)]
}

/// How long to extend a lease by.
#[derive(Deserialize, JsonSchema)]
#[schemars(rename = "LeaseExtend")]
struct ExtendBody {
    /// From now; larger values are clamped.
    #[schemars(with = "Option<i64>", range(min = 1, max = MAX_EXTEND_SECONDS))]
    #[schemars(extend("default" = DEFAULT_SECONDS))]
    seconds: Option<Value>,
}

/// `{"seconds": n}` (or no body): how long to extend by, clamped to the service's maximum.
pub(crate) fn parse_seconds(body: &RawBody) -> Result<i64, ApiError> {
    let v = body.json_or_empty_object()?;
    match read::fields::<ExtendBody>(&v)?.seconds {
        None => Ok(DEFAULT_SECONDS),
        Some(n) => match n.as_i64() {
            Some(n) if n > 0 => Ok(n.min(MAX_EXTEND_SECONDS)),
            _ => Err(ApiError::bad_request("seconds must be a positive integer")),
        },
    }
}

/// What an extension did.
#[derive(Serialize, JsonSchema)]
struct LeaseExtended {
    #[serde(rename = "leaseId")]
    lease_id: String,
    success: bool,
    /// (partition, group) rows renewed.
    renewed: u64,
    #[serde(rename = "newExpiresAt")]
    new_expires_at: Option<Millis>,
    #[serde(rename = "expiresAt")]
    expires_at: Option<Millis>,
    lease_expires_at: Option<Millis>,
    #[schemars(extend("enum" = [null, "Lease not found", "Lease already expired"]))]
    error: Option<&'static str>,
}

async fn extend(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams(lease_id): PathParams<String>,
    body: RawBody,
) -> Result<Answer<LeaseExtended>, ApiError> {
    let seconds = parse_seconds(&body)?;
    let outcome = s
        .service
        .extend_lease(&who.tenant, &lease_id, seconds)
        .await?;
    let (renewed, expires, error) = match outcome {
        Extended::Renewed { rows, expires_at } => (rows, Some(Millis(expires_at)), None),
        Extended::Expired => (0, None, Some("Lease already expired")),
        Extended::NotFound => (0, None, Some("Lease not found")),
    };
    Ok(Answer(LeaseExtended {
        lease_id,
        success: error.is_none(),
        renewed,
        new_expires_at: expires,
        expires_at: expires,
        lease_expires_at: expires,
        error,
    }))
}
