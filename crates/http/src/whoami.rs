//! `GET /api/v1/whoami` (a Regent extension): the tenant and role a request acts as, so the
//! web console can say who it is and hide what the role may not do, also when the token is
//! added by a proxy the page never sees. Read-only: any valid token may ask about itself.

use axum::extract::State as AxState;
use axum::http::Method;
use axum::Extension;
use schemars::JsonSchema;
use serde::Serialize;

use super::answer::{Answer, Millis};
use super::auth::Principal;
use super::maintenance;
use super::openapi::{level_name, Doc};
use super::routes::{route, Entry, Level::ReadOnly};
use super::State;

pub(crate) fn routes() -> Vec<Entry> {
    vec![route(Method::GET, "/api/v1/whoami", ReadOnly, whoami)
        .reads_nothing()
        .doc(
            Doc::op(maintenance::TAG, "The tenant and role this request acts as")
                .answers::<WhoAmI>(200, "Who the request is."),
        )]
}

/// Who a request acts as.
#[derive(Serialize, JsonSchema)]
struct WhoAmI {
    #[serde(rename = "authEnabled")]
    auth_enabled: bool,
    tenant: String,
    #[schemars(extend("enum" = ["read-only", "read-write", "admin"]))]
    role: &'static str,
    /// Whether a token was verified (false with authentication off, and on
    /// `JWT_SKIP_PATHS`).
    verified: bool,
    sub: Option<String>,
    #[serde(rename = "expiresAt")]
    expires_at: Option<Millis>,
}

async fn whoami(AxState(s): State, Extension(who): Extension<Principal>) -> Answer<WhoAmI> {
    Answer(WhoAmI {
        auth_enabled: s.auth.is_some(),
        tenant: who.tenant.to_string(),
        role: level_name(who.level),
        verified: who.verified,
        sub: who.sub,
        expires_at: who
            .expires
            .and_then(|secs| chrono::DateTime::from_timestamp(secs, 0))
            .map(Millis),
    })
}
