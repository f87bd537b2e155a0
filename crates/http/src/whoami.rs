//! `GET /api/v1/whoami` (a Regent extension): the tenant and role a request acts as, so the
//! web console can say who it is and hide what the role may not do, also when the token is
//! added by a proxy the page never sees. Read-only: any valid token may ask about itself.

use axum::extract::State as AxState;
use axum::{Extension, Json};
use serde_json::{json, Value};

use super::auth::Principal;
use super::openapi::level_name;
use super::time::millis;
use super::State;

pub async fn whoami(AxState(s): State, Extension(who): Extension<Principal>) -> Json<Value> {
    let expires = who
        .expires
        .and_then(|secs| chrono::DateTime::from_timestamp(secs, 0))
        .map(millis);
    Json(json!({
        "authEnabled": s.auth.is_some(),
        "tenant": &*who.tenant,
        "role": level_name(who.level),
        "verified": who.verified,
        "sub": who.sub,
        "expiresAt": expires,
    }))
}
