//! JWT verification with Queen's variables, claims and error texts (spec appendix B).
//!
//! Tokens are verified with HS256 (`JWT_SECRET`), RS256 or EdDSA (`JWT_PUBLIC_KEY`, else the
//! keys of `JWT_JWKS_URL`, see `crate::jwks`), or by the token's own `alg` under `auto`.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::{decode, Algorithm, DecodingKey, Validation};
use serde_json::Value;

use regent_config::{Config, JwtAlgorithm as Mode};
use regent_service::Supervisor;

use super::Level;
use crate::error::ApiError;
use crate::jwks::{Family, Jwks, Miss};

/// The longest `sub` a token may carry: it is copied into every message the token pushes
/// (`producerSub`), so it is bounded like the names it travels with. A longer one is refused
/// with 401 rather than cut: two subjects cut to the same prefix would be the same producer.
pub const MAX_SUB_BYTES: usize = 1024;

/// A failed verification: 401 for the token's fault, 500 for the broker's.
#[derive(Debug, PartialEq, Eq)]
pub struct Refusal {
    pub status: StatusCode,
    pub text: String,
}

impl From<Refusal> for ApiError {
    fn from(r: Refusal) -> ApiError {
        if r.status == StatusCode::UNAUTHORIZED {
            ApiError::Unauthorized(r.text)
        } else {
            ApiError::ServerError(r.text)
        }
    }
}

fn unauthorized(text: impl Into<String>) -> Refusal {
    Refusal {
        status: StatusCode::UNAUTHORIZED,
        text: text.into(),
    }
}

fn server_error(text: &str) -> Refusal {
    Refusal {
        status: StatusCode::INTERNAL_SERVER_ERROR,
        text: text.into(),
    }
}

/// Verification settings, checked once at start-up.
pub struct Auth {
    mode: Mode,
    secret: Option<DecodingKey>,
    public_key: Option<(Family, DecodingKey)>,
    jwks: Option<Arc<Jwks>>,
    jwks_refresh: Duration,
    /// Claims only: the signature is checked before, with the algorithm the mode dictates.
    validation: Validation,
    skip: Vec<String>,
    roles_claim: String,
    roles_array_claim: String,
    admin: String,
    read_write: String,
    read_only: String,
    tenant_claim: String,
    default_tenant: Option<String>,
    issuer: Option<String>,
    audience: Option<String>,
    leeway: u64,
}

impl Auth {
    /// `None` when authentication is off; an error for a configuration that cannot start.
    pub fn from_config(c: &Config) -> anyhow::Result<Option<Arc<Auth>>> {
        if !c.jwt_enabled {
            return Ok(None);
        }
        let mode = c.jwt_algorithm;
        if c.jwt_tenant_claim.is_empty() {
            anyhow::bail!("JWT_TENANT_CLAIM must name a claim");
        }
        if c.jwt_default_tenant.as_deref() == Some("") {
            anyhow::bail!("JWT_DEFAULT_TENANT, when set, must not be empty");
        }
        let secret = given(&c.jwt_secret).map(|s| DecodingKey::from_secret(s.as_bytes()));
        let public_key = given(&c.jwt_public_key).map(public_key).transpose()?;
        let jwks_url = given(&c.jwt_jwks_url);
        keys_suffice(mode, secret.is_some(), jwks_url.is_some(), &public_key)?;
        Ok(Some(Arc::new(Auth {
            mode,
            secret,
            public_key,
            jwks: jwks(c, jwks_url)?,
            jwks_refresh: Duration::from_secs(c.jwt_jwks_refresh_interval),
            validation: validation(c),
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
            issuer: c.jwt_issuer.clone(),
            audience: c.jwt_audience.clone(),
            leeway: c.jwt_clock_skew,
        })))
    }

    /// The start-up JWKS fetch and the periodic refresh (supervised), when a JWKS URL is in
    /// use.
    pub async fn start(&self, supervisor: &Supervisor) {
        if let Some(jwks) = &self.jwks {
            jwks.start(self.jwks_refresh, supervisor).await;
        }
    }

    /// The tenant of tokens that name none, and of skipped paths.
    pub(super) fn default_tenant(&self) -> Option<&str> {
        self.default_tenant.as_deref()
    }

    /// The claim that names a token's tenant.
    pub(super) fn tenant_claim(&self) -> &str {
        &self.tenant_claim
    }

    /// Queen's skip rule: equal, or the entry ends with `/`, is longer than `/`, and prefixes.
    pub(super) fn skipped(&self, path: &str) -> bool {
        self.skip
            .iter()
            .any(|s| s == path || (s.len() > 1 && s.ends_with('/') && path.starts_with(s)))
    }

    /// The claims of a valid token, or the refusal with Queen's status and text.
    pub async fn verify(&self, token: &str) -> Result<Value, Refusal> {
        let claims = self.verify_signature(token).await?;
        self.check_claims(&claims)?;
        Ok(claims)
    }

    /// What jsonwebtoken leaves loose, it only compares a claim that parses and accepts an
    /// issuer array that merely overlaps: a configured issuer must be the `iss` string itself
    /// and a configured audience must be in `aud`, absent claims included (B.1); `exp`, `nbf`
    /// and `iat` must be numbers when present (a string `exp` would never expire), and `iat`
    /// not later than now plus the leeway.
    fn check_claims(&self, claims: &Value) -> Result<(), Refusal> {
        if let Some(iss) = &self.issuer {
            if claims.get("iss").and_then(Value::as_str) != Some(iss.as_str()) {
                return Err(unauthorized("Invalid token issuer"));
            }
        }
        if let Some(aud) = &self.audience {
            let named = match claims.get("aud") {
                Some(Value::String(a)) => a == aud,
                Some(Value::Array(all)) => all.iter().any(|a| a.as_str() == Some(aud.as_str())),
                _ => false,
            };
            if !named {
                return Err(unauthorized("Invalid token audience"));
            }
        }
        for claim in ["exp", "nbf", "iat"] {
            if claims.get(claim).is_some_and(|v| !v.is_number()) {
                let text = format!("Token verification failed: {claim} is not a number");
                return Err(unauthorized(text));
            }
        }
        if let Some(sub) = claims.get("sub").and_then(Value::as_str) {
            if sub.len() > MAX_SUB_BYTES {
                return Err(unauthorized(format!(
                    "Token subject (sub) is {} bytes; at most {MAX_SUB_BYTES} are accepted",
                    sub.len()
                )));
            }
        }
        let now = jsonwebtoken::get_current_timestamp() as f64;
        if let Some(iat) = claims.get("iat").and_then(Value::as_f64) {
            if iat > now + self.leeway as f64 {
                return Err(unauthorized(
                    "Token verification failed: issued in the future",
                ));
            }
        }
        Ok(())
    }

    /// The signature checked with the key and algorithm the mode dictates, then the claims
    /// jsonwebtoken checks.
    async fn verify_signature(&self, token: &str) -> Result<Value, Refusal> {
        let head = head(token).map_err(|e| unauthorized(format!("Token decode error: {e}")))?;
        let alg = head.alg.as_str();
        let family = match (self.mode, alg) {
            (Mode::Hs256 | Mode::Auto, "HS256") => {
                let Some(secret) = &self.secret else {
                    return Err(server_error("HS256 secret not configured"));
                };
                return check(token, secret, Algorithm::HS256, &self.validation);
            }
            (Mode::Rs256 | Mode::Auto, "RS256" | "RS384" | "RS512") => Family::Rsa,
            (Mode::EdDSA | Mode::Auto, "EdDSA") => Family::Ed25519,
            (Mode::Auto, _) => return Err(unauthorized(format!("Unsupported algorithm: {alg}"))),
            (fixed, _) => {
                return Err(unauthorized(format!(
                    "Token uses {alg}, expected {}",
                    fixed.name()
                )))
            }
        };
        let key = self.key(family, head.kid.as_deref()).await?;
        // RS384 and RS512 pass the pre-check but are verified as RS256 (B.2), so they fail.
        let with = match family {
            Family::Rsa => Algorithm::RS256,
            Family::Ed25519 => Algorithm::EdDSA,
        };
        check(token, &key, with, &self.validation)
    }

    /// The public key of a family: `JWT_PUBLIC_KEY` when it is one, else from JWKS.
    async fn key(&self, family: Family, kid: Option<&str>) -> Result<DecodingKey, Refusal> {
        if let Some((f, k)) = &self.public_key {
            if *f == family {
                return Ok(k.clone());
            }
        }
        let Some(jwks) = &self.jwks else {
            return Err(unauthorized(format!(
                "Token verification failed: no {} key configured",
                family.name()
            )));
        };
        let kid_text = kid.unwrap_or_default();
        jwks.key(kid, family).await.map_err(|miss| match miss {
            Miss::Unknown => unauthorized(format!("Unknown key ID: {kid_text}")),
            Miss::WrongFamily => unauthorized(format!(
                "Token verification failed: key {kid_text} is not an {} key",
                family.name()
            )),
            Miss::FetchFailed => server_error("Failed to fetch JWKS"),
        })
    }

    /// The highest level the token's roles grant (`role` and `roles` together).
    pub(super) fn granted(&self, claims: &Value) -> Option<Level> {
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
    pub(super) fn tenant_of(&self, claims: &Value) -> Option<Arc<str>> {
        match claims.get(&self.tenant_claim) {
            Some(Value::String(t)) if !t.is_empty() => Some(t.as_str().into()),
            Some(_) => None,
            None => self.default_tenant.as_deref().map(Into::into),
        }
    }
}

/// The header fields verification needs; `alg` is kept as sent, so texts name it exactly.
struct Head {
    alg: String,
    kid: Option<String>,
}

fn head(token: &str) -> Result<Head, String> {
    let mut parts = token.split('.');
    let (Some(h), Some(_), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err("a token has three parts".into());
    };
    let json = URL_SAFE_NO_PAD
        .decode(h)
        .map_err(|e| format!("header: {e}"))?;
    let v: Value = serde_json::from_slice(&json).map_err(|e| format!("header: {e}"))?;
    let Some(alg) = v.get("alg").and_then(Value::as_str) else {
        return Err("header: no alg".into());
    };
    Ok(Head {
        alg: alg.to_string(),
        kid: v.get("kid").and_then(Value::as_str).map(str::to_string),
    })
}

/// The signature checked with `alg` (whatever the header says), then the claims.
fn check(
    token: &str,
    key: &DecodingKey,
    alg: Algorithm,
    validation: &Validation,
) -> Result<Value, Refusal> {
    use jsonwebtoken::errors::ErrorKind as K;
    let text = |e: jsonwebtoken::errors::Error| match e.kind() {
        K::InvalidSignature => "Invalid token signature".to_string(),
        K::ExpiredSignature => "Token has expired".to_string(),
        K::InvalidIssuer => "Invalid token issuer".to_string(),
        K::InvalidAudience => "Invalid token audience".to_string(),
        K::ImmatureSignature => "Token verification failed: not yet valid".into(),
        _ => format!("Token verification failed: {e}"),
    };
    let (message, signature) = token
        .rsplit_once('.')
        .ok_or_else(|| unauthorized("Token decode error: a token has three parts"))?;
    match jsonwebtoken::crypto::verify(signature, message.as_bytes(), key, alg) {
        Ok(true) => {}
        Ok(false) => return Err(unauthorized("Invalid token signature")),
        Err(e) => return Err(unauthorized(text(e))),
    }
    decode::<Value>(token, key, validation)
        .map(|t| t.claims)
        .map_err(|e| unauthorized(text(e)))
}

/// A variable that is set and not blank.
/// Refuses a configuration whose keys cannot verify a token of its algorithm: HS256 (and
/// auto) needs a secret or a key source, RS256 and EdDSA a key source; and a configured
/// public key must be of the algorithm's family (it takes precedence over JWKS, so a key of
/// the other family could never verify a token).
fn keys_suffice(
    mode: Mode,
    secret: bool,
    jwks: bool,
    public_key: &Option<(Family, DecodingKey)>,
) -> anyhow::Result<()> {
    match mode {
        Mode::Hs256 | Mode::Auto => anyhow::ensure!(
            secret || jwks || public_key.is_some(),
            "JWT_ALGORITHM={} needs JWT_SECRET, JWT_JWKS_URL or JWT_PUBLIC_KEY",
            mode.name()
        ),
        Mode::Rs256 | Mode::EdDSA => anyhow::ensure!(
            jwks || public_key.is_some(),
            "JWT_ALGORITHM={} needs JWT_JWKS_URL or JWT_PUBLIC_KEY",
            mode.name()
        ),
    }
    if let Some((family, _)) = public_key {
        let wanted = match mode {
            Mode::Rs256 => Some(Family::Rsa),
            Mode::EdDSA => Some(Family::Ed25519),
            _ => None,
        };
        if let Some(w) = wanted.filter(|w| w != family) {
            anyhow::bail!(
                "JWT_PUBLIC_KEY is an {} key, JWT_ALGORITHM={} needs an {} key",
                family.name(),
                mode.name(),
                w.name()
            );
        }
    }
    Ok(())
}

/// The JWKS client, when a URL is configured; HS256 never looks a key up, so it fetches
/// nothing (as Queen).
fn jwks(c: &Config, url: Option<&str>) -> anyhow::Result<Option<Arc<Jwks>>> {
    let Some(url) = url.filter(|_| c.jwt_algorithm != Mode::Hs256) else {
        return Ok(None);
    };
    let roots = given(&c.jwt_jwks_ca_file)
        .map(|path| {
            std::fs::read(path).map_err(|e| anyhow::anyhow!("JWT_JWKS_CA_FILE {path}: {e}"))
        })
        .transpose()?;
    Ok(Some(Arc::new(Jwks::new(
        url,
        Duration::from_millis(c.jwt_jwks_timeout_ms.max(1)),
        roots.as_deref(),
    )?)))
}

/// The claims checked on every token: `exp` and `nbf` when present (appendix B.2), within
/// the clock skew; the audience and issuer when configured. The signature is checked
/// separately, by the key the token's header picks.
fn validation(c: &Config) -> Validation {
    let mut validation = Validation::new(Algorithm::HS256);
    validation.insecure_disable_signature_validation();
    validation.leeway = c.jwt_clock_skew;
    validation.required_spec_claims = HashSet::new();
    validation.validate_exp = true;
    validation.validate_nbf = true;
    validation.validate_aud = c.jwt_audience.is_some();
    if let Some(aud) = &c.jwt_audience {
        validation.set_audience(&[aud]);
    }
    if let Some(iss) = &c.jwt_issuer {
        validation.set_issuer(&[iss]);
    }
    validation
}

fn given(v: &Option<String>) -> Option<&str> {
    v.as_deref().filter(|s| !s.trim().is_empty())
}

/// `JWT_PUBLIC_KEY`: an RSA or Ed25519 public key in PEM. A value given on one line with
/// `\n` escapes (as some secret stores hand it over) is accepted too.
fn public_key(pem: &str) -> anyhow::Result<(Family, DecodingKey)> {
    let pem = if pem.contains('\n') {
        pem.to_string()
    } else {
        pem.replace("\\n", "\n")
    };
    // jsonwebtoken would read the public half out of a private key; a private key does not
    // belong in the broker's environment.
    anyhow::ensure!(
        !pem.contains("PRIVATE KEY"),
        "JWT_PUBLIC_KEY holds a private key; give the public key"
    );
    if let Ok(k) = DecodingKey::from_rsa_pem(pem.as_bytes()) {
        return Ok((Family::Rsa, k));
    }
    if let Ok(k) = DecodingKey::from_ed_pem(pem.as_bytes()) {
        return Ok((Family::Ed25519, k));
    }
    anyhow::bail!("JWT_PUBLIC_KEY is not an RSA or Ed25519 public key in PEM")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(extra: &[(&str, &str)]) -> Config {
        let mut vars = std::collections::BTreeMap::from([
            ("JWT_ENABLED".to_string(), "true".to_string()),
            ("JWT_SECRET".to_string(), "s3cret".to_string()),
        ]);
        vars.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        envy::from_iter(vars).unwrap()
    }

    const RSA_PUB: &str = include_str!("../../../../tests/fixtures/jwt/rsa_a.pub.pem");
    const RSA_KEY: &str = include_str!("../../../../tests/fixtures/jwt/rsa_a.key.pem");
    const ED_PUB: &str = include_str!("../../../../tests/fixtures/jwt/ed25519.pub.pem");

    /// Authentication on with exactly these variables (no secret unless given). A value the
    /// config refuses as it loads (`JWT_ALGORITHM=none`) refuses to start as well.
    fn only(vars: &[(&str, &str)]) -> anyhow::Result<Option<Arc<Auth>>> {
        let mut all = vec![("JWT_ENABLED".to_string(), "true".to_string())];
        all.extend(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        Auth::from_config(&envy::from_iter(all)?)
    }

    #[test]
    fn start_up_validation_follows_b1() {
        assert!(Auth::from_config(&Config::defaults()).unwrap().is_none());
        assert!(Auth::from_config(&config(&[])).unwrap().is_some());
        let url = ("JWT_JWKS_URL", "https://idp.example/jwks");
        let starts: &[&[(&str, &str)]] = &[
            &[("JWT_SECRET", "s")],
            &[("JWT_ALGORITHM", "auto"), ("JWT_SECRET", "s")],
            // HS256 and auto take any of the three (HS256 tokens then get a 500).
            &[("JWT_ALGORITHM", "HS256"), url],
            &[("JWT_ALGORITHM", "HS256"), ("JWT_PUBLIC_KEY", RSA_PUB)],
            &[("JWT_ALGORITHM", "auto"), url],
            &[("JWT_ALGORITHM", "auto"), ("JWT_PUBLIC_KEY", ED_PUB)],
            &[("JWT_ALGORITHM", "RS256"), url],
            &[("JWT_ALGORITHM", "RS256"), ("JWT_PUBLIC_KEY", RSA_PUB)],
            &[("JWT_ALGORITHM", "EdDSA"), url],
            &[("JWT_ALGORITHM", "EdDSA"), ("JWT_PUBLIC_KEY", ED_PUB)],
        ];
        for vars in starts {
            assert!(only(vars).unwrap().is_some(), "{vars:?}");
        }
        let refused: &[&[(&str, &str)]] = &[
            &[],
            &[("JWT_SECRET", "")],
            &[("JWT_ALGORITHM", "auto")],
            &[("JWT_ALGORITHM", "RS256"), ("JWT_SECRET", "s")],
            &[("JWT_ALGORITHM", "EdDSA"), ("JWT_SECRET", "s")],
            &[("JWT_ALGORITHM", "none"), ("JWT_SECRET", "s")],
            &[("JWT_ALGORITHM", "rs256"), url],
            &[("JWT_SECRET", "s"), ("JWT_TENANT_CLAIM", "")],
            &[("JWT_SECRET", "s"), ("JWT_DEFAULT_TENANT", "")],
            // A key that can never verify, a private key, something else.
            &[("JWT_ALGORITHM", "RS256"), ("JWT_PUBLIC_KEY", ED_PUB)],
            &[("JWT_ALGORITHM", "EdDSA"), ("JWT_PUBLIC_KEY", RSA_PUB)],
            &[("JWT_ALGORITHM", "RS256"), ("JWT_PUBLIC_KEY", RSA_KEY)],
            &[("JWT_ALGORITHM", "RS256"), ("JWT_PUBLIC_KEY", "not a key")],
            // Keys are fetched over HTTPS only, from a CA file that exists.
            &[
                ("JWT_ALGORITHM", "RS256"),
                ("JWT_JWKS_URL", "http://idp.example/jwks"),
            ],
            &[
                ("JWT_ALGORITHM", "RS256"),
                url,
                ("JWT_JWKS_CA_FILE", "/nonexistent/ca.pem"),
            ],
        ];
        for vars in refused {
            assert!(only(vars).is_err(), "{vars:?}");
        }
        let escaped = RSA_PUB.trim().replace('\n', "\\n");
        assert!(only(&[("JWT_ALGORITHM", "RS256"), ("JWT_PUBLIC_KEY", &escaped)]).is_ok());
    }

    #[tokio::test]
    async fn algorithms_are_dispatched_as_queen_does() {
        let refusal = |status: StatusCode, text: &str| Refusal {
            status,
            text: text.into(),
        };
        let token = |alg: &str| {
            let h = URL_SAFE_NO_PAD.encode(format!(r#"{{"alg":"{alg}","typ":"JWT"}}"#));
            format!("{h}.e30.c2ln")
        };
        let rs = only(&[("JWT_ALGORITHM", "RS256"), ("JWT_PUBLIC_KEY", RSA_PUB)])
            .unwrap()
            .unwrap();
        assert_eq!(
            rs.verify(&token("HS256")).await,
            Err(refusal(
                StatusCode::UNAUTHORIZED,
                "Token uses HS256, expected RS256"
            ))
        );
        assert_eq!(
            rs.verify(&token("RS512")).await,
            Err(refusal(StatusCode::UNAUTHORIZED, "Invalid token signature"))
        );
        let ed = only(&[("JWT_ALGORITHM", "EdDSA"), ("JWT_PUBLIC_KEY", ED_PUB)])
            .unwrap()
            .unwrap();
        assert_eq!(
            ed.verify(&token("RS256")).await,
            Err(refusal(
                StatusCode::UNAUTHORIZED,
                "Token uses RS256, expected EdDSA"
            ))
        );
        let auto = only(&[("JWT_ALGORITHM", "auto"), ("JWT_PUBLIC_KEY", RSA_PUB)])
            .unwrap()
            .unwrap();
        for (alg, want) in [
            (
                "ES512",
                refusal(StatusCode::UNAUTHORIZED, "Unsupported algorithm: ES512"),
            ),
            (
                "none",
                refusal(StatusCode::UNAUTHORIZED, "Unsupported algorithm: none"),
            ),
            (
                "HS256",
                refusal(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "HS256 secret not configured",
                ),
            ),
            (
                "EdDSA",
                refusal(
                    StatusCode::UNAUTHORIZED,
                    "Token verification failed: no Ed25519 key configured",
                ),
            ),
        ] {
            assert_eq!(auto.verify(&token(alg)).await, Err(want), "{alg}");
        }
        for bad in ["", "a.b", "a.b.c.d", "!!.e30.c2ln", "e30.e30.c2ln"] {
            let r = auto.verify(bad).await.unwrap_err();
            assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{bad}");
            assert!(
                r.text.starts_with("Token decode error: "),
                "{bad}: {}",
                r.text
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
