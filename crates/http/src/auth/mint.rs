//! Development tokens (`regent token`): HS256, signed with the broker's secret.

use jsonwebtoken::Algorithm;
use serde::Serialize;

/// What a development token (`regent token`) says.
#[derive(Clone, Debug, Default)]
pub struct Minted<'a> {
    pub role: &'a str,
    pub tenant: Option<&'a str>,
    pub sub: Option<&'a str>,
    pub expires_in_secs: Option<u64>,
}

/// A development token's claims; those not given are left out.
#[derive(Serialize)]
struct Claims<'a> {
    role: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    tenant: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sub: Option<&'a str>,
    iat: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    exp: Option<u64>,
}

/// A signed HS256 development token: `role`, the tenant under the default claim name, `sub`,
/// and `exp` when an expiry is given.
pub fn mint(secret: &str, t: &Minted) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let claims = Claims {
        role: t.role,
        tenant: t.tenant,
        sub: t.sub,
        iat: now,
        exp: t.expires_in_secs.map(|secs| now + secs),
    };
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(Algorithm::HS256),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()),
    )
    .expect("HS256 signing cannot fail")
}
