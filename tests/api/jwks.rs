//! RS256, EdDSA, static public keys and JWKS (spec appendix B.2/B.6): tokens signed with the
//! test-only keys of `tests/fixtures/jwt/`, keys served over HTTPS by a JWKS server that each
//! test starts with its own CA, counts its requests and can rotate keys.

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::Algorithm;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
};
use regent::config::Config;
use regent::http::jwks::MIN_REFETCH_INTERVAL;
use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_rustls::rustls;

use crate::support::{authed_broker_with, signed, token, Broker, SECRET};

const RSA_A: &str = include_str!("../fixtures/jwt/rsa_a.key.pem");
const RSA_A_PUB: &str = include_str!("../fixtures/jwt/rsa_a.pub.pem");
const RSA_B: &str = include_str!("../fixtures/jwt/rsa_b.key.pem");
const ED: &str = include_str!("../fixtures/jwt/ed25519.key.pem");
const ED_PUB: &str = include_str!("../fixtures/jwt/ed25519.pub.pem");

/// The public JWK of a fixture key, under `kid`.
fn jwk(name: &str, kid: &str) -> Value {
    let text = match name {
        "rsa_a" => include_str!("../fixtures/jwt/rsa_a.jwk.json"),
        "rsa_b" => include_str!("../fixtures/jwt/rsa_b.jwk.json"),
        "ed25519" => include_str!("../fixtures/jwt/ed25519.jwk.json"),
        other => panic!("no fixture {other}"),
    };
    let mut v: Value = serde_json::from_str(text).unwrap();
    v["kid"] = json!(kid);
    v
}

fn jwks(keys: &[Value]) -> Value {
    json!({ "keys": keys })
}

fn admin() -> Value {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    json!({"role": "admin", "tenant": "acme", "sub": "tester", "exp": now + 600})
}

/// A read-only route: the answer says whether the token got through.
async fn call(b: &Broker, token: &str) -> (StatusCode, Value) {
    let res = b
        .http
        .get(format!("{}/api/v1/resources/queues", b.url))
        .header("Authorization", format!("Bearer {token}"))
        .send()
        .await
        .expect("request sent");
    let status = res.status();
    (status, res.json().await.unwrap_or(Value::Null))
}

async fn accepted(b: &Broker, token: &str) {
    let (s, v) = call(b, token).await;
    assert_eq!(s, StatusCode::OK, "{v}");
}

async fn refused(b: &Broker, token: &str, status: StatusCode, text: &str) {
    assert_eq!(call(b, token).await, (status, json!({ "error": text })));
}

/// A test certificate authority, its certificate in a PEM file for `JWT_JWKS_CA_FILE`.
struct Ca {
    issuer: Issuer<'static, KeyPair>,
    file: PathBuf,
}

impl Ca {
    fn new() -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "Regent test CA");
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        let file =
            std::env::temp_dir().join(format!("regent-test-ca-{}.pem", uuid::Uuid::new_v4()));
        std::fs::write(&file, cert.pem()).unwrap();
        Ca {
            issuer: Issuer::new(params, key),
            file,
        }
    }
}

impl Drop for Ca {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
    }
}

/// A JWKS endpoint on `https://127.0.0.1:<port>`, certified by a test CA.
struct JwksServer {
    url: String,
    hits: Arc<AtomicUsize>,
    keys: Arc<Mutex<Value>>,
    task: JoinHandle<()>,
}

impl JwksServer {
    async fn start(ca: &Ca, keys: Value) -> JwksServer {
        let mut params = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
        params
            .extended_key_usages
            .push(ExtendedKeyUsagePurpose::ServerAuth);
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &ca.issuer).unwrap();
        let tls = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls::pki_types::PrivatePkcs8KeyDer::from(key.serialize_der()).into(),
        )
        .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(AtomicUsize::new(0));
        let keys = Arc::new(Mutex::new(keys));
        let (h, k) = (hits.clone(), keys.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let (acceptor, h, k) = (acceptor.clone(), h.clone(), k.clone());
                tokio::spawn(async move {
                    // A client that does not trust the certificate stops here, before any
                    // request is counted.
                    let Ok(stream) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let answer = hyper::service::service_fn(move |_req| {
                        h.fetch_add(1, Ordering::SeqCst);
                        let body = k.lock().unwrap().to_string();
                        async move {
                            Ok::<_, Infallible>(
                                hyper::Response::builder()
                                    .header("content-type", "application/json")
                                    // One request per connection, so stopping the listener
                                    // stops the server.
                                    .header("connection", "close")
                                    .body(body)
                                    .unwrap(),
                            )
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), answer)
                        .await;
                });
            }
        });
        JwksServer {
            url: format!("https://127.0.0.1:{port}/.well-known/jwks.json"),
            hits,
            keys,
            task,
        }
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    fn publish(&self, keys: Value) {
        *self.keys.lock().unwrap() = keys;
    }

    async fn stop(self) {
        self.task.abort();
        let _ = self.task.await;
    }
}

/// A broker verifying with `algorithm` against this JWKS server, trusting `ca`.
async fn with_jwks(algorithm: &str, url: &str, ca: &Ca, tune: impl FnOnce(&mut Config)) -> Broker {
    let (algorithm, url, ca) = (algorithm.to_string(), url.to_string(), ca.file.clone());
    authed_broker_with(move |c| {
        c.jwt_secret = None;
        c.jwt_algorithm = algorithm.parse().expect("an algorithm");
        c.jwt_jwks_url = Some(url);
        c.jwt_jwks_ca_file = Some(ca.to_string_lossy().into_owned());
        tune(c);
    })
    .await
}

async fn with_public_key(algorithm: &str, pem: &str) -> Broker {
    let (algorithm, pem) = (algorithm.to_string(), pem.to_string());
    authed_broker_with(move |c| {
        c.jwt_secret = None;
        c.jwt_algorithm = algorithm.parse().expect("an algorithm");
        c.jwt_public_key = Some(pem);
    })
    .await
}

#[tokio::test]
async fn rs256_with_a_static_public_key() {
    let b = with_public_key("RS256", RSA_A_PUB).await;
    accepted(&b, &signed(Algorithm::RS256, RSA_A, None, admin())).await;
    // The static key wins whatever `kid` says.
    accepted(&b, &signed(Algorithm::RS256, RSA_A, Some("any"), admin())).await;
    let unauthorized = StatusCode::UNAUTHORIZED;
    for (token, text) in [
        (
            signed(Algorithm::RS256, RSA_B, None, admin()),
            "Invalid token signature",
        ),
        // RS384 passes the pre-check, but the signature is checked as RS256.
        (
            signed(Algorithm::RS384, RSA_A, None, admin()),
            "Invalid token signature",
        ),
        (
            signed(
                Algorithm::RS256,
                RSA_A,
                None,
                json!({"role": "admin", "exp": 1000}),
            ),
            "Token has expired",
        ),
        (
            token("admin").tenant("acme").expires_in(None).mint(),
            "Token uses HS256, expected RS256",
        ),
        (
            signed(Algorithm::EdDSA, ED, None, admin()),
            "Token uses EdDSA, expected RS256",
        ),
    ] {
        refused(&b, &token, unauthorized, text).await;
    }
    let reader = signed(Algorithm::RS256, RSA_A, None, json!({"role": "read-only"}));
    let res = b
        .http
        .delete(format!("{}/api/v1/resources/queues/q", b.url))
        .header("Authorization", format!("Bearer {reader}"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        res.json::<Value>().await.unwrap(),
        json!({"error": "Insufficient permissions"})
    );
}

#[tokio::test]
async fn eddsa_with_a_static_public_key() {
    let b = with_public_key("EdDSA", ED_PUB).await;
    accepted(&b, &signed(Algorithm::EdDSA, ED, None, admin())).await;
    refused(
        &b,
        &signed(Algorithm::RS256, RSA_A, None, admin()),
        StatusCode::UNAUTHORIZED,
        "Token uses RS256, expected EdDSA",
    )
    .await;
    // Claims swapped under a genuine signature.
    let genuine = signed(Algorithm::EdDSA, ED, None, json!({"role": "read-only"}));
    let parts: Vec<&str> = genuine.split('.').collect();
    let claims = URL_SAFE_NO_PAD.encode(admin().to_string());
    let forged = format!("{}.{claims}.{}", parts[0], parts[2]);
    refused(
        &b,
        &forged,
        StatusCode::UNAUTHORIZED,
        "Invalid token signature",
    )
    .await;
}

#[tokio::test]
async fn rs256_and_eddsa_keys_by_kid_from_jwks() {
    let ca = Ca::new();
    let server = JwksServer::start(
        &ca,
        jwks(&[jwk("rsa_a", "a"), jwk("ed25519", "ed"), jwk("rsa_b", "b")]),
    )
    .await;
    let rs = with_jwks("RS256", &server.url, &ca, |_| {}).await;
    assert_eq!(server.hits(), 1, "fetched at start-up");
    accepted(&rs, &signed(Algorithm::RS256, RSA_A, Some("a"), admin())).await;
    accepted(&rs, &signed(Algorithm::RS256, RSA_B, Some("b"), admin())).await;
    // No kid: the first key (of the family).
    accepted(&rs, &signed(Algorithm::RS256, RSA_A, None, admin())).await;
    let unauthorized = StatusCode::UNAUTHORIZED;
    for (token, text) in [
        (
            signed(Algorithm::RS256, RSA_B, None, admin()),
            "Invalid token signature",
        ),
        (
            signed(Algorithm::RS256, RSA_B, Some("a"), admin()),
            "Invalid token signature",
        ),
        (
            signed(Algorithm::RS384, RSA_A, Some("a"), admin()),
            "Invalid token signature",
        ),
        (
            signed(Algorithm::RS256, RSA_A, Some("ed"), admin()),
            "Token verification failed: key ed is not an RSA key",
        ),
    ] {
        refused(&rs, &token, unauthorized, text).await;
    }
    assert_eq!(server.hits(), 1, "known kids need no refetch");

    let ed = with_jwks("EdDSA", &server.url, &ca, |_| {}).await;
    accepted(&ed, &signed(Algorithm::EdDSA, ED, Some("ed"), admin())).await;
    accepted(&ed, &signed(Algorithm::EdDSA, ED, None, admin())).await;
    refused(
        &ed,
        &signed(Algorithm::RS256, RSA_A, Some("a"), admin()),
        unauthorized,
        "Token uses RS256, expected EdDSA",
    )
    .await;
    assert_eq!(server.hits(), 2);
    server.stop().await;
}

#[tokio::test]
async fn auto_picks_the_path_by_the_tokens_alg() {
    let ca = Ca::new();
    let server = JwksServer::start(&ca, jwks(&[jwk("rsa_a", "a"), jwk("ed25519", "ed")])).await;
    let b = with_jwks("auto", &server.url, &ca, |c| {
        c.jwt_secret = Some(SECRET.into());
    })
    .await;
    accepted(&b, &token("admin").tenant("acme").mint()).await;
    accepted(&b, &signed(Algorithm::RS256, RSA_A, Some("a"), admin())).await;
    accepted(&b, &signed(Algorithm::EdDSA, ED, Some("ed"), admin())).await;
    let unauthorized = StatusCode::UNAUTHORIZED;
    refused(
        &b,
        &token("admin")
            .tenant("acme")
            .secret("other")
            .expires_in(None)
            .mint(),
        unauthorized,
        "Invalid token signature",
    )
    .await;
    for alg in ["ES256", "HS384", "PS256", "none"] {
        let head = URL_SAFE_NO_PAD.encode(format!(r#"{{"alg":"{alg}","kid":"a"}}"#));
        let token = format!("{head}.e30.c2lnbmF0dXJl");
        refused(
            &b,
            &token,
            unauthorized,
            &format!("Unsupported algorithm: {alg}"),
        )
        .await;
    }
    assert_eq!(server.hits(), 1);
    server.stop().await;
}

#[tokio::test]
async fn an_unknown_kid_refetches_once_then_is_refused() {
    let ca = Ca::new();
    let server = JwksServer::start(&ca, jwks(&[jwk("rsa_a", "a")])).await;
    let b = with_jwks("RS256", &server.url, &ca, |_| {}).await;
    assert_eq!(server.hits(), 1);
    refused(
        &b,
        &signed(Algorithm::RS256, RSA_A, Some("x"), admin()),
        StatusCode::UNAUTHORIZED,
        "Unknown key ID: x",
    )
    .await;
    assert_eq!(server.hits(), 2, "one refetch");
    server.stop().await;
}

#[tokio::test]
async fn a_rotated_key_is_found_by_the_refetch() {
    let ca = Ca::new();
    let server = JwksServer::start(&ca, jwks(&[jwk("rsa_a", "a")])).await;
    let b = with_jwks("RS256", &server.url, &ca, |_| {}).await;
    accepted(&b, &signed(Algorithm::RS256, RSA_A, Some("a"), admin())).await;
    server.publish(jwks(&[jwk("rsa_b", "b")]));
    accepted(&b, &signed(Algorithm::RS256, RSA_B, Some("b"), admin())).await;
    assert_eq!(server.hits(), 2);
    // The retired key went with the refetch.
    refused(
        &b,
        &signed(Algorithm::RS256, RSA_A, Some("a"), admin()),
        StatusCode::UNAUTHORIZED,
        "Unknown key ID: a",
    )
    .await;
    server.stop().await;
}

#[tokio::test]
async fn a_jwks_server_that_is_down_answers_500() {
    let ca = Ca::new();
    let server = JwksServer::start(&ca, jwks(&[jwk("rsa_a", "a")])).await;
    let url = server.url.clone();
    let b = with_jwks("RS256", &url, &ca, |_| {}).await;
    let a = signed(Algorithm::RS256, RSA_A, Some("a"), admin());
    accepted(&b, &a).await;
    server.stop().await;
    // Cached keys still verify; a miss cannot be refetched.
    accepted(&b, &a).await;
    refused(
        &b,
        &signed(Algorithm::RS256, RSA_B, Some("b"), admin()),
        StatusCode::INTERNAL_SERVER_ERROR,
        "Failed to fetch JWKS",
    )
    .await;
    // A broker starting while the key server is down starts, and answers 500 until it is up.
    let late = with_jwks("RS256", &url, &ca, |_| {}).await;
    refused(
        &late,
        &a,
        StatusCode::INTERNAL_SERVER_ERROR,
        "Failed to fetch JWKS",
    )
    .await;
}

#[tokio::test]
async fn a_flood_of_random_kids_fetches_at_most_once_per_interval() {
    let ca = Ca::new();
    let server = JwksServer::start(&ca, jwks(&[jwk("rsa_a", "a")])).await;
    let b = with_jwks("RS256", &server.url, &ca, |_| {}).await;
    assert_eq!(server.hits(), 1);
    let began = Instant::now();
    let flood = (0..40).map(|i| {
        let kid = format!("random-{i}-{}", uuid::Uuid::new_v4());
        let token = signed(Algorithm::RS256, RSA_A, Some(&kid), admin());
        let b = &b;
        async move {
            refused(
                b,
                &token,
                StatusCode::UNAUTHORIZED,
                &format!("Unknown key ID: {kid}"),
            )
            .await
        }
    });
    futures::future::join_all(flood).await;
    for i in 0..10 {
        let kid = format!("again-{i}");
        let token = signed(Algorithm::RS256, RSA_A, Some(&kid), admin());
        refused(
            &b,
            &token,
            StatusCode::UNAUTHORIZED,
            &format!("Unknown key ID: {kid}"),
        )
        .await;
    }
    let intervals = (began.elapsed().as_secs_f64() / MIN_REFETCH_INTERVAL.as_secs_f64()) as usize;
    let refetches = server.hits() - 1;
    assert!(
        (1..=1 + intervals).contains(&refetches),
        "{refetches} refetches in {:?}",
        began.elapsed()
    );
    // Once the interval has passed, a miss refetches again.
    tokio::time::sleep(MIN_REFETCH_INTERVAL + Duration::from_millis(100)).await;
    let before = server.hits();
    refused(
        &b,
        &signed(Algorithm::RS256, RSA_A, Some("later"), admin()),
        StatusCode::UNAUTHORIZED,
        "Unknown key ID: later",
    )
    .await;
    assert_eq!(server.hits(), before + 1);
    server.stop().await;
}

#[tokio::test]
async fn a_jwks_server_with_an_untrusted_certificate_is_refused() {
    let trusted = Ca::new();
    let stranger = Ca::new();
    let server = JwksServer::start(&stranger, jwks(&[jwk("rsa_a", "a")])).await;
    let b = with_jwks("RS256", &server.url, &trusted, |_| {}).await;
    refused(
        &b,
        &signed(Algorithm::RS256, RSA_A, Some("a"), admin()),
        StatusCode::INTERNAL_SERVER_ERROR,
        "Failed to fetch JWKS",
    )
    .await;
    assert_eq!(server.hits(), 0, "no request got past the handshake");
    // The same server is fine for a broker that trusts its CA.
    let ok = with_jwks("RS256", &server.url, &stranger, |_| {}).await;
    accepted(&ok, &signed(Algorithm::RS256, RSA_A, Some("a"), admin())).await;
    server.stop().await;
}
