//! The broker over HTTP: one request, retried on 503 and 429 after the broker's Retry-After,
//! and every failure mapped to its exit code with the broker's own text.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::exit::{Exit, Failure};

/// How often a 503, a 429 or a refused connection is tried again before the command gives
/// up, and the longest wait it accepts from a Retry-After.
const ATTEMPTS: u32 = 6;
const LONGEST_WAIT: Duration = Duration::from_secs(30);

pub struct Client {
    base: String,
    token: Option<String>,
    http: reqwest::Client,
}

/// Where the broker is and how to talk to it, resolved from flags, environment and context.
pub struct Target {
    pub server: String,
    pub token: Option<String>,
    /// A PEM file of CAs to trust besides the system's (a broker with its own certificate).
    pub ca_file: Option<std::path::PathBuf>,
}

impl Client {
    pub fn new(target: Target) -> Result<Client, Failure> {
        let mut builder = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .user_agent(concat!("regent/", env!("CARGO_PKG_VERSION")));
        if let Some(file) = &target.ca_file {
            let pem = std::fs::read(file)
                .map_err(|e| Failure::user(format!("CA file {}: {e}", file.display())))?;
            for cert in reqwest::Certificate::from_pem_bundle(&pem)
                .map_err(|e| Failure::user(format!("CA file {}: {e}", file.display())))?
            {
                builder = builder.add_root_certificate(cert);
            }
        }
        let http = builder
            .build()
            .map_err(|e| Failure::user(format!("HTTP client: {e}")))?;
        let base = with_scheme(target.server.trim_end_matches('/'));
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(Failure::user(format!(
                "server \"{base}\" is not an http:// or https:// URL"
            )));
        }
        Ok(Client {
            base,
            token: target.token.filter(|t| !t.is_empty()),
            http,
        })
    }

    pub fn server(&self) -> &str {
        &self.base
    }

    pub async fn get(&self, path: &str, query: &[(&str, String)]) -> Result<Value, Failure> {
        self.send(Method::GET, path, query, None, None).await
    }

    /// A GET asked once, never retried: `ping` answers what it finds at once.
    pub async fn get_once(&self, path: &str) -> Result<Value, Failure> {
        let once = Retries {
            attempts: 1,
            resend: Resend::Always,
        };
        self.send_as(Method::GET, path, &[], None, None, once).await
    }

    pub async fn post(&self, path: &str, body: &Value) -> Result<Value, Failure> {
        self.send(Method::POST, path, &[], Some(body), None).await
    }

    /// A POST with no body (its parameters in the query) that must not run twice (`messages
    /// retry` appends a copy each time): not sent again when its answer may have been lost.
    pub async fn post_once(&self, path: &str, query: &[(&str, String)]) -> Result<Value, Failure> {
        let retries = Retries {
            attempts: ATTEMPTS,
            resend: Resend::OnlyUnsent,
        };
        self.send_as(Method::POST, path, query, None, None, retries)
            .await
    }

    pub async fn delete(&self, path: &str, query: &[(&str, String)]) -> Result<Value, Failure> {
        self.send(Method::DELETE, path, query, None, None).await
    }

    /// A request whose answer may take `timeout` (a long poll): the client waits that long
    /// plus a margin.
    pub async fn get_long(
        &self,
        path: &str,
        query: &[(&str, String)],
        timeout: Duration,
    ) -> Result<Value, Failure> {
        self.send(Method::GET, path, query, None, Some(timeout))
            .await
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&Value>,
        long: Option<Duration>,
    ) -> Result<Value, Failure> {
        let retries = Retries {
            attempts: ATTEMPTS,
            resend: Resend::Always,
        };
        self.send_as(method, path, query, body, long, retries).await
    }

    async fn send_as(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&Value>,
        long: Option<Duration>,
        retries: Retries,
    ) -> Result<Value, Failure> {
        let url = format!("{}{}", self.base, path);
        let mut attempt = 1;
        loop {
            let mut req = self
                .http
                .request(method.clone(), &url)
                .query(query)
                .timeout(long.unwrap_or_default() + Duration::from_secs(30));
            if let Some(token) = &self.token {
                req = req.bearer_auth(token);
            }
            if let Some(b) = body {
                req = req.json(b);
            }
            let last = attempt >= retries.attempts;
            let (wait, why) = match req.send().await {
                Ok(resp) => match answer(resp).await {
                    Answered::Done(result) => return result,
                    Answered::Later(_, failure) if last => return Err(failure),
                    Answered::Later(wait, failure) => (
                        wait,
                        format!("{} from the broker", failure.status.unwrap_or_default()),
                    ),
                },
                // A request that never reached the broker is safe to send again. One whose
                // answer was lost is too, except where `Resend::OnlyUnsent` says otherwise
                // (pushes carry their transaction ids, so a resent push is deduplicated; acks,
                // seeks, configures and switches are idempotent).
                Err(e) if !last && e.is_connect() => {
                    let refused = transport_text(&e).contains("Connection refused");
                    let why = if refused {
                        "connection refused"
                    } else {
                        "cannot connect"
                    };
                    (Duration::from_secs(1), why.to_string())
                }
                Err(e) if !last && e.is_timeout() && retries.resend == Resend::Always => {
                    (Duration::from_secs(1), "no answer in time".to_string())
                }
                Err(e) => return Err(Failure::unreachable(self.transport_failure(&e))),
            };
            let wait = wait.min(LONGEST_WAIT);
            // A retry is never silent: the operator sees why the command is waiting.
            eprintln!(
                "{why}, retrying in {} s ({}/{})",
                wait.as_secs(),
                attempt + 1,
                retries.attempts
            );
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    /// What a request that never got an answer says: the transport's own text, or what to
    /// do when an https:// URL met a broker that speaks plain HTTP (rustls reports that as a
    /// "corrupt message of type InvalidContentType").
    fn transport_failure(&self, e: &reqwest::Error) -> String {
        let text = transport_text(e);
        if self.base.starts_with("https://") && text.contains("InvalidContentType") {
            let plain = self.base.replacen("https://", "http://", 1);
            return format!("{}: the broker answered plain HTTP; use {plain}", self.base);
        }
        format!("{}: {text}", self.base)
    }
}

/// A server given without a scheme (`localhost:6632`) is plain HTTP, as curl takes it.
fn with_scheme(server: &str) -> String {
    if server.contains("://") {
        server.to_string()
    } else {
        format!("http://{server}")
    }
}

/// How many times a request is sent at most, and whether it may be sent again after a
/// timeout, when it may already have run.
#[derive(Clone, Copy)]
struct Retries {
    attempts: u32,
    resend: Resend,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Resend {
    Always,
    OnlyUnsent,
}

enum Answered {
    Done(Result<Value, Failure>),
    /// Try again after this long; the failure is what to report if no attempts are left.
    Later(Duration, Failure),
}

async fn answer(resp: reqwest::Response) -> Answered {
    let status = resp.status();
    let retry_after = resp
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    let text = resp.text().await.unwrap_or_default();
    let body: Value = if text.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    };
    if status.is_success() {
        return Answered::Done(Ok(body));
    }
    let message = format!("{}: {}", status.as_u16(), error_text(&body));
    let exit = match status {
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => Exit::Auth,
        s if s.is_client_error() && s != StatusCode::TOO_MANY_REQUESTS => Exit::User,
        _ => Exit::Unreachable,
    };
    let failure = Failure {
        exit,
        message,
        status: Some(status.as_u16()),
    };
    match status {
        StatusCode::SERVICE_UNAVAILABLE | StatusCode::TOO_MANY_REQUESTS => {
            Answered::Later(retry_after.unwrap_or(Duration::from_secs(1)), failure)
        }
        _ => Answered::Done(Err(failure)),
    }
}

/// The broker's `error` text, else its body as text.
fn error_text(body: &Value) -> String {
    match body {
        Value::Object(m) => match m.get("error").or_else(|| m.get("message")) {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => body.to_string(),
        },
        Value::String(s) => s.chars().take(300).collect(),
        Value::Null => "(no body)".into(),
        v => v.to_string(),
    }
}

/// reqwest's error and its causes, without the Debug dump.
fn transport_text(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
