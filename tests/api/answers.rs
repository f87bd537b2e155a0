//! Every route's answers, recorded: one scenario calls every JSON route of the table (and a
//! few refusals) against one broker with data, and compares each answer's status and body,
//! key order included, with `tests/fixtures/answers.txt`. The file was recorded before the
//! answers became typed values, so a change to any answer's shape or text fails here, naming
//! the call. (The text expositions, the OpenAPI document and the console's files are not
//! recorded. A route added later is not required here: its entry is its one declaration.)
//!
//! What differs from run to run is masked before the comparison, so the rest compares to the
//! byte: ids (`<uuid>`), instants (`<time>`), and the values of keys that measure the machine
//! (`VOLATILE`). Answers that describe the machine or the database as a whole (the fleet's
//! metrics, PostgreSQL's statistics) are compared by shape: keys in order and value kinds.
//!
//! `REGENT_RECORD_ANSWERS=1 cargo test --test api -- answers::` writes the file anew; review
//! its diff: a change there is a change on the wire.

use std::fmt::Write as _;

use reqwest::Method;
use serde_json::json;

use crate::support::{authed_broker, broker_with, token, Broker};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/answers.txt");

/// Keys whose values measure time or the machine: masked wherever they appear.
const VOLATILE: &[&str] = &[
    "uptime",
    "uptimeSeconds",
    "lagSeconds",
    "maxTimeLag",
    "timeLagSeconds",
    "time_lag_seconds",
    "lag_hours",
    "avgLagSeconds",
    "maxLagSeconds",
    "medianLagSeconds",
    "age",
    "ageSeconds",
    "oldestAgeSeconds",
    "waitSeconds",
    "leaseExpiresIn",
    "elapsedMs",
    "durationMs",
    "tookMs",
    "avg",
    "max",
    "median",
    "maxTimeLagSeconds",
];

/// How an answer is compared.
#[derive(Clone, Copy, PartialEq)]
enum Compare {
    /// Ids, instants and `VOLATILE` values masked; the rest to the byte.
    Exact,
    /// Keys in order and the kinds of values only; arrays by their first element.
    Shape,
}

/// A JSON value with its object keys in the order they came on the wire.
#[derive(Clone, Debug, PartialEq)]
enum J {
    Null,
    Bool(bool),
    Num(String),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

/// A small JSON reader that keeps what serde_json's `Value` loses: the order of keys and
/// each number's text (a float parsed and printed again may not give its bytes back).
struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

impl Reader<'_> {
    fn parse(text: &str) -> Result<J, String> {
        let mut r = Reader {
            b: text.as_bytes(),
            i: 0,
        };
        let v = r.value()?;
        r.ws();
        (r.i == r.b.len())
            .then_some(v)
            .ok_or_else(|| format!("trailing bytes at {}", r.i))
    }

    fn ws(&mut self) {
        while self.b.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        let hit = self.b.get(self.i) == Some(&c);
        self.i += usize::from(hit);
        hit
    }

    fn value(&mut self) -> Result<J, String> {
        self.ws();
        let rest = &self.b[self.i..];
        for (word, v) in [
            ("null", J::Null),
            ("true", J::Bool(true)),
            ("false", J::Bool(false)),
        ] {
            if rest.starts_with(word.as_bytes()) {
                self.i += word.len();
                return Ok(v);
            }
        }
        match rest.first() {
            Some(b'"') => self.string().map(J::Str),
            Some(b'[') => {
                self.i += 1;
                let mut items = Vec::new();
                if !self.eat(b']') {
                    loop {
                        items.push(self.value()?);
                        if self.eat(b']') {
                            break;
                        }
                        self.eat(b',').then_some(()).ok_or("expected ,")?;
                    }
                }
                Ok(J::Arr(items))
            }
            Some(b'{') => {
                self.i += 1;
                let mut fields = Vec::new();
                if !self.eat(b'}') {
                    loop {
                        self.ws();
                        let k = self.string()?;
                        self.eat(b':').then_some(()).ok_or("expected :")?;
                        fields.push((k, self.value()?));
                        if self.eat(b'}') {
                            break;
                        }
                        self.eat(b',').then_some(()).ok_or("expected ,")?;
                    }
                }
                Ok(J::Obj(fields))
            }
            Some(c) if c.is_ascii_digit() || *c == b'-' => {
                let n = rest
                    .iter()
                    .take_while(|c| c.is_ascii_digit() || b"+-.eE".contains(c))
                    .count();
                self.i += n;
                Ok(J::Num(String::from_utf8_lossy(&rest[..n]).into_owned()))
            }
            _ => Err(format!("unexpected byte at {}", self.i)),
        }
    }

    /// A string literal, unescaped by serde_json (the literal's bounds found by hand).
    fn string(&mut self) -> Result<String, String> {
        let start = self.i;
        self.i += 1;
        while let Some(&c) = self.b.get(self.i) {
            self.i += 1;
            match c {
                b'\\' => self.i += 1,
                b'"' => {
                    let lit =
                        std::str::from_utf8(&self.b[start..self.i]).map_err(|e| e.to_string())?;
                    return serde_json::from_str(lit).map_err(|e| e.to_string());
                }
                _ => {}
            }
        }
        Err("unterminated string".into())
    }
}

impl J {
    /// The compact text serde_json writes for this value: an answer round-trips to its bytes.
    fn compact(&self, out: &mut String) {
        match self {
            J::Null => out.push_str("null"),
            J::Bool(b) => write!(out, "{b}").unwrap(),
            J::Num(n) => out.push_str(n),
            J::Str(s) => out.push_str(&serde_json::to_string(s).unwrap()),
            J::Arr(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    v.compact(out);
                }
                out.push(']');
            }
            J::Obj(fields) => {
                out.push('{');
                for (i, (k, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&serde_json::to_string(k).unwrap());
                    out.push(':');
                    v.compact(out);
                }
                out.push('}');
            }
        }
    }

    /// One line per leaf, with its path: what the fixture holds and what a diff names.
    fn lines(&self, path: &str, out: &mut Vec<String>) {
        match self {
            J::Arr(items) if !items.is_empty() => {
                for (i, v) in items.iter().enumerate() {
                    v.lines(&format!("{path}[{i}]"), out);
                }
            }
            J::Obj(fields) if !fields.is_empty() => {
                for (k, v) in fields {
                    v.lines(&format!("{path}.{k}"), out);
                }
            }
            leaf => {
                let mut text = String::new();
                leaf.compact(&mut text);
                out.push(format!("{path} = {text}"));
            }
        }
    }

    fn masked(self, how: Compare, key: Option<&str>) -> J {
        if how == Compare::Shape {
            return match self {
                J::Num(_) => J::Num("0".into()),
                J::Str(_) => J::Str(String::new()),
                J::Bool(_) => J::Bool(false),
                J::Arr(items) => J::Arr(
                    items
                        .into_iter()
                        .take(1)
                        .map(|v| v.masked(how, None))
                        .collect(),
                ),
                J::Obj(fields) => J::Obj(
                    fields
                        .into_iter()
                        .map(|(k, v)| {
                            let v = v.masked(how, Some(&k));
                            (k, v)
                        })
                        .collect(),
                ),
                J::Null => J::Null,
            };
        }
        if key.is_some_and(|k| VOLATILE.contains(&k)) {
            match self {
                J::Num(_) => return J::Num("<n>".into()),
                J::Str(_) => return J::Str("<volatile>".into()),
                _ => {}
            }
        }
        match self {
            J::Str(s) => J::Str(mask_text(&s)),
            J::Arr(items) => J::Arr(items.into_iter().map(|v| v.masked(how, None)).collect()),
            J::Obj(fields) => J::Obj(
                fields
                    .into_iter()
                    .map(|(k, v)| {
                        let v = v.masked(how, Some(&k));
                        (k, v)
                    })
                    .collect(),
            ),
            other => other,
        }
    }
}

/// The text with every UUID replaced by `<uuid>` and every ISO-8601 instant by `<time>`.
fn mask_text(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        if let Some(n) = uuid_at(&b[i..]) {
            out.push_str("<uuid>");
            i += n;
        } else if let Some(n) = instant_at(&b[i..]) {
            out.push_str("<time>");
            i += n;
        } else {
            let ch = s[i..].chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// A UUID in either spelling: hyphenated, or 32 hex digits in a row.
fn uuid_at(b: &[u8]) -> Option<usize> {
    if b.len() >= 32 && b[..32].iter().all(u8::is_ascii_hexdigit) {
        return Some(32);
    }
    const GROUPS: [usize; 5] = [8, 4, 4, 4, 12];
    let mut i = 0;
    for (g, len) in GROUPS.iter().enumerate() {
        if g > 0 {
            (b.get(i) == Some(&b'-')).then_some(())?;
            i += 1;
        }
        let part = b.get(i..i + len)?;
        part.iter().all(u8::is_ascii_hexdigit).then_some(())?;
        i += len;
    }
    Some(i)
}

/// `YYYY-MM-DDTHH:MM:SS` (or a space for the `T`), then fractions and a zone when present.
fn instant_at(b: &[u8]) -> Option<usize> {
    let pattern = b"dddd-dd-ddTdd:dd:dd";
    for (i, p) in pattern.iter().enumerate() {
        let c = *b.get(i)?;
        let ok = match p {
            b'd' => c.is_ascii_digit(),
            b'T' => c == b'T' || c == b' ',
            other => c == *other,
        };
        ok.then_some(())?;
    }
    let mut i = pattern.len();
    if b.get(i) == Some(&b'.') {
        i += 1;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
    }
    match b.get(i) {
        Some(b'Z') => i += 1,
        Some(b'+' | b'-') if b.get(i + 1).is_some_and(u8::is_ascii_digit) => {
            i += 1;
            while b.get(i).is_some_and(|c| c.is_ascii_digit() || *c == b':') {
                i += 1;
            }
        }
        _ => {}
    }
    Some(i)
}

/// The answers of one scenario, in call order.
struct Recorder {
    lines: Vec<String>,
}

impl Recorder {
    /// Calls the route, checks the body round-trips to its bytes (so the masked form stands
    /// for them), records it, and returns the body as a `serde_json::Value` for later steps.
    async fn call(
        &mut self,
        b: &Broker,
        token: Option<&str>,
        method: Method,
        path: &str,
        body: Option<serde_json::Value>,
        how: Compare,
    ) -> serde_json::Value {
        let mut req = b.http.request(method.clone(), format!("{}{}", b.url, path));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(body) = &body {
            req = req
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        let res = req.send().await.expect("request sent");
        let status = res.status();
        let ctype = res
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        let bytes = res.text().await.expect("body read");
        let j = Reader::parse(&bytes)
            .unwrap_or_else(|e| panic!("{method} {path}: not JSON ({e}): {bytes}"));
        let mut again = String::new();
        j.compact(&mut again);
        assert_eq!(
            again, bytes,
            "{method} {path}: the answer round-trips to its bytes"
        );
        let sent = body
            .map(|b| format!(" {}", mask_text(&b.to_string())))
            .unwrap_or_default();
        self.lines.push(format!(
            "{method} {}{sent} -> {status} {ctype}",
            mask_text(path)
        ));
        let mut leaves = Vec::new();
        j.masked(how, None).lines("  $", &mut leaves);
        self.lines.extend(leaves);
        serde_json::from_str(&bytes).unwrap()
    }

    async fn get(&mut self, b: &Broker, path: &str) -> serde_json::Value {
        self.call(b, None, Method::GET, path, None, Compare::Exact)
            .await
    }

    async fn post(&mut self, b: &Broker, path: &str, body: serde_json::Value) -> serde_json::Value {
        self.call(b, None, Method::POST, path, Some(body), Compare::Exact)
            .await
    }

    async fn delete(&mut self, b: &Broker, path: &str) -> serde_json::Value {
        self.call(b, None, Method::DELETE, path, None, Compare::Exact)
            .await
    }
}

/// Fills a broker, then calls every JSON route of the table with what it holds.
async fn scenario(r: &mut Recorder) {
    let b = broker_with(|_| {}).await;
    let id = |v: &serde_json::Value, k: &str| v[k].as_str().expect(k).to_string();

    // Producing.
    r.post(
        &b,
        "/api/v1/configure",
        json!({"queue": "shop.orders", "namespace": "shop", "task": "orders",
               "options": {"leaseTime": 30, "retryLimit": 1, "priority": 3}}),
    )
    .await;
    let pushed = r
        .post(
            &b,
            "/api/v1/push",
            json!({"items": [
                {"queue": "shop.orders", "partition": "p1", "transactionId": "o-1", "payload": {"n": 1}},
                {"queue": "shop.orders", "partition": "p1", "transactionId": "o-2", "payload": {"n": 2}},
                {"queue": "shop.orders", "partition": "p1", "transactionId": "o-3", "payload": {"n": 3}},
                {"queue": "shop.orders", "partition": "p2", "transactionId": "o-4", "payload": {"n": 4}},
                {"queue": "shop.orders", "partition": "p1", "transactionId": "o-1", "payload": {"n": 1}},
                {"queue": "logs", "transactionId": "l-1", "payload": "text"},
            ]}),
        )
        .await;
    let p1 = id(&pushed[0], "partition_id");
    let p2 = id(&pushed[3], "partition_id");

    // Consuming: a group pops, acks one, nacks one past its budget; queue mode pops too.
    let pop = r
        .get(
            &b,
            "/api/v1/pop/queue/shop.orders/partition/p1?batch=2&wait=false&consumerGroup=ledger",
        )
        .await;
    let lease = id(&pop, "leaseId");
    r.post(
        &b,
        &format!("/api/v1/lease/{lease}/extend"),
        json!({"seconds": 60}),
    )
    .await;
    r.post(
        &b,
        "/api/v1/ack",
        json!({"transactionId": "o-1", "partitionId": p1, "leaseId": lease,
               "status": "completed", "consumerGroup": "ledger"}),
    )
    .await;
    r.post(
        &b,
        "/api/v1/ack/batch",
        json!({"consumerGroup": "ledger", "acknowledgments": [
            {"transactionId": "o-2", "partitionId": p1, "leaseId": lease, "status": "failed", "error": "boom"}]}),
    )
    .await;
    let again = r
        .get(
            &b,
            "/api/v1/pop/queue/shop.orders/partition/p1?batch=1&wait=false&consumerGroup=ledger",
        )
        .await;
    let lease2 = id(&again, "leaseId");
    r.post(
        &b,
        "/api/v1/ack/batch",
        json!({"consumerGroup": "ledger", "acknowledgments": [
            {"transactionId": "o-2", "partitionId": p1, "leaseId": lease2, "status": "failed", "error": "boom"}]}),
    )
    .await;
    r.get(&b, "/api/v1/pop/queue/shop.orders?batch=5&wait=false")
        .await;
    r.get(
        &b,
        "/api/v1/pop?namespace=shop&batch=5&wait=false&consumerGroup=scope",
    )
    .await;
    let tx_pop = r
        .get(
            &b,
            "/api/v1/pop/queue/logs?batch=1&wait=false&consumerGroup=relay",
        )
        .await;
    r.post(
        &b,
        "/api/v1/transaction",
        json!({"operations": [
            {"type": "ack", "transactionId": "l-1", "partitionId": id(&tx_pop["messages"][0], "partitionId"),
             "leaseId": id(&tx_pop, "leaseId"), "status": "completed", "consumerGroup": "relay"},
            {"type": "push", "items": [{"queue": "logs", "transactionId": "l-2", "payload": {"x": 1}}]}],
            "requiredLeases": []}),
    )
    .await;
    // An empty pop, and a refused transaction.
    r.get(&b, "/api/v1/pop/queue/nothing?wait=false").await;
    r.post(
        &b,
        "/api/v1/transaction",
        json!({"operations": [{"type": "ack", "transactionId": "zz", "partitionId": p1,
               "status": "completed"}]}),
    )
    .await;

    // Traces.
    r.post(
        &b,
        "/api/v1/traces",
        json!({"transactionId": "o-3", "partitionId": p1, "consumerGroup": "ledger",
               "eventType": "processing", "traceNames": ["checkout"], "data": {"step": 1}}),
    )
    .await;
    r.get(&b, "/api/v1/traces/names").await;
    r.get(&b, "/api/v1/traces/by-name/checkout").await;
    r.get(&b, &format!("/api/v1/traces/{p1}/o-3")).await;

    // Inspection, after a stats round.
    r.post(&b, "/api/v1/stats/refresh", json!({})).await;
    for path in [
        "/health",
        "/api/v1/whoami",
        "/api/v1/resources/overview",
        "/api/v1/resources/queues",
        "/api/v1/resources/queues/shop.orders",
        "/api/v1/resources/namespaces",
        "/api/v1/resources/tasks",
        "/api/v1/resources/queues/shop.orders/depth?group=ledger",
        "/api/v1/resources/partitions?queue=shop.orders",
        "/api/v1/messages?queue=shop.orders",
        "/api/v1/dlq?queue=shop.orders",
        "/api/v1/status",
        "/api/v1/status/queues",
        "/api/v1/status/queues/shop.orders",
        "/api/v1/status/queues/shop.orders/messages",
        "/api/v1/status/analytics",
        "/api/v1/status/buffers",
        "/api/v1/analytics/queue-lag",
        "/api/v1/analytics/queue-ops",
        "/api/v1/analytics/queue-parked-replicas",
        "/api/v1/analytics/retention",
        "/api/v1/consumer-groups",
        "/api/v1/consumer-groups/lagging?minLagSeconds=0",
        "/api/v1/consumer-groups/ledger",
        "/api/v1/system/maintenance",
        "/api/v1/system/maintenance/pop",
        "/api/v1/system/shared-state",
    ] {
        r.get(&b, path).await;
    }
    r.get(&b, &format!("/api/v1/messages/{p1}/o-3")).await;
    for path in [
        "/metrics",
        "/api/v1/analytics/system-metrics",
        "/api/v1/analytics/worker-metrics",
        "/api/v1/analytics/postgres-stats",
    ] {
        r.call(&b, None, Method::GET, path, None, Compare::Shape)
            .await;
    }

    // Single messages and dead letters.
    r.post(&b, &format!("/api/v1/messages/{p1}/o-3/retry"), json!({}))
        .await;
    r.post(
        &b,
        &format!("/api/v1/messages/{p1}/o-3/dlq?consumerGroup=ledger"),
        json!({}),
    )
    .await;
    r.post(&b, &format!("/api/v1/messages/{p1}/o-3/retry"), json!({}))
        .await;
    r.post(
        &b,
        "/api/v1/dlq/requeue",
        json!({"queue": "shop.orders", "consumerGroup": "ledger", "limit": 1}),
    )
    .await;
    r.post(&b, "/api/v1/dlq/delete", json!({"queue": "shop.orders"}))
        .await;
    r.delete(&b, &format!("/api/v1/messages/{p2}/o-4")).await;
    r.delete(&b, &format!("/api/v1/messages/{p1}/o-3")).await;

    // Consumer groups.
    r.post(
        &b,
        "/api/v1/consumer-groups/ledger/subscription",
        json!({"subscriptionTimestamp": "2026-01-02T03:04:05.000Z"}),
    )
    .await;
    r.post(
        &b,
        "/api/v1/consumer-groups/ledger/queues/shop.orders/seek",
        json!({"toEnd": true}),
    )
    .await;
    r.post(
        &b,
        "/api/v1/consumer-groups/ledger/queues/shop.orders/partitions/p2/seek",
        json!({"timestamp": "2020-01-01T00:00:00Z"}),
    )
    .await;
    r.delete(&b, "/api/v1/consumer-groups/scope/queues/shop.orders")
        .await;
    r.delete(&b, "/api/v1/consumer-groups/ledger?deleteMetadata=true")
        .await;

    // Maintenance.
    r.post(&b, "/api/v1/system/maintenance", json!({"enabled": true}))
        .await;
    r.post(&b, "/api/v1/system/maintenance", json!({"enabled": false}))
        .await;
    r.post(
        &b,
        "/api/v1/system/maintenance/pop",
        json!({"enabled": false}),
    )
    .await;

    // Deleting.
    r.delete(&b, "/api/v1/queues/shop.orders/clear?partition=p2")
        .await;
    r.delete(&b, "/api/v1/resources/queues/logs").await;

    // Refusals: the shared error envelope and a few of the spec's texts.
    r.post(&b, "/api/v1/push", json!({"items": "no"})).await;
    r.get(&b, "/api/v1/resources/queues/absent").await;
    r.get(&b, "/api/v1/nowhere").await;
    r.post(&b, "/api/v1/ack", json!({"transactionId": "x"}))
        .await;
    r.get(&b, "/api/v1/consumer-groups/lagging?minLagSeconds=-1")
        .await;
    r.post(&b, "/api/v1/consumer-groups/g/queues/q/seek", json!({}))
        .await;
}

/// What a broker with authentication on answers of the caller, and its refusals.
async fn authenticated(r: &mut Recorder) {
    let b = authed_broker().await;
    let reader = token("read-only").tenant("acme").mint();
    let get = Method::GET;
    r.call(
        &b,
        Some(&reader),
        get.clone(),
        "/api/v1/whoami",
        None,
        Compare::Exact,
    )
    .await;
    r.call(
        &b,
        None,
        get.clone(),
        "/api/v1/whoami",
        None,
        Compare::Exact,
    )
    .await;
    r.call(
        &b,
        Some("not-a-token"),
        get.clone(),
        "/api/v1/whoami",
        None,
        Compare::Exact,
    )
    .await;
    let path = "/api/v1/system/maintenance";
    r.call(&b, Some(&reader), get, path, None, Compare::Exact)
        .await;
}

#[tokio::test]
async fn every_answer_is_as_recorded() {
    let mut r = Recorder { lines: Vec::new() };
    scenario(&mut r).await;
    authenticated(&mut r).await;
    let now = r.lines.join("\n") + "\n";
    if std::env::var_os("REGENT_RECORD_ANSWERS").is_some() {
        std::fs::write(FIXTURE, &now).expect("fixture written");
        return;
    }
    let recorded = std::fs::read_to_string(FIXTURE).expect("tests/fixtures/answers.txt");
    let (old, new): (Vec<&str>, Vec<&str>) = (recorded.lines().collect(), now.lines().collect());
    let first = old.iter().zip(&new).position(|(a, b)| a != b);
    if let Some(i) = first.or((old.len() != new.len()).then(|| old.len().min(new.len()))) {
        let call = old[..i.min(old.len())]
            .iter()
            .rev()
            .find(|l| !l.starts_with("  "))
            .unwrap_or(&"");
        panic!(
            "an answer changed, in {call}\n  recorded: {}\n  now:      {}",
            old.get(i).unwrap_or(&"<end>"),
            new.get(i).unwrap_or(&"<end>")
        );
    }
}
