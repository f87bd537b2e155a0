//! Who may call what, and for which tenant: the access check every matched route passes
//! (levels come from the route table, `crate::routes`; then the tenant's request rate), JWT
//! verification with Queen's variables, claims and error texts (spec appendix B, `verify`),
//! and development tokens (`mint`).
//!
//! A verified token acts for the tenant in its tenant claim (`JWT_TENANT_CLAIM`), else
//! `JWT_DEFAULT_TENANT`, else it is refused.

mod mint;
mod verify;

use std::sync::Arc;

use axum::extract::{MatchedPath, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use regent_rules::naming::DEFAULT_TENANT;

use super::error::ApiError;
use super::routes::find;
use super::AppState;

pub use super::routes::Level;
pub use mint::{mint, Minted};
pub use verify::{Auth, Refusal, MAX_SUB_BYTES};

/// Who a request comes from. [`authorize`] puts one on every matched route but the public
/// ones (which act for no tenant), so a handler that extracts it cannot run without it (axum answers 500 for a missing extension: closed,
/// never some other tenant).
#[derive(Clone, Debug)]
pub struct Principal {
    /// The token's `sub`, stamped on pushed messages as `producerSub`.
    pub sub: Option<String>,
    /// Every lookup and write of the request is scoped to this tenant.
    pub tenant: Arc<str>,
    /// What the token's role allows; with no token checked (authentication off, or a
    /// skipped path) nothing is refused, which is `Admin`.
    pub level: Level,
    /// Whether a token was verified for this request (`GET /api/v1/whoami` says so).
    pub verified: bool,
    /// The token's `exp`, in seconds since the epoch.
    pub expires: Option<i64>,
}

impl Principal {
    /// A request that carries no verified token: authentication is off, or the path is in
    /// `JWT_SKIP_PATHS`. It acts for the configured default tenant, else `default`.
    fn anonymous(default_tenant: Option<&str>) -> Principal {
        Principal {
            sub: None,
            tenant: default_tenant.unwrap_or(DEFAULT_TENANT).into(),
            level: Level::Admin,
            verified: false,
            expires: None,
        }
    }
}

/// The token of a request: after `Bearer ` (any case), else the whole header (B.3).
fn token(req: &Request) -> Option<&str> {
    let v = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    match v.get(..7) {
        Some(p) if p.eq_ignore_ascii_case("bearer ") && v.len() > 7 => Some(&v[7..]),
        _ => Some(v),
    }
}

/// Route middleware: runs for matched routes only, so an unknown path is a 404 whatever the
/// token says. A request that may proceed takes one token of its tenant's rate (public routes
/// act for no tenant and are not counted), then a turn of its concurrency.
pub async fn authorize(State(s): State<Arc<AppState>>, mut req: Request, next: Next) -> Response {
    let matched = req
        .extensions()
        .get::<MatchedPath>()
        .and_then(|m| find(&s.routes, req.method(), m.as_str()));
    let need = matched.map(|r| r.level);
    // A route no limit may block takes nothing of the tenant's rate (`Entry::unrated`).
    let rated = matched.is_none_or(|r| r.rated);
    // A public route acts for no tenant: it carries no Principal, which also keeps it out of
    // the tenant's request rate (below).
    if need == Some(Level::Public) {
        return next.run(req).await;
    }
    // Read before the await: a request body is not `Sync`, so the future must not hold a
    // reference to the request.
    let path = req.uri().path().to_string();
    let raw = token(&req).map(str::to_string);
    let admitted = match principal(&s, &path, raw.as_deref(), need).await {
        Ok(who) if !rated => Ok(who),
        Ok(who) => s
            .service
            .admit(&who.tenant)
            .map(|()| who)
            .map_err(ApiError::from),
        Err(e) => Err(e),
    };
    let who = match admitted {
        Ok(who) => who,
        Err(e) => return e.into_response(),
    };
    let tenant = who.tenant.clone();
    req.extensions_mut().insert(who);
    // A tenant with a `concurrency` works that many requests at once; this one waits its turn
    // (rated routes only: what no limit may block takes no turn either).
    match rated {
        true => s.service.in_turn(&tenant, next.run(req)).await,
        false => next.run(req).await,
    }
}

/// Who the request acts for, or why it may not.
async fn principal(
    s: &AppState,
    path: &str,
    token: Option<&str>,
    need: Option<Level>,
) -> Result<Principal, ApiError> {
    let Some(auth) = &s.auth else {
        return Ok(Principal::anonymous(None));
    };
    if auth.skipped(path) {
        return Ok(Principal::anonymous(auth.default_tenant()));
    }
    let Some(raw) = token else {
        return Err(ApiError::Unauthorized("Authentication required".into()));
    };
    if raw.trim().is_empty() {
        return Err(ApiError::Unauthorized("Empty token".into()));
    }
    let claims = auth.verify(raw.trim()).await.map_err(ApiError::from)?;
    let level = match (need, auth.granted(&claims)) {
        (Some(need), Some(has)) if has >= need => has,
        _ => return Err(ApiError::Forbidden("Insufficient permissions".into())),
    };
    let Some(tenant) = auth.tenant_of(&claims) else {
        let text = format!("Token has no tenant: claim `{}`", auth.tenant_claim());
        return Err(ApiError::Forbidden(text));
    };
    if tenant.contains('\0') {
        let text = format!(
            "Token's tenant (claim `{}`) holds the NUL character, which PostgreSQL cannot store",
            auth.tenant_claim()
        );
        return Err(ApiError::Forbidden(text));
    }
    Ok(Principal {
        sub: claims
            .get("sub")
            .and_then(Value::as_str)
            .map(str::to_string),
        tenant,
        level,
        verified: true,
        expires: claims.get("exp").and_then(Value::as_i64),
    })
}
