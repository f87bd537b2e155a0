//! Development tokens (`regent token`): HS256, signed with the broker's secret.

use jsonwebtoken::Algorithm;
use serde_json::json;

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
