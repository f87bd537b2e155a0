//! Who may call what: the one route table that gives every route its access level, JWT
//! verification with Queen's variables, claims and error texts (spec appendix B), and the
//! tenant every request acts for.
//!
//! This step verifies HS256 tokens (also under `JWT_ALGORITHM=auto`). RS256, EdDSA, static
//! public keys and JWKS are refused at start-up, with a message saying so, rather than
//! half-supported.

use std::collections::HashSet;
use std::sync::Arc;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use jsonwebtoken::{decode, decode_header, Algorithm, DecodingKey, Validation};
use serde_json::{json, Value};

use super::AppState;
use crate::broker::naming::DEFAULT_TENANT;
use crate::config::Config;

/// Who a request comes from. [`authorize`] puts one on every matched route, so a handler
/// that extracts it cannot run without it (axum answers 500 for a missing extension: closed,
/// never some other tenant).
#[derive(Clone, Debug)]
pub struct Principal {
    /// The token's `sub`, stamped on pushed messages as `producerSub`.
    pub sub: Option<String>,
    /// Every lookup and write of the request is scoped to this tenant.
    pub tenant: Arc<str>,
}

impl Principal {
    /// A request that carries no verified token: authentication is off, or the route is
    /// public or skipped. It acts for the configured default tenant, else `default`.
    fn anonymous(default_tenant: Option<&str>) -> Principal {
        Principal {
            sub: None,
            tenant: default_tenant.unwrap_or(DEFAULT_TENANT).into(),
        }
    }
}

/// What a route requires. Each level includes the ones before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Public,
    ReadOnly,
    ReadWrite,
    Admin,
}

/// Every route of `super::router`, by method and path template (as axum matched it).
///
/// Architecture Invariant: with authentication on, a route missing from this table is refused
/// to every token (403), so a new route stays closed until it is classified here.
pub const ROUTES: &[(Method, &str, Level)] = &[
    (Method::GET, "/health", Level::Public),
    (Method::POST, "/api/v1/configure", Level::ReadWrite),
    (Method::POST, "/api/v1/push", Level::ReadWrite),
    (Method::GET, "/api/v1/pop/queue/{queue}", Level::ReadWrite),
    (
        Method::GET,
        "/api/v1/pop/queue/{queue}/partition/{partition}",
        Level::ReadWrite,
    ),
    (Method::GET, "/api/v1/pop", Level::ReadWrite),
    (Method::POST, "/api/v1/ack", Level::ReadWrite),
    (Method::POST, "/api/v1/ack/batch", Level::ReadWrite),
    (Method::POST, "/api/v1/transaction", Level::ReadWrite),
    (
        Method::POST,
        "/api/v1/lease/{lease_id}/extend",
        Level::ReadWrite,
    ),
    (Method::GET, "/api/v1/dlq", Level::ReadOnly),
    (Method::GET, "/api/v1/resources/queues", Level::ReadOnly),
    (
        Method::DELETE,
        "/api/v1/resources/queues/{queue}",
        Level::Admin,
    ),
];

/// The level of a matched route; `None` for one the table does not name.
pub fn level(method: &Method, template: &str) -> Option<Level> {
    ROUTES
        .iter()
        .find(|(m, t, _)| m == method && *t == template)
        .map(|(_, _, l)| *l)
}

/// Verification settings, checked once at start-up.
#[derive(Clone)]
pub struct Auth {
    key: DecodingKey,
    validation: Validation,
    skip: Vec<String>,
    roles_claim: String,
    roles_array_claim: String,
    admin: String,
    read_write: String,
    read_only: String,
    tenant_claim: String,
    default_tenant: Option<String>,
}

impl Auth {
    /// `None` when authentication is off; an error for a configuration that cannot start.
    pub fn from_config(c: &Config) -> anyhow::Result<Option<Arc<Auth>>> {
        if c.jwt_enabled != "true" {
            return Ok(None);
        }
        match c.jwt_algorithm.as_str() {
            "HS256" | "auto" => {}
            "RS256" | "EdDSA" => anyhow::bail!(
                "JWT_ALGORITHM={} is not supported yet: this release verifies HS256 tokens only",
                c.jwt_algorithm
            ),
            other => anyhow::bail!("Invalid algorithm configuration: JWT_ALGORITHM={other}"),
        }
        if c.jwt_public_key.is_some() || c.jwt_jwks_url.is_some() {
            anyhow::bail!(
                "JWT_PUBLIC_KEY and JWT_JWKS_URL are not supported yet: this release verifies \
                 HS256 tokens only"
            );
        }
        if c.jwt_tenant_claim.is_empty() {
            anyhow::bail!("JWT_TENANT_CLAIM must name a claim");
        }
        if c.jwt_default_tenant.as_deref() == Some("") {
            anyhow::bail!("JWT_DEFAULT_TENANT, when set, must not be empty");
        }
        let Some(secret) = c.jwt_secret.as_deref().filter(|s| !s.is_empty()) else {
            anyhow::bail!("JWT_ENABLED=true needs JWT_SECRET (HS256)");
        };
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = c.jwt_clock_skew;
        // `exp` is checked only when present (appendix B.2); `nbf` when present.
        validation.required_spec_claims = HashSet::new();
        validation.validate_nbf = true;
        validation.validate_aud = c.jwt_audience.is_some();
        if let Some(aud) = &c.jwt_audience {
            validation.set_audience(&[aud]);
        }
        if let Some(iss) = &c.jwt_issuer {
            validation.set_issuer(&[iss]);
        }
        Ok(Some(Arc::new(Auth {
            key: DecodingKey::from_secret(secret.as_bytes()),
            validation,
            skip: c
                .jwt_skip_paths
                .split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(str::to_string)
                .collect(),
            roles_claim: c.jwt_roles_claim.clone(),
            roles_array_claim: c.jwt_roles_array_claim.clone(),
            admin: c.jwt_role_admin.clone(),
            read_write: c.jwt_role_read_write.clone(),
            read_only: c.jwt_role_read_only.clone(),
            tenant_claim: c.jwt_tenant_claim.clone(),
            default_tenant: c.jwt_default_tenant.clone(),
        })))
    }

    /// Queen's skip rule: equal, or the entry ends with `/`, is longer than `/`, and prefixes.
    fn skipped(&self, path: &str) -> bool {
        self.skip
            .iter()
            .any(|s| s == path || (s.len() > 1 && s.ends_with('/') && path.starts_with(s)))
    }

    /// The claims of a valid token, or the 401 text.
    fn verify(&self, token: &str) -> Result<Value, String> {
        let head = decode_header(token).map_err(|e| format!("Token decode error: {e}"))?;
        if head.alg != Algorithm::HS256 {
            return Err(format!("Token uses {:?}, expected HS256", head.alg));
        }
        decode::<Value>(token, &self.key, &self.validation)
            .map(|t| t.claims)
            .map_err(|e| {
                use jsonwebtoken::errors::ErrorKind as K;
                match e.kind() {
                    K::InvalidSignature => "Invalid token signature".to_string(),
                    K::ExpiredSignature => "Token has expired".to_string(),
                    K::InvalidIssuer => "Invalid token issuer".to_string(),
                    K::InvalidAudience => "Invalid token audience".to_string(),
                    K::ImmatureSignature => "Token verification failed: not yet valid".into(),
                    _ => format!("Token verification failed: {e}"),
                }
            })
    }

    /// The highest level the token's roles grant (`role` and `roles` together).
    fn granted(&self, claims: &Value) -> Option<Level> {
        let mut roles: Vec<&str> = Vec::new();
        if let Some(r) = claims.get(&self.roles_claim).and_then(Value::as_str) {
            roles.push(r);
        }
        if let Some(a) = claims
            .get(&self.roles_array_claim)
            .and_then(Value::as_array)
        {
            roles.extend(a.iter().filter_map(Value::as_str));
        }
        roles
            .iter()
            .filter_map(|r| match *r {
                r if r == self.admin => Some(Level::Admin),
                r if r == self.read_write => Some(Level::ReadWrite),
                r if r == self.read_only => Some(Level::ReadOnly),
                _ => None,
            })
            .max()
    }
}

impl Auth {
    /// The tenant a verified token acts for: its tenant claim (a non-empty string), else the
    /// configured default; `None` refuses the token.
    fn tenant_of(&self, claims: &Value) -> Option<Arc<str>> {
        match claims.get(&self.tenant_claim) {
            Some(Value::String(t)) if !t.is_empty() => Some(t.as_str().into()),
            Some(_) => None,
            None => self.default_tenant.as_deref().map(Into::into),
        }
    }
}

fn refuse(status: StatusCode, text: &str) -> Response {
    (status, Json(json!({ "error": text }))).into_response()
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
/// token says.
pub async fn authorize(State(s): State<Arc<AppState>>, mut req: Request, next: Next) -> Response {
    let Some(auth) = s.auth.clone() else {
        req.extensions_mut().insert(Principal::anonymous(None));
        return next.run(req).await;
    };
    let template = req
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_string());
    let need = template.as_deref().and_then(|t| level(req.method(), t));
    if need == Some(Level::Public) || auth.skipped(req.uri().path()) {
        let anonymous = Principal::anonymous(auth.default_tenant.as_deref());
        req.extensions_mut().insert(anonymous);
        return next.run(req).await;
    }
    let Some(raw) = token(&req) else {
        return refuse(StatusCode::UNAUTHORIZED, "Authentication required");
    };
    if raw.trim().is_empty() {
        return refuse(StatusCode::UNAUTHORIZED, "Empty token");
    }
    let claims = match auth.verify(raw.trim()) {
        Ok(c) => c,
        Err(text) => return refuse(StatusCode::UNAUTHORIZED, &text),
    };
    match (need, auth.granted(&claims)) {
        (Some(need), Some(has)) if has >= need => {}
        _ => return refuse(StatusCode::FORBIDDEN, "Insufficient permissions"),
    }
    let Some(tenant) = auth.tenant_of(&claims) else {
        let text = format!("Token has no tenant: claim `{}`", auth.tenant_claim);
        return refuse(StatusCode::FORBIDDEN, &text);
    };
    req.extensions_mut().insert(Principal {
        sub: claims
            .get("sub")
            .and_then(Value::as_str)
            .map(str::to_string),
        tenant,
    });
    next.run(req).await
}

/// What a development token (`regent token`) says.
#[derive(Clone, Debug, Default)]
pub struct Minted<'a> {
    pub role: &'a str,
    pub tenant: Option<&'a str>,
    pub sub: Option<&'a str>,
    pub expires_in_secs: Option<u64>,
}

/// A signed HS256 development token: `role`, the tenant under the default claim name, `sub`,
/// and `exp` when an expiry is given.
pub fn mint(secret: &str, t: &Minted) -> String {
    let mut claims = json!({ "role": t.role });
    if let Some(tenant) = t.tenant {
        claims["tenant"] = json!(tenant);
    }
    if let Some(sub) = t.sub {
        claims["sub"] = json!(sub);
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    claims["iat"] = json!(now);
    if let Some(secs) = t.expires_in_secs {
        claims["exp"] = json!(now + secs);
    }
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(Algorithm::HS256),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()),
    )
    .expect("HS256 signing cannot fail")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(extra: &[(&str, &str)]) -> Config {
        let mut vars = std::collections::BTreeMap::from([
            ("JWT_ENABLED".to_string(), "true".to_string()),
            ("JWT_SECRET".to_string(), "s3cret".to_string()),
        ]);
        vars.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        envy::from_iter(vars).unwrap()
    }

    #[test]
    fn only_what_is_supported_starts() {
        assert!(Auth::from_config(&Config::defaults()).unwrap().is_none());
        assert!(Auth::from_config(&config(&[])).unwrap().is_some());
        assert!(Auth::from_config(&config(&[("JWT_ALGORITHM", "auto")])).is_ok());
        for refused in [
            ("JWT_ALGORITHM", "RS256"),
            ("JWT_ALGORITHM", "none"),
            ("JWT_TENANT_CLAIM", ""),
            ("JWT_DEFAULT_TENANT", ""),
            ("JWT_JWKS_URL", "https://example.com/jwks"),
            ("JWT_SECRET", ""),
        ] {
            assert!(
                Auth::from_config(&config(&[refused])).is_err(),
                "{refused:?}"
            );
        }
    }

    #[test]
    fn the_tenant_is_a_non_empty_string_claim_or_the_default() {
        let a = Auth::from_config(&config(&[("JWT_TENANT_CLAIM", "org")]))
            .unwrap()
            .unwrap();
        assert_eq!(
            a.tenant_of(&json!({"org": "acme"})).as_deref(),
            Some("acme")
        );
        assert_eq!(a.tenant_of(&json!({"tenant": "acme"})), None);
        assert_eq!(a.tenant_of(&json!({"org": ""})), None);
        assert_eq!(a.tenant_of(&json!({"org": ["acme"]})), None);
        let a = Auth::from_config(&config(&[("JWT_DEFAULT_TENANT", "shared")]))
            .unwrap()
            .unwrap();
        assert_eq!(a.tenant_of(&json!({})).as_deref(), Some("shared"));
        assert_eq!(
            a.tenant_of(&json!({"tenant": 7})),
            None,
            "a wrong type is not absent"
        );
        assert_eq!(a.tenant_of(&json!({"tenant": "t"})).as_deref(), Some("t"));
    }

    #[test]
    fn skip_paths_follow_queens_rule() {
        let a = Auth::from_config(&config(&[("JWT_SKIP_PATHS", "/health,/open/,/")]))
            .unwrap()
            .unwrap();
        assert!(a.skipped("/health"));
        assert!(a.skipped("/open/x"));
        assert!(a.skipped("/"));
        assert!(!a.skipped("/healthz"));
        assert!(!a.skipped("/api/v1/push"), "`/` alone is not a prefix");
    }

    #[test]
    fn roles_grant_the_highest_level_named() {
        let a = Auth::from_config(&config(&[])).unwrap().unwrap();
        assert_eq!(
            a.granted(&json!({"role": "read-only"})),
            Some(Level::ReadOnly)
        );
        assert_eq!(
            a.granted(&json!({"role": "read-only", "roles": ["admin"]})),
            Some(Level::Admin)
        );
        assert_eq!(a.granted(&json!({"role": "Admin"})), None, "case-sensitive");
        assert_eq!(a.granted(&json!({})), None);
    }
}
