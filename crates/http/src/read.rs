//! The one reading layer of JSON request bodies. Each reader takes a field as the parsed body
//! holds it (`None` when absent; `null` is absent too) and the field's name as the client
//! wrote it, and answers the value or the one refusal for that mistake, worded the same on
//! every route:
//!
//! | mistake | text |
//! |---|---|
//! | the body is not an object | `request body must be a JSON object` |
//! | a needed field absent, `null` or `""` | `<field> is required` |
//! | not a string | `<field> must be a string` |
//! | not `true` or `false` | `<field> must be a boolean` |
//! | not an integer | `<field> must be an integer` |
//! | an integer out of its range | `<field> must be an integer from <min> to <max>` |
//! | not a number | `<field> must be a number` |
//! | not an array | `<field> must be an array` |
//! | not an array of strings | `<field> must be an array of strings` |
//! | not a UUID | `<field> must be a UUID` |
//! | not an instant | `<field> must be an ISO-8601 timestamp` |
//! | longer than its limit | `<field> must be at most <n> bytes` |
//! | holds NUL | `<field> must not contain NUL` |
//!
//! The first two are Queen's (spec §16.1); the rest are this broker's one wording. The
//! texts Queen gives a family of its own stay that family's (a push item's `Queue must be a
//! string`, the ack routes' `bad body: …`, the transaction's `operations array required`).

use std::ops::RangeInclusive;

use chrono::{DateTime, Utc};
use serde::de::{self, Deserialize, DeserializeOwned, Deserializer, Visitor};
use serde_json::{Map, Value};
use uuid::Uuid;

use super::error::ApiError;

/// A JSON object's fields.
pub(crate) type Object = Map<String, Value>;

/// Queen's text for a body that is not an object (spec §16.1).
pub(crate) const NOT_AN_OBJECT: &str = "request body must be a JSON object";

fn refused(field: &str, what: &str) -> ApiError {
    ApiError::bad_request(format!("{field} {what}"))
}

/// A field that is there: absent and `null` are the same to every reader.
fn present(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

/// The body as an object.
pub(crate) fn object(v: &Value) -> Result<&Object, ApiError> {
    v.as_object()
        .ok_or_else(|| ApiError::bad_request(NOT_AN_OBJECT))
}

/// A body's fields as its request type `T` names them: a struct whose fields are each still
/// a JSON value (`Option<Value>`), read by the readers here. The type is the one place a
/// field's wire name is written: the reading, the OpenAPI schema and the fuzzer's keys all
/// take it from there.
pub(crate) fn fields<T: DeserializeOwned>(v: &Value) -> Result<T, ApiError> {
    object(v)?;
    T::deserialize(v).map_err(|_| ApiError::bad_request(NOT_AN_OBJECT))
}

/// The wire names of a request type's fields, in the order the type declares them (serde's
/// own list, renames applied): for a text that lists the fields a body may hold.
pub(crate) fn names<T: Deserialize<'static>>() -> &'static [&'static str] {
    let mut names = Names(&[]);
    // The deserializer refuses at once, having been told the names.
    let _ = T::deserialize(&mut names);
    names.0
}

/// A deserializer that only listens for the names of a struct's fields.
struct Names(&'static [&'static str]);

impl<'de> Deserializer<'de> for &mut Names {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not a struct"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Self::Error> {
        self.0 = fields;
        Err(de::Error::custom("names read"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// A string, `""` included.
pub(crate) fn text<'a>(v: Option<&'a Value>, field: &str) -> Result<Option<&'a str>, ApiError> {
    match present(v) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(refused(field, "must be a string")),
    }
}

/// A string where `""` is the same as absent (the field's default then).
pub(crate) fn optional<'a>(v: Option<&'a Value>, field: &str) -> Result<Option<&'a str>, ApiError> {
    Ok(text(v, field)?.filter(|s| !s.is_empty()))
}

/// A string that must be there and not be `""`.
pub(crate) fn required<'a>(v: Option<&'a Value>, field: &str) -> Result<&'a str, ApiError> {
    optional(v, field)?.ok_or_else(|| refused(field, "is required"))
}

/// A string read without refusal: anything but a non-empty string is absent. For the routes
/// whose contract takes whatever is sent (an ack's fields resolve to nothing, not to a 400).
pub(crate) fn lenient(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// Text at most `max` bytes long, without NUL: PostgreSQL's text cannot hold NUL, and an
/// index entry must fit in a page.
pub(crate) fn short<'a>(field: &str, s: &'a str, max: usize) -> Result<&'a str, ApiError> {
    if s.len() > max {
        return Err(refused(field, &format!("must be at most {max} bytes")));
    }
    no_nul(field, s)
}

/// Text without NUL, which PostgreSQL's text cannot hold.
pub(crate) fn no_nul<'a>(field: &str, s: &'a str) -> Result<&'a str, ApiError> {
    if s.contains('\0') {
        return Err(refused(field, "must not contain NUL"));
    }
    Ok(s)
}

/// `true` or `false`; absent is `default`.
pub(crate) fn flag(v: Option<&Value>, field: &str, default: bool) -> Result<bool, ApiError> {
    match present(v) {
        None => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(refused(field, "must be a boolean")),
    }
}

/// An integer that fits 64 bits (`1.0` is not one).
pub(crate) fn integer(v: Option<&Value>, field: &str) -> Result<Option<i64>, ApiError> {
    present(v)
        .map(|n| {
            n.as_i64()
                .ok_or_else(|| refused(field, "must be an integer"))
        })
        .transpose()
}

/// A whole number, one past 64 bits read as the largest (for options a bound clamps anyway);
/// `3.0` is 3.
pub(crate) fn whole(v: Option<&Value>, field: &str) -> Result<Option<i64>, ApiError> {
    match present(v) {
        None => Ok(None),
        Some(Value::Number(n)) if n.is_i64() => Ok(n.as_i64()),
        Some(Value::Number(n)) if n.is_u64() => Ok(Some(i64::MAX)),
        Some(Value::Number(n)) if n.as_f64().is_some_and(|f| f.fract() == 0.0) => {
            Ok(n.as_f64().map(|f| f as i64))
        }
        Some(_) => Err(refused(field, "must be an integer")),
    }
}

/// An integer within `range`.
pub(crate) fn int_in(
    v: Option<&Value>,
    field: &str,
    range: RangeInclusive<i64>,
) -> Result<Option<i64>, ApiError> {
    let out = || {
        let (lo, hi) = (range.start(), range.end());
        refused(field, &format!("must be an integer from {lo} to {hi}"))
    };
    present(v)
        .map(|n| n.as_i64().filter(|n| range.contains(n)).ok_or_else(out))
        .transpose()
}

/// A number.
pub(crate) fn number(v: Option<&Value>, field: &str) -> Result<Option<f64>, ApiError> {
    present(v)
        .map(|n| n.as_f64().ok_or_else(|| refused(field, "must be a number")))
        .transpose()
}

/// An array.
pub(crate) fn array<'a>(
    v: Option<&'a Value>,
    field: &str,
) -> Result<Option<&'a [Value]>, ApiError> {
    match present(v) {
        None => Ok(None),
        Some(Value::Array(a)) => Ok(Some(a)),
        Some(_) => Err(refused(field, "must be an array")),
    }
}

/// An array of strings.
pub(crate) fn strings<'a>(
    v: Option<&'a Value>,
    field: &str,
) -> Result<Option<Vec<&'a str>>, ApiError> {
    let not = || refused(field, "must be an array of strings");
    match present(v) {
        None => Ok(None),
        Some(Value::Array(a)) => a
            .iter()
            .map(|s| s.as_str().ok_or_else(not))
            .collect::<Result<_, _>>()
            .map(Some),
        Some(_) => Err(not()),
    }
}

/// A UUID that must be there.
pub(crate) fn uuid(v: Option<&Value>, field: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(required(v, field)?).map_err(|_| refused(field, "must be a UUID"))
}

/// An ISO-8601 instant.
pub(crate) fn instant(v: Option<&Value>, field: &str) -> Result<Option<DateTime<Utc>>, ApiError> {
    let not = || refused(field, "must be an ISO-8601 timestamp");
    match present(v) {
        None => Ok(None),
        Some(Value::String(t)) => DateTime::parse_from_rfc3339(t)
            .map(|t| Some(t.with_timezone(&Utc)))
            .map_err(|_| not()),
        Some(_) => Err(not()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text_of<T: std::fmt::Debug>(r: Result<T, ApiError>) -> String {
        r.expect_err("refused").to_string()
    }

    #[test]
    fn absent_and_null_are_the_same_to_every_reader() {
        for v in [None, Some(&Value::Null)] {
            assert_eq!(text(v, "f").unwrap(), None);
            assert!(!flag(v, "f", false).unwrap());
            assert!(flag(v, "f", true).unwrap());
            assert_eq!(integer(v, "f").unwrap(), None);
            assert_eq!(array(v, "f").unwrap(), None);
            assert_eq!(text_of(required(v, "f")), "f is required");
            assert_eq!(text_of(uuid(v, "f")), "f is required");
        }
    }

    #[test]
    fn one_wording_per_mistake() {
        let five = json!(5);
        let s = json!("x");
        assert_eq!(text_of(text(Some(&five), "q")), "q must be a string");
        assert_eq!(text_of(required(Some(&json!("")), "q")), "q is required");
        assert_eq!(
            text_of(flag(Some(&s), "all", false)),
            "all must be a boolean"
        );
        assert_eq!(
            text_of(integer(Some(&json!(1.5)), "n")),
            "n must be an integer"
        );
        assert_eq!(text_of(whole(Some(&s), "n")), "n must be an integer");
        assert_eq!(
            text_of(int_in(Some(&json!(0)), "limit", 1..=10)),
            "limit must be an integer from 1 to 10"
        );
        assert_eq!(text_of(number(Some(&s), "r")), "r must be a number");
        assert_eq!(text_of(array(Some(&s), "ops")), "ops must be an array");
        assert_eq!(
            text_of(strings(Some(&json!(["a", 1])), "keys")),
            "keys must be an array of strings"
        );
        assert_eq!(text_of(uuid(Some(&s), "id")), "id must be a UUID");
        assert_eq!(
            text_of(instant(Some(&s), "from")),
            "from must be an ISO-8601 timestamp"
        );
        assert_eq!(text_of(short("k", "abcd", 3)), "k must be at most 3 bytes");
        assert_eq!(text_of(short("k", "a\0", 3)), "k must not contain NUL");
        assert_eq!(text_of(object(&json!([]))), NOT_AN_OBJECT);
    }

    #[test]
    fn whole_numbers_saturate_and_integers_do_not() {
        assert_eq!(whole(Some(&json!(3.0)), "n").unwrap(), Some(3));
        assert_eq!(whole(Some(&json!(u64::MAX)), "n").unwrap(), Some(i64::MAX));
        assert!(integer(Some(&json!(3.0)), "n").is_err());
        assert!(integer(Some(&json!(u64::MAX)), "n").is_err());
    }

    #[derive(serde::Deserialize, Debug)]
    #[serde(rename_all = "camelCase")]
    struct Body {
        queue: Option<Value>,
        dry_run: Option<Value>,
    }

    #[test]
    fn a_request_type_names_its_fields_in_order() {
        assert_eq!(names::<Body>(), ["queue", "dryRun"]);
        let b: Body = fields(&json!({"dryRun": true, "other": 1})).unwrap();
        assert_eq!((b.queue, b.dry_run), (None, Some(json!(true))));
        assert_eq!(text_of(fields::<Body>(&json!(["q", true]))), NOT_AN_OBJECT);
    }

    #[test]
    fn lenient_text_refuses_nothing() {
        assert_eq!(lenient(Some(&json!("t"))), Some("t"));
        assert_eq!(lenient(Some(&json!(""))), None);
        assert_eq!(lenient(Some(&json!(7))), None);
        assert_eq!(lenient(None), None);
    }
}
