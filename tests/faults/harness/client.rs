//! The careful client every producer and consumer is. It retries a request after a transport
//! error and after a 503 (waiting what `Retry-After` says, capped so that a case stays short),
//! moving on to the next broker when there are several, and records every answer the test
//! judges: each 503 with its `Retry-After`, any other 5xx, any 4xx, every transport error.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::Value;

/// The longest a client waits after a 503, whatever `Retry-After` says (the broker's
/// "Database unavailable" asks for 5 s; a case should not spend its time waiting).
const RETRY_AFTER_CAP: Duration = Duration::from_secs(2);
/// The pause after a transport error or a 5xx other than 503.
const TRANSPORT_PAUSE: Duration = Duration::from_millis(100);
/// A request that takes longer than this is counted as a timeout (a hang, if it repeats).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// What the brokers answered, over every client of a case.
#[derive(Default)]
pub struct Answers(Mutex<Seen>);

#[derive(Default, Clone)]
pub struct Seen {
    /// 503s by their error text.
    pub unavailable: BTreeMap<String, u64>,
    /// 503s that carried no (or no numeric) `Retry-After`.
    pub without_retry_after: Vec<String>,
    /// 5xx other than 503.
    pub server_errors: Vec<String>,
    /// 4xx: a careful client sends nothing a broker should refuse.
    pub refused: Vec<String>,
    pub transport_errors: u64,
    /// Transport errors that were the client giving up on a silent broker.
    pub timeouts: u64,
    /// The first few transport errors, for the reader of a failure.
    pub transport_samples: Vec<String>,
}

impl Answers {
    pub fn seen(&self) -> Seen {
        self.0.lock().unwrap().clone()
    }

    fn transport(&self, what: &str, e: &reqwest::Error) {
        let mut s = self.0.lock().unwrap();
        s.transport_errors += 1;
        if s.transport_samples.len() < 10 {
            s.transport_samples.push(format!("{what}: {e:?}"));
        }
        if e.is_timeout() {
            s.timeouts += 1;
        }
    }

    /// Records a 503 and returns how long to wait before retrying.
    async fn unavailable(&self, what: &str, answer: reqwest::Response) -> Duration {
        let retry_after = answer
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        let body: Value = answer.json().await.unwrap_or(Value::Null);
        let text = body["error"]
            .as_str()
            .unwrap_or("(no error text)")
            .to_string();
        let mut s = self.0.lock().unwrap();
        *s.unavailable.entry(text.clone()).or_default() += 1;
        match retry_after {
            Some(secs) => Duration::from_secs(secs).min(RETRY_AFTER_CAP),
            None => {
                s.without_retry_after.push(format!("{what}: {text}"));
                TRANSPORT_PAUSE
            }
        }
    }

    async fn wrong(&self, what: &str, status: StatusCode, answer: reqwest::Response) {
        let body = answer.text().await.unwrap_or_default();
        let line = format!("{what}: {status} {body}");
        let mut s = self.0.lock().unwrap();
        if status.is_server_error() {
            s.server_errors.push(line);
        } else {
            s.refused.push(line);
        }
    }
}

/// When a client stops retrying.
#[derive(Clone, Copy)]
pub enum Until<'a> {
    /// When the flag is set (the load is being stopped).
    Stopped(&'a AtomicBool),
    /// At this instant (an ack after its lease is over can only be refused).
    Deadline(Instant),
}

impl Until<'_> {
    fn reached(self) -> bool {
        match self {
            Until::Stopped(flag) => flag.load(Ordering::Relaxed),
            Until::Deadline(at) => Instant::now() >= at,
        }
    }
}

/// A 2xx answer, and when the request that got it was sent.
pub struct Reply {
    pub body: Value,
    pub sent: Instant,
}

#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    /// The brokers' base URLs; this client uses the one at `home` and moves on to the next
    /// after a failure, staying with whichever answers.
    urls: Arc<Vec<String>>,
    home: Arc<AtomicUsize>,
    answers: Arc<Answers>,
}

impl Client {
    pub fn new(urls: Arc<Vec<String>>, home: usize, answers: Arc<Answers>) -> Client {
        let http = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .build()
            .unwrap();
        Client {
            http,
            urls,
            home: Arc::new(AtomicUsize::new(home)),
            answers,
        }
    }

    pub async fn get(&self, path: &str, until: Until<'_>) -> Option<Reply> {
        self.send(Method::GET, path, None, until).await
    }

    pub async fn post(&self, path: &str, body: &Value, until: Until<'_>) -> Option<Reply> {
        self.send(Method::POST, path, Some(body), until).await
    }

    /// The first 2xx answer; `None` when `until` came before one, or on a 4xx (recorded).
    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        until: Until<'_>,
    ) -> Option<Reply> {
        let what = format!("{method} {}", path.split('?').next().unwrap_or(path));
        for attempt in 0.. {
            // Always one attempt: `until` bounds the retries.
            if attempt > 0 && until.reached() {
                return None;
            }
            let home = (self.home.load(Ordering::Relaxed) + attempt.min(1)) % self.urls.len();
            self.home.store(home, Ordering::Relaxed);
            let base = &self.urls[home];
            let mut request = self.http.request(method.clone(), format!("{base}{path}"));
            if let Some(body) = body {
                request = request.json(body);
            }
            let sent = Instant::now();
            let pause = match request.send().await {
                Err(e) => {
                    self.answers.transport(&format!("{what} at {base}"), &e);
                    TRANSPORT_PAUSE
                }
                Ok(answer) if answer.status().is_success() => match answer.json().await {
                    Ok(body) => return Some(Reply { body, sent }),
                    // The answer was cut off: as good as none.
                    Err(e) => {
                        self.answers.transport(&format!("{what} at {base}"), &e);
                        TRANSPORT_PAUSE
                    }
                },
                Ok(answer) if answer.status() == StatusCode::SERVICE_UNAVAILABLE => {
                    self.answers.unavailable(&what, answer).await
                }
                Ok(answer) => {
                    let status = answer.status();
                    self.answers.wrong(&what, status, answer).await;
                    if !status.is_server_error() {
                        return None;
                    }
                    TRANSPORT_PAUSE
                }
            };
            tokio::time::sleep(pause).await;
        }
        unreachable!("the loop only ends by returning")
    }
}
