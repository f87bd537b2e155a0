//! The JWKS key cache behind `JWT_JWKS_URL`: fetched over HTTPS at start-up, refreshed every
//! `JWT_JWKS_REFRESH_INTERVAL`, and refetched when a token names a `kid` the cache lacks.
//!
//! The `kid` of a token is chosen by whoever sends it, so a kid-miss refetch is throttled: one
//! fetch at a time (the others wait for its outcome) and at most one per
//! [`MIN_REFETCH_INTERVAL`]. A flood of tokens with random kids costs the key server at most
//! one request per interval; a key rotated in is found by the first token that names it,
//! unless a refetch ran less than an interval before (that token gets 401 and its retry
//! succeeds).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, Weak};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::DecodingKey;
use serde_json::Value;

use regent_service::Supervisor;

/// Refetches the keys every `interval` while the cache is in use.
async fn refresh(weak: Weak<Jwks>, interval: Duration) {
    loop {
        tokio::time::sleep(interval).await;
        let Some(jwks) = weak.upgrade() else { return };
        if let Err(e) = jwks.fetch().await {
            tracing::warn!(url = %jwks.url, error = %e, "JWKS refresh failed; keeping the cached keys");
        }
    }
}

/// The shortest time between two refetches caused by unknown kids.
pub const MIN_REFETCH_INTERVAL: Duration = Duration::from_secs(2);

/// The key families a token can be verified with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Rsa,
    Ed25519,
}

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Family::Rsa => "RSA",
            Family::Ed25519 => "Ed25519",
        }
    }
}

struct Key {
    kid: Option<String>,
    family: Family,
    key: DecodingKey,
}

/// Why no key was found.
#[derive(Debug, PartialEq, Eq)]
pub enum Miss {
    /// Neither the cache nor a refetch has the kid.
    Unknown,
    /// The kid names a key of the other family.
    WrongFamily,
    /// The refetch failed (or the last one, less than an interval ago, did).
    FetchFailed,
}

#[derive(Default)]
struct Refetch {
    last: Option<Instant>,
    last_ok: bool,
}

pub struct Jwks {
    url: String,
    client: reqwest::Client,
    keys: RwLock<Arc<Vec<Key>>>,
    refetch: tokio::sync::Mutex<Refetch>,
    /// Kid-miss refetches so far: a request that waited for another's refetch sees it moved
    /// and takes that outcome instead of fetching again.
    refetches: AtomicU64,
}

impl Jwks {
    /// A cache for `url` (which must be `https://`), trusting the built-in roots and the PEM
    /// certificates of `extra_roots`. Fetches nothing yet.
    pub fn new(url: &str, timeout: Duration, extra_roots: Option<&[u8]>) -> anyhow::Result<Jwks> {
        let parsed = reqwest::Url::parse(url)
            .map_err(|e| anyhow::anyhow!("JWT_JWKS_URL is not a URL ({e}): {url}"))?;
        // Keys fetched in clear text would let anyone on the path mint tokens.
        anyhow::ensure!(
            parsed.scheme() == "https",
            "JWT_JWKS_URL must be an https:// URL: {url}"
        );
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .https_only(true)
            .timeout(timeout)
            .connect_timeout(timeout);
        if let Some(pem) = extra_roots {
            let certs = reqwest::Certificate::from_pem_bundle(pem)
                .map_err(|e| anyhow::anyhow!("JWT_JWKS_CA_FILE: {e}"))?;
            anyhow::ensure!(!certs.is_empty(), "JWT_JWKS_CA_FILE holds no certificate");
            for c in certs {
                builder = builder.add_root_certificate(c);
            }
        }
        Ok(Jwks {
            url: url.to_string(),
            client: builder.build()?,
            keys: RwLock::new(Arc::new(Vec::new())),
            refetch: Default::default(),
            refetches: AtomicU64::new(0),
        })
    }

    /// Fetches once now (a failure is logged: the first token that needs a key retries), then
    /// refreshes every `interval` for as long as the cache is in use, supervised.
    pub async fn start(self: &Arc<Self>, interval: Duration, supervisor: &Supervisor) {
        match self.fetch().await {
            Ok(n) => tracing::info!(url = %self.url, keys = n, "JWKS fetched"),
            Err(e) => tracing::warn!(url = %self.url, error = %e,
                "JWKS fetch failed at start-up; retried when a token needs a key"),
        }
        let weak: Weak<Jwks> = Arc::downgrade(self);
        let interval = interval.max(Duration::from_secs(1));
        supervisor.spawn("jwks refresh", move || refresh(weak.clone(), interval));
    }

    /// The key for a token's `kid` (none: the first cached key of the family), refetching
    /// once when the cache lacks it.
    pub async fn key(&self, kid: Option<&str>, family: Family) -> Result<DecodingKey, Miss> {
        match self.cached(kid, family) {
            Err(Miss::Unknown) => {}
            found => return found,
        }
        if !self.refetch().await {
            return Err(Miss::FetchFailed);
        }
        self.cached(kid, family)
    }

    fn cached(&self, kid: Option<&str>, family: Family) -> Result<DecodingKey, Miss> {
        let keys = self.keys.read().unwrap_or_else(|p| p.into_inner()).clone();
        let found = match kid {
            Some(kid) => keys.iter().find(|k| k.kid.as_deref() == Some(kid)),
            None => keys.iter().find(|k| k.family == family),
        };
        match found {
            Some(k) if k.family == family => Ok(k.key.clone()),
            Some(_) => Err(Miss::WrongFamily),
            None => Err(Miss::Unknown),
        }
    }

    /// A throttled, single-flight refetch; true when the keys are fresh from a good fetch.
    async fn refetch(&self) -> bool {
        let seen = self.refetches.load(Ordering::Acquire);
        let mut state = self.refetch.lock().await;
        if self.refetches.load(Ordering::Acquire) != seen {
            return state.last_ok;
        }
        if state
            .last
            .is_some_and(|t| t.elapsed() < MIN_REFETCH_INTERVAL)
        {
            return state.last_ok;
        }
        state.last_ok = match self.fetch().await {
            Ok(_) => true,
            Err(e) => {
                tracing::warn!(url = %self.url, error = %e, "JWKS refetch failed");
                false
            }
        };
        state.last = Some(Instant::now());
        self.refetches.fetch_add(1, Ordering::Release);
        state.last_ok
    }

    /// Replaces the cache with the served set; the number of usable keys.
    async fn fetch(&self) -> anyhow::Result<usize> {
        let res = self.client.get(&self.url).send().await?;
        anyhow::ensure!(res.status().is_success(), "HTTP {}", res.status());
        let body: Value = serde_json::from_slice(&bounded_body(res).await?)?;
        let Some(list) = body.get("keys").and_then(Value::as_array) else {
            anyhow::bail!("no \"keys\" array");
        };
        let keys: Vec<Key> = list.iter().filter_map(parse_key).collect();
        let n = keys.len();
        // A set with nothing usable is a broken answer, not a rotation to no keys: the keys
        // already cached keep working.
        anyhow::ensure!(n > 0, "no usable key among {}", list.len());
        *self.keys.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(keys);
        Ok(n)
    }
}

/// A key set is a few kilobytes; anything past this is not one, and is not held in memory.
const MAX_JWKS_BYTES: usize = 1 << 20;

async fn bounded_body(mut res: reqwest::Response) -> anyhow::Result<Vec<u8>> {
    let too_big = || anyhow::anyhow!("JWKS response larger than {MAX_JWKS_BYTES} bytes");
    if res
        .content_length()
        .is_some_and(|n| n > MAX_JWKS_BYTES as u64)
    {
        return Err(too_big());
    }
    let mut body = Vec::new();
    while let Some(chunk) = res.chunk().await? {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_JWKS_BYTES {
            return Err(too_big());
        }
    }
    Ok(body)
}

/// An RSA key (`n`, `e`) or an Ed25519 key (`OKP`, 32-byte `x`); other keys are skipped, and
/// symmetric ones above all: a published secret must never verify a token.
fn parse_key(jwk: &Value) -> Option<Key> {
    let field = |name: &str| jwk.get(name).and_then(Value::as_str);
    let kid = field("kid").map(str::to_string);
    let (family, key) = match (field("kty")?, field("crv")) {
        ("RSA", _) => (
            Family::Rsa,
            DecodingKey::from_rsa_components(field("n")?, field("e")?).ok()?,
        ),
        ("OKP", Some("Ed25519")) => {
            let x = field("x")?;
            if URL_SAFE_NO_PAD.decode(x).ok()?.len() != 32 {
                return None;
            }
            (Family::Ed25519, DecodingKey::from_ed_components(x).ok()?)
        }
        _ => return None,
    };
    Some(Key { kid, family, key })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_rsa_and_ed25519_keys_are_kept() {
        let x = URL_SAFE_NO_PAD.encode([7u8; 32]);
        let short = URL_SAFE_NO_PAD.encode([7u8; 31]);
        let kept = |v: Value| parse_key(&v).map(|k| (k.kid, k.family));
        assert_eq!(
            kept(json!({"kty": "RSA", "kid": "r", "n": "AQAB", "e": "AQAB"})),
            Some((Some("r".into()), Family::Rsa))
        );
        assert_eq!(
            kept(json!({"kty": "OKP", "crv": "Ed25519", "x": x})),
            Some((None, Family::Ed25519))
        );
        for skipped in [
            json!({"kty": "RSA", "n": "AQAB"}),
            json!({"kty": "OKP", "crv": "Ed25519", "x": short}),
            json!({"kty": "OKP", "crv": "X25519", "x": x}),
            json!({"kty": "EC", "crv": "P-256", "x": x, "y": x}),
            json!({"kty": "oct", "k": "c2VjcmV0"}),
            json!({"n": "AQAB", "e": "AQAB"}),
        ] {
            assert!(kept(skipped.clone()).is_none(), "{skipped}");
        }
    }

    #[test]
    fn only_https_urls_start() {
        let t = Duration::from_secs(1);
        assert!(Jwks::new("https://idp.example/jwks", t, None).is_ok());
        assert!(Jwks::new("http://idp.example/jwks", t, None).is_err());
        assert!(Jwks::new("not a url", t, None).is_err());
        assert!(Jwks::new("https://idp.example/jwks", t, Some(b"not pem")).is_err());
    }
}
