//! `POST /api/v1/lease/:leaseId/extend`. The Python client 1.3.0 posts no body and reads
//! `newExpiresAt` from an object, so the answer is an object with every alias.

use axum::extract::State as AxState;

use super::path::PathParams;
use axum::{Extension, Json};
use serde_json::{json, Value};

use super::auth::Principal;
use super::body::RawBody;
use super::error::ApiError;
use super::time::millis;
use super::State;
use regent_service::lease::{Extended, MAX_EXTEND_SECONDS};

const DEFAULT_SECONDS: i64 = 60;

/// `{"seconds": n}` (or no body): how long to extend by, clamped to the service's maximum.
pub(crate) fn parse_seconds(body: &RawBody) -> Result<i64, ApiError> {
    let v = body.json_or_empty_object()?;
    if !v.is_object() {
        return Err(ApiError::bad_request("body must be a JSON object"));
    }
    match v.get("seconds") {
        None | Some(Value::Null) => Ok(DEFAULT_SECONDS),
        Some(n) => match n.as_i64() {
            Some(n) if n > 0 => Ok(n.min(MAX_EXTEND_SECONDS)),
            _ => Err(ApiError::bad_request("seconds must be a positive integer")),
        },
    }
}

pub async fn extend(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams(lease_id): PathParams<String>,
    body: RawBody,
) -> Result<Json<Value>, ApiError> {
    let seconds = parse_seconds(&body)?;
    let outcome = s
        .service
        .extend_lease(&who.tenant, &lease_id, seconds)
        .await?;
    Ok(Json(match outcome {
        Extended::Renewed { rows, expires_at } => {
            let t = millis(expires_at);
            json!({
                "leaseId": lease_id, "success": true, "renewed": rows, "newExpiresAt": t,
                "expiresAt": t, "lease_expires_at": t, "error": null,
            })
        }
        Extended::NotFound | Extended::Expired => {
            let error = if outcome == Extended::Expired {
                "Lease already expired"
            } else {
                "Lease not found"
            };
            json!({
                "leaseId": lease_id, "success": false, "renewed": 0, "newExpiresAt": null,
                "expiresAt": null, "lease_expires_at": null, "error": error,
            })
        }
    }))
}
