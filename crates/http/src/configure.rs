//! `POST /api/v1/configure`: create a queue or replace its whole configuration.

use axum::extract::State as AxState;
use axum::http::Method;
use axum::Extension;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use uuid::Uuid;

use super::answer::{Answer, Millis, True};
use super::auth::Principal;
use super::body::RawBody;
use super::error::ApiError;
use super::openapi::{schemas, Doc};
use super::push::MAX_NAME_BYTES;
use super::read;
use super::resources;
use super::routes::{route, Entry, Level::ReadWrite};
use super::State;
use regent_rules::bounds::{within, OPTION_MAX, OPTION_MIN};
use regent_rules::options::{QueueOptions, BOOL_DEFAULTS, DLQ_FLAGS, INT_DEFAULTS};
use regent_service::queues::Configure;

/// The configure body, read.
pub(crate) struct ConfigureBody {
    pub queue: String,
    pub namespace: String,
    pub task: String,
    pub options: QueueOptions,
}

/// `POST /api/v1/configure`'s body: the queue and its options.
#[derive(Deserialize, JsonSchema, Default)]
#[schemars(rename = "QueueConfigure")]
struct Fields {
    /// The queue; `""` is a name like any other (as in Queen 0.15).
    #[schemars(with = "String", length(max = MAX_NAME_BYTES))]
    queue: Option<Value>,
    /// A non-string (null included) is stored as `""`.
    #[schemars(with = "Option<String>")]
    namespace: Option<Value>,
    /// As `namespace`.
    #[schemars(with = "Option<String>")]
    task: Option<Value>,
    #[serde(default)]
    #[schemars(with = "OptionsIn")]
    options: Option<Value>,
}

pub(crate) fn parse_configure(body: &RawBody) -> Result<ConfigureBody, ApiError> {
    let v = body.json()?;
    // A body that is not an object names no queue (Queen's text), not a shape error.
    let f: Fields = match v {
        Value::Object(_) => read::fields(&v)?,
        _ => Fields::default(),
    };
    // An empty name is a name, as in Queen 0.15 (a push may name it too).
    let queue = match &f.queue {
        Some(Value::String(q)) => super::push::name("queue", q)?,
        _ => return Err(ApiError::bad_request("queue is required")),
    };
    let text = |v: &Option<Value>| read::lenient(v.as_ref()).unwrap_or("").to_string();
    let options = match &f.options {
        None | Some(Value::Null) => QueueOptions::default(),
        Some(o @ Value::Object(_)) => parse_options(read::fields(o)?)?,
        Some(_) => return Err(ApiError::bad_request("options must be an object")),
    };
    Ok(ConfigureBody {
        queue,
        namespace: text(&f.namespace),
        task: text(&f.task),
        options,
    })
}

pub(crate) fn routes() -> Vec<Entry> {
    vec![route(Method::POST, "/api/v1/configure", ReadWrite, configure)
        .doc(Doc::op(resources::TAG, "Create a queue or replace its configuration")
            .body_of::<Fields>(true, "The queue and its options.")
            .fails(400, "`queue is required` (missing or not a string); `options must be an object`; `<option> must be an integer` / `must be a boolean` / `must not be negative` / `must be between <min> and 2147483647` (Queen keeps each in an `INTEGER` column); `queue must be at most 512 bytes`; encryption asked without a key; `Empty request body`, `Invalid JSON: …`.")
            .answers::<Configured>(200, "The queue as configured."))
        .reads_body(
            &[
                r#"{"queue": "orders", "namespace": "billing", "task": "invoice",
                    "options": {"leaseTime": 300, "retryLimit": 3, "retryDelay": 1000, "maxSize": 0,
                    "ttl": 3600, "deadLetterQueue": true, "dlqAfterMaxRetries": false, "priority": 0,
                    "delayedProcessing": 0, "windowBuffer": 0, "retentionSeconds": 0,
                    "completedRetentionSeconds": 0, "retentionEnabled": false, "encryptionEnabled": false,
                    "maxWaitTimeSeconds": 0}}"#,
                r#"{"queue": "q", "namespace": null, "options": {"leaseTime": "300", "deadLetterQueue": "true"}}"#,
                r#"{"queue": ""}"#,
            ],
            parse_configure,
        )]
}

/// The queue as configured.
#[derive(Serialize, JsonSchema)]
struct Configured {
    configured: True,
    #[serde(rename = "queueId")]
    queue_id: Uuid,
    /// The `Default` partition, created if missing.
    #[serde(rename = "partitionId")]
    partition_id: Uuid,
    queue: String,
    namespace: String,
    task: String,
    #[serde(rename = "createdAt")]
    created_at: Millis,
    options: OptionsEcho,
}

/// Every option with its effective value; the dead-letter flags as stored, `null` meaning
/// "never set", so the tri-state that decides dead-lettering is visible. Built from the
/// broker's option constants, as its schema is (`schemas::options_echo`).
#[derive(Serialize)]
#[serde(transparent)]
pub(crate) struct OptionsEcho(Map<String, Value>);

/// The schema of an options type, named `$name`, built by `$build` from the option
/// constants: the options read and echoed are listed once, in `regent_rules::options`.
macro_rules! options_schema {
    ($type:ty, $name:literal, $build:path) => {
        impl JsonSchema for $type {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                $name.into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                $build()
                    .try_into()
                    .expect("the options' schema is an object")
            }
        }
    };
}

options_schema!(OptionsEcho, "QueueOptions", schemas::options_echo);
options_schema!(OptionsIn, "QueueOptionsIn", schemas::options_in);

async fn configure(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    body: RawBody,
) -> Result<Answer<Configured>, ApiError> {
    let c = parse_configure(&body)?;
    let configure = Configure {
        name: &c.queue,
        namespace: &c.namespace,
        task: &c.task,
        options: &c.options,
    };
    let (q, default_partition) = s
        .service
        .queues()
        .configure(&who.tenant, &configure)
        .await?;
    let row = q.row;
    Ok(Answer(Configured {
        configured: True,
        queue_id: row.id,
        partition_id: default_partition,
        queue: row.name,
        namespace: row.namespace,
        task: row.task,
        created_at: Millis(row.created_at),
        options: OptionsEcho::of(&q.options),
    }))
}

/// The options that may not be negative (each with its own text, as before the bounds).
const NON_NEGATIVE: [&str; 4] = [
    "leaseTime",
    "retryLimit",
    "delayedProcessing",
    "windowBuffer",
];

/// An integer option within its range: Queen keeps each in an `INTEGER` column.
fn bounded(k: &str, n: i64) -> Result<i64, ApiError> {
    let min = match NON_NEGATIVE.contains(&k) {
        true if n < 0 => return Err(ApiError::bad_request(format!("{k} must not be negative"))),
        true => 0,
        false => OPTION_MIN,
    };
    within(k, n, min, OPTION_MAX).map_err(|e| ApiError::bad_request(e.to_string()))
}

/// The options a configure reads, one field each; any other key is ignored, as Queen ignores
/// it. Its schema is built from the option constants the echo's is built from
/// (`schemas::options_in`); a test holds the two lists to each other.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OptionsIn {
    lease_time: Option<Value>,
    retry_limit: Option<Value>,
    retry_delay: Option<Value>,
    max_size: Option<Value>,
    ttl: Option<Value>,
    dead_letter_queue: Option<Value>,
    dlq_after_max_retries: Option<Value>,
    priority: Option<Value>,
    delayed_processing: Option<Value>,
    window_buffer: Option<Value>,
    retention_seconds: Option<Value>,
    completed_retention_seconds: Option<Value>,
    retention_enabled: Option<Value>,
    encryption_enabled: Option<Value>,
    max_wait_time_seconds: Option<Value>,
}

/// Integers may come as JSON numbers or numeric strings (Queen casts through text); `null`
/// is the same as absent. Anything else is the client's mistake, and so is an integer past
/// its range ([`bounded`]).
fn parse_options(o: OptionsIn) -> Result<QueueOptions, ApiError> {
    let int = |v: Option<Value>, k: &str| -> Result<Option<i64>, ApiError> {
        let n = match v {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Number(n)) => n
                .as_i64()
                .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
                .ok_or_else(|| ApiError::bad_request(format!("{k} must be an integer")))?,
            Some(Value::String(s)) => s
                .trim()
                .parse()
                .map_err(|_| ApiError::bad_request(format!("{k} must be an integer")))?,
            Some(_) => return Err(ApiError::bad_request(format!("{k} must be an integer"))),
        };
        bounded(k, n).map(Some)
    };
    let flag = |v: Option<Value>, k: &str| -> Result<Option<bool>, ApiError> {
        match v {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(b)),
            Some(Value::String(s)) if s == "true" => Ok(Some(true)),
            Some(Value::String(s)) if s == "false" => Ok(Some(false)),
            Some(_) => Err(ApiError::bad_request(format!("{k} must be a boolean"))),
        }
    };
    Ok(QueueOptions {
        lease_time: int(o.lease_time, "leaseTime")?,
        retry_limit: int(o.retry_limit, "retryLimit")?,
        retry_delay: int(o.retry_delay, "retryDelay")?,
        max_size: int(o.max_size, "maxSize")?,
        ttl: int(o.ttl, "ttl")?,
        dead_letter_queue: flag(o.dead_letter_queue, "deadLetterQueue")?,
        dlq_after_max_retries: flag(o.dlq_after_max_retries, "dlqAfterMaxRetries")?,
        priority: int(o.priority, "priority")?,
        delayed_processing: int(o.delayed_processing, "delayedProcessing")?,
        window_buffer: int(o.window_buffer, "windowBuffer")?,
        retention_seconds: int(o.retention_seconds, "retentionSeconds")?,
        completed_retention_seconds: int(
            o.completed_retention_seconds,
            "completedRetentionSeconds",
        )?,
        retention_enabled: flag(o.retention_enabled, "retentionEnabled")?,
        encryption_enabled: flag(o.encryption_enabled, "encryptionEnabled")?,
        max_wait_time_seconds: int(o.max_wait_time_seconds, "maxWaitTimeSeconds")?,
    })
}

impl OptionsEcho {
    pub(crate) fn of(o: &QueueOptions) -> OptionsEcho {
        let stored = serde_json::to_value(o).expect("options serialize");
        let mut out = Map::new();
        for (k, d) in INT_DEFAULTS {
            out.insert(k.into(), stored.get(k).cloned().unwrap_or(json!(d)));
        }
        for k in DLQ_FLAGS {
            out.insert(k.into(), stored.get(k).cloned().unwrap_or(Value::Null));
        }
        for k in BOOL_DEFAULTS {
            out.insert(k.into(), stored.get(k).cloned().unwrap_or(json!(false)));
        }
        OptionsEcho(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configure_reads_every_option_the_constants_name() {
        let mut read = read::names::<OptionsIn>().to_vec();
        let mut named: Vec<&str> = INT_DEFAULTS.iter().map(|(k, _)| *k).collect();
        named.extend(DLQ_FLAGS.iter().chain(BOOL_DEFAULTS.iter()));
        read.sort_unstable();
        named.sort_unstable();
        assert_eq!(read, named);
    }
}
