//! `POST /api/v1/kv`: Queen's key/value surface (spec §18.1; the client's `queen/kv`). The
//! operations apply in order in ONE transaction (`regent_service::kv`); the answer's
//! `results` are index-aligned with them. The same operation objects ride in the transaction
//! route's `kv` array (`crate::transaction`), read by [`parse_ops`] and answered by
//! [`KvResult`] there too. Refusals carry a machine `code` beside the `error` text, which the
//! client reads as its error's code.

use axum::extract::State as AxState;
use axum::http::{Method, StatusCode};
use axum::Extension;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use regent_rules::bounds::{within, MAX_SPAN_SECONDS};
use regent_rules::kv::{MAX_KEY_BYTES, MAX_MANY_KEYS, MAX_NS_BYTES, MAX_OPS, MAX_VALUE_BYTES};
use regent_service::kv::{Expiry, KvFailed, KvOp, KvOutcome, KvRow, KvWrite, Num, WriteVerdict};

use super::answer::{Answer, Millis, True};
use super::auth::Principal;
use super::body::RawBody;
use super::error::ApiError;
use super::openapi::{Doc, Tag};
use super::read;
use super::routes::{route, Entry, Level::*};
use super::State;

const TAG: Tag = (
    "kv",
    "Key/value: versioned rows with expiry, read and written in one transaction, alone or with a bundle's acks and pushes.",
);

pub(crate) fn routes() -> Vec<Entry> {
    vec![route(Method::POST, "/api/v1/kv", ReadWrite, kv)
        .doc(Doc::op(TAG, "Key/value operations")
            .body_of::<KvRequest>(true, "The operations.")
            .fails(400, "`{\"error\": <text>, \"code\": <code>}` with code `kv_invalid` (a field missing or of the wrong type, an unknown `op`, a key or namespace too long), `kv_expiry_not_specified`, `kv_prefix_required`; `Empty request body`, `Invalid JSON: …`.")
            .fails(413, "More than 1,000 operations, or a value over 1 MiB (`code: kv_too_large`).")
            .answers::<KvAnswer>(200, "One result per operation.")
            .answers::<PreconditionAnswer>(409, "A `required` operation did not apply; nothing was written."))
        .reads_body(
            &[r#"{"operations": [
                {"op": "put", "ns": "quota", "key": "acme", "value": {"n": 1}, "ttlSeconds": 60, "expect": 0},
                {"op": "incr", "ns": "quota", "key": "hits", "delta": 1, "max": 10, "forever": true, "required": true},
                {"op": "getPrefix", "ns": "quota", "prefix": "ac", "after": "a", "limit": 5, "keysOnly": true},
                {"op": "getMany", "ns": "quota", "keys": ["acme", "x"]},
                {"op": "delete", "ns": "quota", "key": "acme", "expect": 2}]}"#],
            |b| b.raw_json().and_then(|r| operations(r).map(drop)),
        )]
}

/// A refusal of a KV request: 400 (or 413) with a machine code.
fn invalid(code: &'static str, text: impl Into<String>) -> ApiError {
    ApiError::Coded {
        status: StatusCode::BAD_REQUEST,
        code,
        text: text.into(),
    }
}

fn bad(text: impl Into<String>) -> ApiError {
    invalid("kv_invalid", text)
}

// Each operation is read by `parse_ops`.
/// The operations, applied in order in one transaction.
#[derive(Deserialize, JsonSchema)]
struct KvRequest<'a> {
    #[serde(borrow)]
    #[schemars(with = "Vec<Fields>")]
    operations: Option<&'a RawValue>,
}

/// The request's operations.
fn operations(body: &RawValue) -> Result<Vec<KvOp>, ApiError> {
    let b: KvRequest<'_> =
        serde_json::from_str(body.get()).map_err(|_| bad(read::NOT_AN_OBJECT))?;
    let Some(raw) = b.operations else {
        return Err(bad("operations array required"));
    };
    parse_ops(raw, true)
}

/// A list of operations (`prefix_allowed`: `getPrefix` may be among them, which a
/// transaction's rider refuses: its cost is not bounded by the caller).
pub(crate) fn parse_ops(raw: &RawValue, prefix_allowed: bool) -> Result<Vec<KvOp>, ApiError> {
    let ops: Vec<&RawValue> =
        serde_json::from_str(raw.get()).map_err(|_| bad("operations must be an array"))?;
    if ops.len() > MAX_OPS {
        return Err(ApiError::Coded {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            code: "kv_too_large",
            text: format!(
                "A request of {} operations is over the limit of {MAX_OPS}",
                ops.len()
            ),
        });
    }
    ops.iter()
        .enumerate()
        .map(|(i, op)| parse_op(i, op, prefix_allowed))
        .collect()
}

// The value is kept as the client's text, the rest read as small trees.
/// One key/value operation: `op` names it, and it reads the fields its name needs.
#[derive(Deserialize, JsonSchema)]
#[schemars(rename = "KvOperation")]
pub(crate) struct Fields<'a> {
    #[schemars(with = "String")]
    #[schemars(extend("enum" = ["get", "getMany", "getPrefix", "put", "putIfAbsent", "delete", "incr"]))]
    op: Option<Value>,
    /// The namespace, at most 256 bytes.
    #[schemars(with = "String")]
    ns: Option<Value>,
    /// At most 1,024 bytes.
    #[schemars(with = "String", default)]
    key: Option<Value>,
    #[schemars(with = "Vec<String>", default)]
    keys: Option<Value>,
    #[schemars(with = "String", default)]
    prefix: Option<Value>,
    #[schemars(with = "String", default)]
    after: Option<Value>,
    #[schemars(with = "i64", default)]
    limit: Option<Value>,
    #[serde(rename = "keysOnly")]
    #[schemars(with = "bool", default)]
    keys_only: Option<Value>,
    /// Any JSON, at most 1 MiB as text.
    #[serde(borrow, default, deserialize_with = "present")]
    #[schemars(with = "Value")]
    value: Option<&'a RawValue>,
    #[serde(rename = "ttlSeconds")]
    #[schemars(with = "i64", default, range(min = 1, max = MAX_SPAN_SECONDS))]
    ttl_seconds: Option<Value>,
    #[schemars(with = "bool", default, extend("const" = true))]
    forever: Option<Value>,
    #[schemars(with = "i64", default, range(min = 0))]
    expect: Option<Value>,
    #[schemars(with = "bool", default)]
    required: Option<Value>,
    #[schemars(with = "serde_json::Number", default = "one")]
    delta: Option<Value>,
    #[schemars(with = "serde_json::Number", default)]
    min: Option<Value>,
    #[schemars(with = "serde_json::Number", default)]
    max: Option<Value>,
}

/// `delta`'s default, for the schema.
fn one() -> Option<Value> {
    Some(Value::from(1))
}

/// A field that is there, even as `null` (which serde's `Option` reads as absent).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

fn parse_op(i: usize, raw: &RawValue, prefix_allowed: bool) -> Result<KvOp, ApiError> {
    let f: Fields<'_> = serde_json::from_str(raw.get())
        .map_err(|_| bad(format!("operations[{i}] must be an object")))?;
    let at = At(i);
    let op = match &f.op {
        Some(Value::String(s)) => s.as_str(),
        _ => return Err(bad(format!("{} is required", at.of("op")))),
    };
    let ns = text(&f.ns, &at.of("ns"), MAX_NS_BYTES)?;
    match op {
        "get" => Ok(KvOp::Get {
            key: key(&f, at)?,
            ns,
        }),
        "getMany" => Ok(KvOp::GetMany {
            keys: keys(&f.keys, &at.of("keys"))?,
            ns,
        }),
        "getPrefix" if !prefix_allowed => Err(bad(format!(
            "{}: getPrefix is not allowed inside a transaction (its cost is not bounded by the caller); use POST /api/v1/kv",
            at.of("op")
        ))),
        "getPrefix" => get_prefix(&f, ns, at),
        // Each field checked in the order the texts have always come in: value, expiry,
        // expect, then the key.
        "put" | "putIfAbsent" => {
            let value = value(f.value, &at.of("value"))?;
            let expiry = expiry(&f, &at.of(""))?;
            let expect = expect(&f.expect, &at.of("expect"))?;
            if op == "put" {
                return write(&f, ns, at, KvWrite::Put { value, expiry, expect });
            }
            if expect.is_some_and(|e| e != 0) {
                return Err(bad(format!(
                    "{} cannot be given to putIfAbsent (it means expect: 0)",
                    at.of("expect")
                )));
            }
            write(&f, ns, at, KvWrite::PutIfAbsent { value, expiry })
        }
        "delete" => {
            let expect = expect(&f.expect, &at.of("expect"))?;
            write(&f, ns, at, KvWrite::Delete { expect })
        }
        "incr" => {
            let incr = incr(&f, at)?;
            write(&f, ns, at, incr)
        }
        other => Err(bad(format!(
            "{}: unknown operation {other:?} (get, getMany, getPrefix, put, putIfAbsent, delete, incr)",
            at.of("op")
        ))),
    }
}

/// Where an operation's fields are, for the errors' texts: `operations[i].<field>`.
#[derive(Clone, Copy)]
struct At(usize);

impl At {
    fn of(self, field: &str) -> String {
        format!("operations[{}].{field}", self.0)
    }
}

fn key(f: &Fields<'_>, at: At) -> Result<String, ApiError> {
    text(&f.key, &at.of("key"), MAX_KEY_BYTES)
}

/// A write of one key, with its `required` flag.
fn write(f: &Fields<'_>, ns: String, at: At, write: KvWrite<String>) -> Result<KvOp, ApiError> {
    Ok(KvOp::Write {
        ns,
        key: key(f, at)?,
        write,
        required: flag(&f.required, &at.of("required"))?,
    })
}

/// `getPrefix`: a non-empty prefix (a namespace is not a table to enumerate), where to start
/// after, how many, keys only or with values.
fn get_prefix(f: &Fields<'_>, ns: String, at: At) -> Result<KvOp, ApiError> {
    let prefix = match &f.prefix {
        Some(Value::String(p)) if !p.is_empty() => {
            text(&f.prefix, &at.of("prefix"), MAX_KEY_BYTES)?
        }
        _ => {
            return Err(invalid(
                "kv_prefix_required",
                format!(
                    "{} must be a non-empty string: a namespace is not a table to enumerate",
                    at.of("prefix")
                ),
            ))
        }
    };
    Ok(KvOp::GetPrefix {
        ns,
        prefix,
        after: match &f.after {
            None | Some(Value::Null) => None,
            Some(_) => Some(text(&f.after, &at.of("after"), MAX_KEY_BYTES)?),
        },
        limit: read::integer(f.limit.as_ref(), &at.of("limit")).map_err(coded)?,
        keys_only: flag(&f.keys_only, &at.of("keysOnly"))?,
    })
}

/// `incr`: a delta (1 by default) within optional bounds; never with `expect` (incr is the
/// way out of the compare-and-set loop).
fn incr(f: &Fields<'_>, at: At) -> Result<KvWrite<String>, ApiError> {
    if f.expect.as_ref().is_some_and(|v| !v.is_null()) {
        return Err(bad(format!(
            "{} cannot be given to incr: incr is the way out of the compare-and-set loop",
            at.of("expect")
        )));
    }
    Ok(KvWrite::Incr {
        delta: match &f.delta {
            None | Some(Value::Null) => Num::Int(1),
            Some(v) => number(v, &at.of("delta"))?,
        },
        min: bound(&f.min, &at.of("min"))?,
        max: bound(&f.max, &at.of("max"))?,
        expiry: expiry(f, &at.of(""))?,
    })
}

/// A required string of at most `max` bytes, without NUL (PostgreSQL text cannot hold one).
fn text(v: &Option<Value>, field: &str, max: usize) -> Result<String, ApiError> {
    let s = read::required(v.as_ref(), field).map_err(coded)?;
    read::short(field, s, max)
        .map(str::to_string)
        .map_err(coded)
}

/// The reading layer's refusal, with the family's code.
fn coded(e: ApiError) -> ApiError {
    match e {
        ApiError::BadRequest(text) => bad(text),
        other => other,
    }
}

fn keys(v: &Option<Value>, field: &str) -> Result<Vec<String>, ApiError> {
    let Some(Value::Array(list)) = v else {
        return Err(bad(format!("{field} must be an array of strings")));
    };
    if list.is_empty() || list.len() > MAX_MANY_KEYS {
        return Err(bad(format!("{field} must hold 1 to {MAX_MANY_KEYS} keys")));
    }
    list.iter()
        .enumerate()
        .map(|(i, k)| text(&Some(k.clone()), &format!("{field}[{i}]"), MAX_KEY_BYTES))
        .collect()
}

fn flag(v: &Option<Value>, field: &str) -> Result<bool, ApiError> {
    read::flag(v.as_ref(), field, false).map_err(coded)
}

fn value(v: Option<&RawValue>, field: &str) -> Result<String, ApiError> {
    let Some(raw) = v else {
        return Err(bad(format!("{field} is required")));
    };
    let json = raw.get();
    if json.len() > MAX_VALUE_BYTES {
        return Err(ApiError::Coded {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            code: "kv_too_large",
            text: format!(
                "{field} is {} bytes, over the limit of {MAX_VALUE_BYTES} bytes",
                json.len()
            ),
        });
    }
    Ok(json.to_string())
}

/// Exactly one of `ttlSeconds` (a positive integer, at most ten years: the expiry is a
/// timestamp) and `forever: true`.
fn expiry(f: &Fields<'_>, at: &str) -> Result<Expiry, ApiError> {
    let ttl = f.ttl_seconds.as_ref().filter(|v| !v.is_null());
    let forever = f.forever.as_ref().filter(|v| !v.is_null());
    match (ttl, forever) {
        (Some(t), None) => match t.as_i64() {
            Some(s) if s > 0 => within(&format!("{at}ttlSeconds"), s, 1, MAX_SPAN_SECONDS)
                .map(Expiry::Seconds)
                .map_err(|e| bad(e.to_string())),
            _ => Err(bad(format!("{at}ttlSeconds must be a positive integer"))),
        },
        (None, Some(Value::Bool(true))) => Ok(Expiry::Forever),
        (None, Some(_)) => Err(bad(format!("{at}forever must be true when given"))),
        _ => Err(invalid(
            "kv_expiry_not_specified",
            format!(
                "{}: a write needs exactly one of ttlSeconds or forever: true (a put never inherits the previous expiry)",
                at.trim_end_matches('.')
            ),
        )),
    }
}

fn expect(v: &Option<Value>, field: &str) -> Result<Option<i64>, ApiError> {
    match v {
        None => Ok(None),
        Some(v) => match v.as_i64() {
            Some(n) if n >= 0 => Ok(Some(n)),
            _ => Err(bad(format!(
                "{field} must be an integer version >= 0 (0: must not exist)"
            ))),
        },
    }
}

fn number(v: &Value, field: &str) -> Result<Num, ApiError> {
    match v {
        Value::Number(_) => {
            Num::parse(&v.to_string()).ok_or_else(|| bad(format!("{field} must be a number")))
        }
        _ => Err(bad(format!("{field} must be a number"))),
    }
}

fn bound(v: &Option<Value>, field: &str) -> Result<Option<Num>, ApiError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(v) => number(v, field).map(Some),
    }
}

// ---------------------------------------------------------------- answers

/// One result per operation.
#[derive(Serialize, JsonSchema)]
pub(crate) struct KvAnswer {
    results: Vec<KvResult>,
}

/// What an operation found or did.
#[derive(Serialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum KvResult {
    Found(Found),
    Missing(Missing),
    Many(Many),
    Prefix(Prefix),
    Stored(Stored),
    Removed(Removed),
    NotApplied(NotApplied),
}

/// A row as the reads answer it.
#[derive(Serialize, JsonSchema)]
pub(crate) struct RowView {
    key: String,
    /// Left out with `keysOnly`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Value>")]
    value: Option<Box<RawValue>>,
    version: i64,
    /// `null`: kept forever.
    #[serde(rename = "expiresAt")]
    expires_at: Option<Millis>,
    #[serde(rename = "updatedAt")]
    updated_at: Millis,
}

/// `get`, found.
#[derive(Serialize, JsonSchema)]
pub(crate) struct Found {
    found: True,
    #[serde(flatten)]
    row: RowView,
}

/// `get`, nothing live at the key.
#[derive(Serialize, JsonSchema)]
pub(crate) struct Missing {
    #[schemars(extend("const" = false))]
    found: bool,
    key: String,
}

/// `getMany`.
#[derive(Serialize, JsonSchema)]
pub(crate) struct Many {
    rows: Vec<RowView>,
    missing: Vec<String>,
    /// Rows left out past the read budget (in neither list).
    truncated: bool,
}

/// `getPrefix`.
#[derive(Serialize, JsonSchema)]
pub(crate) struct Prefix {
    rows: Vec<RowView>,
    truncated: bool,
    /// The `after` of the next page, when truncated.
    #[serde(rename = "nextAfter")]
    next_after: Option<String>,
}

/// A put, putIfAbsent or incr that applied: the row as written.
#[derive(Serialize, JsonSchema)]
pub(crate) struct Stored {
    applied: True,
    #[serde(flatten)]
    row: RowView,
}

/// A delete that applied.
#[derive(Serialize, JsonSchema)]
pub(crate) struct Removed {
    applied: True,
    key: String,
    /// The deleted row's version.
    version: i64,
}

/// A write that did not apply: why, and the live row as it is (`null`, 0 when none).
#[derive(Serialize, JsonSchema)]
pub(crate) struct NotApplied {
    #[schemars(extend("const" = false))]
    applied: bool,
    key: String,
    #[schemars(extend("enum" = ["version", "absent", "max", "min", "not_a_number"]))]
    reason: &'static str,
    #[schemars(with = "Value")]
    value: Box<RawValue>,
    version: i64,
}

/// A stored value as the JSON it is.
fn json_of(text: String) -> Result<Box<RawValue>, ApiError> {
    RawValue::from_string(text)
        .map_err(|e| ApiError::Internal(format!("a stored KV value is not JSON: {e}")))
}

fn view(r: KvRow, with_value: bool) -> Result<RowView, ApiError> {
    Ok(RowView {
        key: r.key,
        value: if with_value {
            Some(json_of(r.value)?)
        } else {
            None
        },
        version: r.version,
        expires_at: r.expires_at.map(Millis),
        updated_at: r.updated_at.into(),
    })
}

fn views(rows: Vec<KvRow>, with_value: bool) -> Result<Vec<RowView>, ApiError> {
    rows.into_iter().map(|r| view(r, with_value)).collect()
}

/// The live row's value and version, or `null` and 0.
fn current(row: Option<KvRow>) -> Result<(Box<RawValue>, i64), ApiError> {
    match row {
        Some(r) => Ok((json_of(r.value)?, r.version)),
        None => Ok((json_of("null".into())?, 0)),
    }
}

/// The answer to one operation (`keys_only`: whether it asked for keys only).
pub(crate) fn result(o: KvOutcome, keys_only: bool) -> Result<KvResult, ApiError> {
    Ok(match o {
        KvOutcome::Got { row: Some(r), .. } => KvResult::Found(Found {
            found: True,
            row: view(r, true)?,
        }),
        KvOutcome::Got { key, row: None } => KvResult::Missing(Missing { found: false, key }),
        KvOutcome::Many {
            rows,
            missing,
            truncated,
        } => KvResult::Many(Many {
            rows: views(rows, true)?,
            missing,
            truncated,
        }),
        KvOutcome::Prefix {
            rows,
            truncated,
            next_after,
        } => KvResult::Prefix(Prefix {
            rows: views(rows, !keys_only)?,
            truncated,
            next_after,
        }),
        KvOutcome::Written { key, verdict } => match verdict {
            WriteVerdict::Stored(r) => KvResult::Stored(Stored {
                applied: True,
                row: view(r, true)?,
            }),
            WriteVerdict::Removed { version } => KvResult::Removed(Removed {
                applied: True,
                key,
                version,
            }),
            WriteVerdict::Refused { reason, current: c } => {
                let (value, version) = current(c)?;
                KvResult::NotApplied(NotApplied {
                    applied: false,
                    key,
                    reason: reason.as_str(),
                    value,
                    version,
                })
            }
        },
    })
}

/// Per operation, whether it asks for keys only (what its answer leaves out).
pub(crate) fn keys_only(ops: &[KvOp]) -> Vec<bool> {
    ops.iter()
        .map(|op| {
            matches!(
                op,
                KvOp::GetPrefix {
                    keys_only: true,
                    ..
                }
            )
        })
        .collect()
}

/// Every outcome's answer, index-aligned with the operations (`keys_only` from them).
pub(crate) fn results(
    keys_only: &[bool],
    outcomes: Vec<KvOutcome>,
) -> Result<Vec<KvResult>, ApiError> {
    keys_only
        .iter()
        .zip(outcomes)
        .map(|(&k, o)| result(o, k))
        .collect()
}

/// A `required` operation that did not apply: what the transaction route and this one say.
#[derive(Serialize, JsonSchema)]
pub(crate) struct Precondition {
    #[serde(rename = "failedIndex")]
    pub failed_index: usize,
    #[serde(rename = "kvReason")]
    #[schemars(extend("enum" = ["version", "absent", "max", "min", "not_a_number"]))]
    pub kv_reason: &'static str,
    /// The live row's value (`null` when none).
    #[schemars(with = "Value")]
    pub value: Box<RawValue>,
    /// The live row's version (0 when none).
    pub version: i64,
}

impl Precondition {
    /// `failed` at position `offset + failed.index` of the caller's flat result list.
    pub(crate) fn of(failed: KvFailed, offset: usize) -> Result<Precondition, ApiError> {
        let (value, version) = current(failed.current)?;
        Ok(Precondition {
            failed_index: offset + failed.index,
            kv_reason: failed.reason.as_str(),
            value,
            version,
        })
    }
}

/// 409: a `required` operation did not apply.
#[derive(Serialize, JsonSchema)]
pub(crate) struct PreconditionAnswer {
    error: String,
    #[schemars(extend("const" = "kv_precondition"))]
    code: &'static str,
    #[serde(flatten)]
    failed: Precondition,
}

async fn kv(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    body: RawBody,
) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse;
    let ops = operations(body.raw_json()?)?;
    drop(body);
    let flags = keys_only(&ops);
    match s.service.kv().apply(&who.tenant, ops).await? {
        Ok(outcomes) => Ok(Answer(KvAnswer {
            results: results(&flags, outcomes)?,
        })
        .into_response()),
        Err(failed) => {
            let failed = Precondition::of(failed, 0)?;
            let error = format!(
                "operation {} is required and did not apply ({}): nothing was written",
                failed.failed_index, failed.kv_reason
            );
            Ok(Answer(PreconditionAnswer {
                error,
                code: "kv_precondition",
                failed,
            })
            .with_status(StatusCode::CONFLICT))
        }
    }
}
