//! Configuration from the environment (envy). Queen's variable names are accepted next to
//! `DATABASE_URL` so a Queen deployment can switch brokers without rewriting its manifests.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::bail;
use serde::Deserialize;

use regent_rules::limits::{LimitTable, Limits};

fn default_host() -> String {
    "0.0.0.0".into()
}
fn default_port() -> u16 {
    6632
}
fn default_pool_size() -> usize {
    32
}
fn default_max_body_bytes() -> usize {
    16 * 1024 * 1024
}
fn default_max_push_items() -> usize {
    100_000
}
fn default_max_large_requests() -> usize {
    2
}
fn default_large_request_wait_ms() -> u64 {
    10_000
}
const MAX_DEDUP_WINDOW_SECONDS: u64 = 24 * 3600;

fn default_dedup_window() -> u64 {
    300
}
fn default_purge_interval() -> u64 {
    60
}
fn default_retention_interval() -> u64 {
    300_000
}
fn default_retention_batch() -> i64 {
    1000
}
fn default_series_retention() -> u64 {
    7
}
fn default_stats_interval() -> u64 {
    10_000
}
fn default_metrics_sample_interval() -> u64 {
    5000
}
fn default_metrics_retention_hours() -> u64 {
    24
}
fn default_metrics_top_queues() -> usize {
    100
}
fn default_true() -> bool {
    true
}
fn default_shutdown_grace() -> u64 {
    20
}
fn default_batch() -> i64 {
    1
}
fn default_timeout() -> u64 {
    30_000
}
fn default_max_connections() -> usize {
    10_000
}
fn default_header_timeout_ms() -> u64 {
    30_000
}
fn default_max_timeout() -> u64 {
    300_000
}
fn default_max_batch() -> i64 {
    10_000
}
fn default_autopilot_batch() -> i64 {
    100
}

fn default_jwt_algorithm() -> JwtAlgorithm {
    JwtAlgorithm::Hs256
}
fn default_clock_skew() -> u64 {
    30
}
fn default_cors_origins() -> String {
    "*".into()
}
fn default_skip_paths() -> String {
    "/health,/metrics/prometheus,/metrics,/".into()
}
fn default_jwks_timeout_ms() -> u64 {
    5000
}
fn default_jwks_refresh_interval() -> u64 {
    3600
}
fn default_roles_claim() -> String {
    "role".into()
}
fn default_roles_array_claim() -> String {
    "roles".into()
}
fn default_role_admin() -> String {
    "admin".into()
}
fn default_role_read_write() -> String {
    "read-write".into()
}
fn default_role_read_only() -> String {
    "read-only".into()
}
fn default_tenant_claim() -> String {
    "tenant".into()
}

/// `JWT_ALGORITHM`: how tokens are verified.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JwtAlgorithm {
    Hs256,
    Rs256,
    EdDSA,
    /// Each token by its own `alg` header.
    Auto,
}

impl JwtAlgorithm {
    /// The variable's spelling.
    pub fn name(self) -> &'static str {
        match self {
            JwtAlgorithm::Hs256 => "HS256",
            JwtAlgorithm::Rs256 => "RS256",
            JwtAlgorithm::EdDSA => "EdDSA",
            JwtAlgorithm::Auto => "auto",
        }
    }
}

impl std::str::FromStr for JwtAlgorithm {
    type Err = String;

    fn from_str(s: &str) -> Result<JwtAlgorithm, String> {
        [
            JwtAlgorithm::Hs256,
            JwtAlgorithm::Rs256,
            JwtAlgorithm::EdDSA,
            JwtAlgorithm::Auto,
        ]
        .into_iter()
        .find(|a| a.name() == s)
        .ok_or_else(|| {
            format!(
                "Invalid algorithm configuration: JWT_ALGORITHM={s} (HS256, RS256, EdDSA or auto)"
            )
        })
    }
}

impl<'de> Deserialize<'de> for JwtAlgorithm {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<JwtAlgorithm, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// Queen's switch: on only for the exact string `true`.
fn exactly_true<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(String::deserialize(d)? == "true")
}

#[derive(Clone, Debug, Deserialize)]
pub struct Config {
    pub database_url: Option<String>,
    pub pg_host: Option<String>,
    pub pg_port: Option<u16>,
    pub pg_user: Option<String>,
    pub pg_password: Option<String>,
    pub pg_db: Option<String>,
    /// Queen's switch: `true` connects with `sslmode=require`.
    #[serde(default)]
    pub pg_use_ssl: bool,
    /// Any `sslmode` (see `store::tls`); wins over `PG_USE_SSL`.
    pub pg_ssl_mode: Option<String>,
    /// The PEM file of the CA that signed the server's certificate (`sslrootcert`).
    pub pg_ssl_root_cert: Option<String>,
    #[serde(default = "default_host")]
    pub host: String,
    #[serde(default = "default_port")]
    pub port: u16,
    /// Connections served at once; the next waits in the listen backlog until one closes.
    #[serde(default = "default_max_connections")]
    pub http_max_connections: usize,
    /// A connection that has not sent a whole request header this long after it opened or
    /// after its last answer is closed: slow or half-sent headers, and idle keep-alives.
    #[serde(default = "default_header_timeout_ms")]
    pub http_header_timeout_ms: u64,
    #[serde(default = "default_pool_size")]
    pub db_pool_size: usize,
    /// Requests with a larger body are refused with 413.
    #[serde(default = "default_max_body_bytes")]
    pub max_body_bytes: usize,
    /// Pushes (and transaction bundles) with more items are refused with 413: each item costs
    /// the broker a few hundred bytes beyond its payload while the request is served, so the
    /// body limit alone would let a 16 MiB body of tiny items cost half a gigabyte.
    #[serde(default = "default_max_push_items")]
    pub max_push_items: usize,
    /// Requests with a large body (over 1 MiB, or of unknown length) served at once; the next
    /// waits its turn. Serving one costs several times its body, so this bounds what a burst
    /// of them can take.
    #[serde(default = "default_max_large_requests")]
    pub max_large_requests: usize,
    /// How long a large request waits for its turn before a 503 says when to retry.
    #[serde(default = "default_large_request_wait_ms")]
    pub large_request_wait_ms: u64,
    /// `DEDUP_WINDOW_SECONDS`: how long a transaction id deduplicates pushes, exactly, and
    /// resolves acks without a live lease (at most 24 h). `TX_INDEX_RETENTION_SECONDS`, its
    /// name before issue 35, is read too.
    #[serde(default = "default_dedup_window", alias = "tx_index_retention_seconds")]
    pub dedup_window_seconds: u64,
    #[serde(default = "default_purge_interval")]
    pub purge_interval_seconds: u64,
    /// Queen's `RETENTION_INTERVAL`: milliseconds between retention passes.
    #[serde(default = "default_retention_interval")]
    pub retention_interval: u64,
    /// Segments a retention transaction deletes at most, so that a purge of millions never
    /// holds its locks for long.
    #[serde(default = "default_retention_batch")]
    pub retention_batch_segments: i64,
    /// Treat `retentionSeconds > 0` / `completedRetentionSeconds > 0` as enabling retention
    /// when a queue never sent `retentionEnabled` (the Python client never does).
    #[serde(default)]
    pub implicit_retention: bool,
    /// Seconds a dead letter is kept after it was filed; 0 keeps it until it is deleted,
    /// requeued or its queue goes. Applied on the retention clock.
    #[serde(default)]
    pub dead_letter_retention_seconds: u64,
    /// Days the per-minute queue series is kept (the status and analytics routes read it).
    #[serde(default = "default_series_retention")]
    pub series_retention_days: u64,
    /// Milliseconds between two stats rounds (Queen's `STATS_INTERVAL_MS`): how stale the
    /// inspection routes' counts may be. One broker of the fleet runs each round.
    #[serde(default = "default_stats_interval")]
    pub stats_interval_ms: u64,
    /// Milliseconds between two samples this broker writes of itself (`broker_samples`, read
    /// by the fleet's system and worker metrics).
    #[serde(default = "default_metrics_sample_interval")]
    pub metrics_sample_interval: u64,
    /// Hours the fleet's samples are kept.
    #[serde(default = "default_metrics_retention_hours")]
    pub metrics_retention_hours: u64,
    /// The per-queue families on the public `/metrics/prometheus` too, naming every tenant's
    /// queues to anyone who can reach it; off, they are only on the admin route
    /// `/api/v1/metrics/queues`.
    #[serde(default)]
    pub metrics_per_queue: bool,
    /// Queues the per-queue families show by name at most, the deepest; the rest are summed
    /// into one `queue="_other"` series.
    #[serde(default = "default_metrics_top_queues")]
    pub metrics_top_queues: usize,
    /// Wake long-polls on the other brokers of the database after a push (one extra
    /// connection per broker; see `peers`). Off: a push through another broker is found at
    /// the parked pop's next timer recheck.
    #[serde(default = "default_true")]
    pub peer_wakeups: bool,
    /// How long a shutdown waits for in-flight requests before cutting them off with 503.
    /// Below Kubernetes' default termination grace (30 s) with room for a preStop pause.
    #[serde(default = "default_shutdown_grace")]
    pub shutdown_grace_seconds: u64,
    /// Queen's `DEFAULT_BATCH_SIZE`: messages per pop when the client names no batch.
    #[serde(default = "default_batch")]
    pub default_batch_size: i64,
    /// Queen's `DEFAULT_TIMEOUT`: the long-poll deadline in ms when the client names none.
    #[serde(default = "default_timeout")]
    pub default_timeout: u64,
    /// Longer long-poll `timeout`s (ms) are clamped to this: a pop parked for weeks holds a
    /// connection and a slot of the parked list for nothing any client is waiting on.
    #[serde(default = "default_max_timeout")]
    pub max_timeout: u64,
    /// Larger `batch` values are clamped to this.
    #[serde(default = "default_max_batch")]
    pub max_batch_size: i64,
    /// The batch chosen for `autopilot=true` pops that name no batch.
    #[serde(default = "default_autopilot_batch")]
    pub autopilot_batch_size: i64,
    /// Queen's `DEFAULT_SUBSCRIPTION_MODE` for named groups that send none.
    #[serde(default)]
    pub default_subscription_mode: String,
    /// 64 hex characters: the AES-256-GCM key for queues with `encryptionEnabled`.
    pub queen_encryption_key: Option<String>,
    /// PEM certificate (chain) and private key: with both, the port serves HTTPS only.
    pub tls_cert_file: Option<PathBuf>,
    pub tls_key_file: Option<PathBuf>,

    // JWT authentication, Queen's variables (spec appendix B.1); see `http::auth`.
    /// Only the exact string `true` turns authentication on (as in Queen: `1`, `yes` and
    /// `TRUE` leave it off).
    #[serde(default, deserialize_with = "exactly_true")]
    pub jwt_enabled: bool,
    /// Read when the config loads, whether or not authentication is on: a misspelt algorithm
    /// refuses to start, naming the variable.
    #[serde(default = "default_jwt_algorithm")]
    pub jwt_algorithm: JwtAlgorithm,
    /// The HS256 secret, used as raw bytes.
    pub jwt_secret: Option<String>,
    /// A PEM public key (RSA or Ed25519); takes precedence over JWKS.
    pub jwt_public_key: Option<String>,
    /// An `https://` JWKS endpoint for RS256/EdDSA/auto; see `http::jwks`.
    pub jwt_jwks_url: Option<String>,
    #[serde(default = "default_jwks_timeout_ms")]
    pub jwt_jwks_timeout_ms: u64,
    /// Seconds between JWKS refreshes (an unknown `kid` refetches sooner).
    #[serde(default = "default_jwks_refresh_interval")]
    pub jwt_jwks_refresh_interval: u64,
    /// A PEM file of CA certificates trusted for the JWKS fetch, next to the built-in roots
    /// (a private CA).
    pub jwt_jwks_ca_file: Option<String>,
    pub jwt_issuer: Option<String>,
    pub jwt_audience: Option<String>,
    /// Leeway in seconds for `exp`, `nbf` and `iat`.
    #[serde(default = "default_clock_skew")]
    pub jwt_clock_skew: u64,
    /// The origins browsers may call the API from: `*` (any, Queen's behaviour) or a
    /// comma-separated list of origins (`https://console.example.com`), see
    /// [`Config::cors_origins`].
    #[serde(default = "default_cors_origins")]
    pub cors_allowed_origins: String,
    /// Comma-separated paths let through without a token (an entry ending in `/`, longer than
    /// `/`, is a prefix).
    #[serde(default = "default_skip_paths")]
    pub jwt_skip_paths: String,
    #[serde(default = "default_roles_claim")]
    pub jwt_roles_claim: String,
    #[serde(default = "default_roles_array_claim")]
    pub jwt_roles_array_claim: String,
    #[serde(default = "default_role_admin")]
    pub jwt_role_admin: String,
    #[serde(default = "default_role_read_write")]
    pub jwt_role_read_write: String,
    #[serde(default = "default_role_read_only")]
    pub jwt_role_read_only: String,
    /// The claim naming a verified token's tenant.
    #[serde(default = "default_tenant_claim")]
    pub jwt_tenant_claim: String,
    /// The tenant of a verified token without the tenant claim; unset, such a token is refused.
    pub jwt_default_tenant: Option<String>,

    /// Per-tenant limits as JSON: `{"<tenant>" | "*": {"rate": r, "burst": b,
    /// "maxMessages": m, "concurrency": c}}`; see [`Config::tenant_limits`].
    pub tenant_limits: Option<String>,
}

/// The range of a tenant's `rate` and `burst`: below it a 429's `Retry-After` would name a
/// wait of more than eleven days (one request in a million seconds); above it, a rate no
/// broker serves (a billion requests a second).
pub const MIN_RATE: f64 = 1e-6;
pub const MAX_RATE: f64 = 1e9;

/// One tenant's entry in `TENANT_LIMITS`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct LimitSpec {
    rate: Option<f64>,
    burst: Option<f64>,
    max_messages: Option<i64>,
    concurrency: Option<u32>,
}

impl Config {
    /// `TENANT_LIMITS` read and checked: `*` is every tenant without its own entry.
    pub fn tenant_limits(&self) -> anyhow::Result<LimitTable> {
        let mut table = LimitTable::default();
        let Some(text) = self
            .tenant_limits
            .as_deref()
            .filter(|t| !t.trim().is_empty())
        else {
            return Ok(table);
        };
        let specs: std::collections::HashMap<String, LimitSpec> = serde_json::from_str(text)
            .map_err(|e| anyhow::anyhow!("TENANT_LIMITS is not valid: {e}"))?;
        for (tenant, s) in specs {
            let positive = |v: Option<f64>, what: &str| match v {
                Some(x) if !(x.is_finite() && x > 0.0) => {
                    anyhow::bail!("TENANT_LIMITS[{tenant}].{what} must be a positive number")
                }
                Some(x) if !(MIN_RATE..=MAX_RATE).contains(&x) => {
                    anyhow::bail!(
                        "TENANT_LIMITS[{tenant}].{what} must be between {MIN_RATE} and {MAX_RATE}"
                    )
                }
                _ => Ok(()),
            };
            positive(s.rate, "rate")?;
            positive(s.burst, "burst")?;
            if s.max_messages.is_some_and(|m| m < 0) {
                anyhow::bail!("TENANT_LIMITS[{tenant}].maxMessages must not be negative");
            }
            if s.concurrency == Some(0) {
                anyhow::bail!("TENANT_LIMITS[{tenant}].concurrency must be at least 1");
            }
            let limits = Limits {
                rate: s.rate,
                burst: s.burst,
                max_messages: s.max_messages,
                concurrency: s.concurrency,
            };
            if tenant == "*" {
                table.default = Some(limits);
            } else {
                table.tenants.insert(tenant, limits);
            }
        }
        Ok(table)
    }

    pub fn from_env() -> anyhow::Result<Config> {
        Ok(envy::from_env::<Config>()?)
    }

    /// Defaults only, as if the environment were empty: the test harness starts from this.
    pub fn defaults() -> Config {
        envy::from_iter::<_, Config>(std::iter::empty::<(String, String)>())
            .expect("defaults deserialize")
    }

    /// The deduplication window, refused past 24 h: the index would grow without the bound
    /// the window exists for.
    pub fn dedup_window(&self) -> anyhow::Result<Duration> {
        if self.dedup_window_seconds > MAX_DEDUP_WINDOW_SECONDS {
            bail!(
                "DEDUP_WINDOW_SECONDS is {}: at most {MAX_DEDUP_WINDOW_SECONDS} (24 h)",
                self.dedup_window_seconds
            );
        }
        Ok(Duration::from_secs(self.dedup_window_seconds))
    }

    /// `CORS_ALLOWED_ORIGINS` read: `None` lets any origin call (an entry `*`), else the
    /// listed origins. An entry that is not an origin (`scheme://host[:port]`, no path) is
    /// refused at start: a typo would otherwise lock the console out without a word.
    pub fn cors_origins(&self) -> anyhow::Result<Option<Vec<String>>> {
        let entries: Vec<&str> = self
            .cors_allowed_origins
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .collect();
        if entries.is_empty() {
            bail!("CORS_ALLOWED_ORIGINS is empty: `*` for any origin, or a comma-separated list");
        }
        if entries.contains(&"*") {
            return Ok(None);
        }
        for e in &entries {
            let host = e.split_once("://").map(|(_, h)| h).unwrap_or_default();
            let printable = e.bytes().all(|b| b.is_ascii_graphic());
            if host.is_empty() || host.contains('/') || !printable {
                bail!(
                    "CORS_ALLOWED_ORIGINS: `{e}` is not an origin (scheme://host[:port], \
                     without a path), nor `*`"
                );
            }
        }
        Ok(Some(entries.into_iter().map(str::to_string).collect()))
    }

    /// True when the environment names a database; `regent dev` starts a private one otherwise.
    pub fn database_configured(&self) -> bool {
        self.database_url.is_some() || self.pg_host.is_some() || self.pg_db.is_some()
    }

    /// The certificate and key to serve HTTPS with, or `None` for plain HTTP. Half a pair is
    /// refused: serving plain HTTP when TLS was meant would be the silent kind of failure.
    pub fn tls_files(&self) -> anyhow::Result<Option<(&Path, &Path)>> {
        match (set(&self.tls_cert_file), set(&self.tls_key_file)) {
            (Some(cert), Some(key)) => Ok(Some((cert, key))),
            (None, None) => Ok(None),
            (Some(_), None) => bail!(
                "TLS_CERT_FILE is set but TLS_KEY_FILE is not: set both to serve HTTPS, \
                 or neither to serve plain HTTP"
            ),
            (None, Some(_)) => bail!(
                "TLS_KEY_FILE is set but TLS_CERT_FILE is not: set both to serve HTTPS, \
                 or neither to serve plain HTTP"
            ),
        }
    }

    /// The database to use: `DATABASE_URL`, else a URL built from Queen's `PG_*` variables with
    /// Queen's defaults (localhost:5432, user and database `postgres`).
    pub fn database_url(&self) -> String {
        if let Some(url) = &self.database_url {
            return url.clone();
        }
        let user = self.pg_user.as_deref().unwrap_or("postgres");
        let auth = match &self.pg_password {
            Some(p) => format!("{}:{}", enc(user), enc(p)),
            None => enc(user),
        };
        let mut url = format!(
            "postgres://{}@{}:{}/{}",
            auth,
            self.pg_host.as_deref().unwrap_or("localhost"),
            self.pg_port.unwrap_or(5432),
            enc(self.pg_db.as_deref().unwrap_or("postgres"))
        );
        let mode = match &self.pg_ssl_mode {
            Some(mode) => Some(mode.as_str()),
            None if self.pg_use_ssl => Some("require"),
            None => None,
        };
        let params: Vec<String> = [
            ("sslmode", mode),
            ("sslrootcert", self.pg_ssl_root_cert.as_deref()),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| format!("{k}={}", enc(v))))
        .collect();
        if !params.is_empty() {
            url = format!("{url}?{}", params.join("&"));
        }
        url
    }
}

/// An empty variable counts as unset, as manifests often leave them.
fn set(path: &Option<PathBuf>) -> Option<&Path> {
    path.as_deref().filter(|p| !p.as_os_str().is_empty())
}

/// Percent-encodes a URL component, so a password with `@` or `/` survives.
fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(text: &str) -> anyhow::Result<LimitTable> {
        let c: Config =
            envy::from_iter(vec![("TENANT_LIMITS".to_string(), text.to_string())]).unwrap();
        c.tenant_limits()
    }

    #[test]
    fn tenant_limits_are_checked_at_start_up() {
        let t =
            limits(r#"{"*": {"rate": 5}, "acme": {"rate": 100, "burst": 200, "maxMessages": 10}}"#)
                .unwrap();
        assert_eq!(t.of("other").unwrap().rate, Some(5.0));
        assert_eq!(t.of("acme").unwrap().max_messages, Some(10));
        assert_eq!(t.of("acme").unwrap().concurrency, None);
        let t =
            limits(r#"{"*": {"rate": 1e-6, "burst": 1e9, "maxMessages": 9223372036854775807}}"#)
                .unwrap();
        assert_eq!(t.of("any").unwrap().max_messages, Some(i64::MAX));
        let t = limits(r#"{"*": {"concurrency": 2}}"#).unwrap();
        assert_eq!(t.of("any").unwrap().concurrency, Some(2));
        assert!(limits("").unwrap().is_empty());
        for bad in [
            "[1]",
            r#"{"acme": {"rate": 0}}"#,
            r#"{"acme": {"rate": -1}}"#,
            r#"{"acme": {"burst": 0}}"#,
            r#"{"acme": {"maxMessages": -1}}"#,
            r#"{"acme": {"rps": 1}}"#,
            r#"{"acme": {"concurrency": 0}}"#,
            r#"{"acme": {"concurrency": -1}}"#,
            r#"{"acme": {"concurrency": 1.5}}"#,
            r#"{"acme": {"rate": 1e-300}}"#,
            r#"{"acme": {"rate": 1e30}}"#,
            r#"{"acme": {"burst": 1e400}}"#,
            r#"{"acme": {"burst": "NaN"}}"#,
            r#"{"acme": {"maxMessages": 9223372036854775808}}"#,
            r#"{"acme": {"concurrency": 4294967296}}"#,
        ] {
            assert!(limits(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn queen_variables_build_a_url() {
        let c: Config = envy::from_iter(vec![
            ("PG_HOST".to_string(), "db".to_string()),
            ("PG_PASSWORD".to_string(), "p@ss/w".to_string()),
            ("PG_DB".to_string(), "queen".to_string()),
        ])
        .unwrap();
        assert!(c.database_configured());
        assert_eq!(
            c.database_url(),
            "postgres://postgres:p%40ss%2Fw@db:5432/queen"
        );
        assert_eq!(c.port, 6632);
    }

    #[test]
    fn database_url_wins() {
        let c: Config = envy::from_iter(vec![
            ("DATABASE_URL".to_string(), "postgres://x@y/z".to_string()),
            ("PG_HOST".to_string(), "db".to_string()),
        ])
        .unwrap();
        assert_eq!(c.database_url(), "postgres://x@y/z");
        assert!(!Config::defaults().database_configured());
    }

    #[test]
    fn queen_ssl_variables_reach_the_url() {
        let url = |vars: &[(&str, &str)]| with(vars).database_url();
        assert_eq!(
            url(&[("PG_HOST", "db")]),
            "postgres://postgres@db:5432/postgres"
        );
        assert_eq!(
            url(&[("PG_HOST", "db"), ("PG_USE_SSL", "true")]),
            "postgres://postgres@db:5432/postgres?sslmode=require"
        );
        assert_eq!(
            url(&[
                ("PG_USE_SSL", "true"),
                ("PG_SSL_MODE", "verify-full"),
                ("PG_SSL_ROOT_CERT", "/etc/ca.pem")
            ]),
            "postgres://postgres@localhost:5432/postgres?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem"
        );
        // A typo must not quietly mean "no TLS".
        let e = envy::from_iter::<_, Config>(vec![("PG_USE_SSL".to_string(), "yes".to_string())])
            .unwrap_err()
            .to_string();
        assert!(e.contains("PG_USE_SSL"), "{e}");
    }

    #[test]
    fn the_jwt_switch_and_algorithm_are_read_when_the_config_loads() {
        assert!(!with(&[]).jwt_enabled);
        assert_eq!(with(&[]).jwt_algorithm, JwtAlgorithm::Hs256);
        assert!(with(&[("JWT_ENABLED", "true")]).jwt_enabled);
        for off in ["TRUE", "1", "yes", ""] {
            assert!(!with(&[("JWT_ENABLED", off)]).jwt_enabled, "{off}");
        }
        assert_eq!(
            with(&[("JWT_ALGORITHM", "auto")]).jwt_algorithm,
            JwtAlgorithm::Auto
        );
        let e =
            envy::from_iter::<_, Config>(vec![("JWT_ALGORITHM".to_string(), "HS512".to_string())])
                .unwrap_err()
                .to_string();
        assert!(
            e.contains("JWT_ALGORITHM=HS512") && e.contains("EdDSA"),
            "{e}"
        );
    }

    fn with(vars: &[(&str, &str)]) -> Config {
        envy::from_iter(vars.iter().map(|(k, v)| (k.to_string(), v.to_string()))).unwrap()
    }

    #[test]
    fn tls_needs_both_files_or_neither() {
        assert!(Config::defaults().tls_files().unwrap().is_none());
        let cors = |v: &str| {
            let mut c = Config::defaults();
            c.cors_allowed_origins = v.into();
            c.cors_origins()
        };
        assert_eq!(Config::defaults().cors_origins().unwrap(), None);
        assert_eq!(cors("https://a.example, *").unwrap(), None);
        assert_eq!(
            cors(" https://a.example , http://b.example:8080,").unwrap(),
            Some(vec![
                "https://a.example".into(),
                "http://b.example:8080".into()
            ])
        );
        for bad in [
            "",
            " , ",
            "a.example",
            "https://a.example/console",
            "https://",
        ] {
            assert!(cors(bad).is_err(), "{bad:?}");
        }
        let both = with(&[("TLS_CERT_FILE", "/c.pem"), ("TLS_KEY_FILE", "/k.pem")]);
        let (cert, key) = both.tls_files().unwrap().unwrap();
        assert_eq!((cert, key), (Path::new("/c.pem"), Path::new("/k.pem")));

        let e = with(&[("TLS_CERT_FILE", "/c.pem")])
            .tls_files()
            .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("TLS_CERT_FILE is set but TLS_KEY_FILE is not"),
            "{e}"
        );
        let e = with(&[("TLS_KEY_FILE", "/k.pem"), ("TLS_CERT_FILE", "")])
            .tls_files()
            .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("TLS_KEY_FILE is set but TLS_CERT_FILE is not"),
            "{e}"
        );
        // Empty values, as manifests often leave them, mean unset.
        let empty = with(&[("TLS_CERT_FILE", ""), ("TLS_KEY_FILE", "")]);
        assert!(empty.tls_files().unwrap().is_none());
    }

    #[test]
    fn the_dedup_window_is_five_minutes_by_default_and_at_most_a_day() {
        let window = |vars: &[(&str, &str)]| with(vars).dedup_window();
        assert_eq!(window(&[]).unwrap(), Duration::from_secs(300));
        let day = [("DEDUP_WINDOW_SECONDS", "86400")];
        assert_eq!(window(&day).unwrap(), Duration::from_secs(86_400));
        let err = window(&[("DEDUP_WINDOW_SECONDS", "86401")]).unwrap_err();
        assert!(err.to_string().contains("at most 86400"), "{err}");
        // The name it had before is still read.
        let old = [("TX_INDEX_RETENTION_SECONDS", "600")];
        assert_eq!(window(&old).unwrap(), Duration::from_secs(600));
    }
}
