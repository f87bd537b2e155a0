//! Query-string parameters with Queen's rules: exact keys, first occurrence wins, an empty
//! value is absent, booleans are true only for `true` or `1`, garbage integers fall back to
//! the default.
//!
//! A route's query string is a type ([`Params::read`]): the type names the keys the route
//! reads, and its OpenAPI parameters are derived from it (`Doc::query_of`). Its fields read
//! their values with the readers here ([`flag`], [`int`], [`parse`]), so a type reads numbers by
//! the same rule as [`Params::int`], and a refusal names its key the same way on every route
//! (`<key> <what is wrong>`).

use std::collections::HashMap;
use std::fmt;

use axum::extract::{FromRequestParts, Query};
use axum::http::request::Parts;
use schemars::JsonSchema;
use serde::de::value::BorrowedStrDeserializer;
use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, Visitor};

use regent_rules::bounds::MAX_OFFSET;
use regent_service::queues::Page;

use super::error::ApiError;

pub struct Params(HashMap<String, String>);

/// A query flag as [`flag`] reads it: only `true` or `1` are true. Documents a query
/// type's field (`#[schemars(with = "Flag")]`).
#[derive(JsonSchema)]
#[schemars(example = &"true", example = &"false")]
#[expect(
    dead_code,
    reason = "describes a query string's value; `flag` reads it"
)]
pub(crate) struct Flag(String);

impl<S: Send + Sync> FromRequestParts<S> for Params {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Query(pairs) = Query::<Vec<(String, String)>>::from_request_parts(parts, state)
            .await
            .map_err(|e| ApiError::bad_request(format!("Invalid query string: {e}")))?;
        // PostgreSQL's text cannot hold NUL: refused before any SQL, named as the fields of a
        // body are (`group must not contain NUL`).
        if let Some((k, _)) = pairs
            .iter()
            .find(|(k, v)| k.contains('\0') || v.contains('\0'))
        {
            let name = if k.contains('\0') {
                "a parameter's name"
            } else {
                k.as_str()
            };
            return Err(ApiError::bad_request(format!(
                "{name} must not contain NUL"
            )));
        }
        let mut map = HashMap::new();
        for (k, v) in pairs {
            map.entry(k).or_insert(v);
        }
        Ok(Params(map))
    }
}

impl Params {
    pub fn str(&self, key: &str) -> Option<&str> {
        self.0
            .get(key)
            .map(String::as_str)
            .filter(|s| !s.is_empty())
    }

    pub fn int(&self, key: &str) -> Option<i64> {
        self.str(key).and_then(number)
    }

    /// The query string read into its type `T`: each field of `T` from its key, in the order
    /// `T` declares them (so the first refusal is the first field's), absent when the key is
    /// absent or empty; keys `T` does not name are ignored, as Queen ignores them.
    pub(crate) fn read<'a, T: Deserialize<'a>>(&'a self) -> Result<T, ApiError> {
        T::deserialize(Keys(&self.0)).map_err(|Refusal(text)| ApiError::bad_request(text))
    }
}

/// Queen's boolean: only `true` or `1` are true.
fn truthy(v: &str) -> bool {
    v == "true" || v == "1"
}

/// Queen's integer: garbage is absent (the parameter's default then).
fn number(v: &str) -> Option<i64> {
    v.trim().parse().ok()
}

/// A flag field (`#[serde(default, deserialize_with = "params::flag")]`): Queen's boolean.
pub(crate) fn flag<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    parse(d, |v| Ok(truthy(v)))
}

/// A flag field that is true when absent (`#[serde(default = "params::yes")]`).
pub(crate) fn yes() -> bool {
    true
}

/// An integer field (`#[serde(default, deserialize_with = "params::int")]`), read as
/// [`Params::int`] reads it.
pub(crate) fn int<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    parse(d, |v| Ok(number(v)))
}

/// A count field (`batch`): absent or empty is `None` (§0.3); digits are the count, one too
/// large for an i64 the largest (callers clamp); anything else, a negative or a fraction
/// included, is refused by name. Queen 0.15 read garbage as its default and failed on a
/// negative in SQL; its clients send only counts, so a value that is not one is a mistake
/// to say, not to guess at.
pub(crate) fn count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    parse(d, |v| {
        let t = v.trim();
        if t.is_empty() {
            return Ok(None);
        }
        if !t.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("must be a non-negative integer, got '{v}'"));
        }
        Ok(Some(t.parse().unwrap_or(i64::MAX)))
    })
}

/// A field's value read by `read`, whose refusal says what is wrong with it; the query string
/// puts the key before it (`minLagSeconds must be …`).
pub(crate) fn parse<'de, D, T, F>(d: D, read: F) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    F: FnOnce(&str) -> Result<T, String>,
{
    d.deserialize_str(Parse(read))
}

/// The visitor of [`parse`].
struct Parse<F>(F);

impl<'de, T, F: FnOnce(&str) -> Result<T, String>> Visitor<'de> for Parse<F> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a query string's value")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        (self.0)(v).map_err(E::custom)
    }
}

/// Why a query string was refused: the 400's text.
#[derive(Debug)]
struct Refusal(String);

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refusal {}

impl de::Error for Refusal {
    fn custom<T: fmt::Display>(msg: T) -> Refusal {
        Refusal(msg.to_string())
    }
}

/// The query string's keys, as a struct's fields.
struct Keys<'a>(&'a HashMap<String, String>);

impl<'de> Deserializer<'de> for Keys<'de> {
    type Error = Refusal;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Refusal> {
        Err(de::Error::custom("a query string is read into a struct"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Refusal> {
        visitor.visit_map(Fields {
            map: self.0,
            names: fields.iter(),
            value: None,
        })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// A struct's fields in the order it declares them, each that has a non-empty value.
struct Fields<'a> {
    map: &'a HashMap<String, String>,
    names: std::slice::Iter<'static, &'static str>,
    value: Option<Value<'a>>,
}

impl<'de> MapAccess<'de> for Fields<'de> {
    type Error = Refusal;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Refusal> {
        for key in self.names.by_ref() {
            if let Some(text) = self.map.get(*key).filter(|v| !v.is_empty()) {
                self.value = Some(Value { key, text });
                return seed
                    .deserialize(BorrowedStrDeserializer::new(key))
                    .map(Some);
            }
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Refusal> {
        let value = self
            .value
            .take()
            .expect("serde reads a key before its value");
        seed.deserialize(value)
    }
}

/// One key's value: text, which a field reads as it needs.
struct Value<'a> {
    key: &'static str,
    text: &'a str,
}

impl<'de> Deserializer<'de> for Value<'de> {
    type Error = Refusal;

    /// The field's refusal, with its key named first.
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refusal> {
        visitor
            .visit_borrowed_str(self.text)
            .map_err(|Refusal(why)| Refusal(format!("{} {why}", self.key)))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refusal> {
        visitor.visit_some(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier
        ignored_any
    }
}

/// A listing's page size: what `limit` is when absent or not a number, and the most one page
/// holds. The routes' documentation reads the same values (`Doc::paged`).
#[derive(Clone, Copy, Debug)]
pub struct Paging {
    pub default: i64,
    pub max: i64,
}

impl Paging {
    /// Most listings: 1,000 a page by default, at most 10,000.
    pub const LISTING: Paging = Paging {
        default: 1000,
        max: 10_000,
    };
}

impl Params {
    /// The page asked for: `limit` clamped to 1 through `paging.max`, from `offset` (0
    /// through `MAX_OFFSET`, past any listing's end; garbage is 0).
    pub fn page(&self, paging: Paging) -> Page {
        Page {
            limit: self
                .int("limit")
                .unwrap_or(paging.default)
                .clamp(1, paging.max),
            offset: self.int("offset").unwrap_or(0).clamp(0, MAX_OFFSET),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Instant;
    use serde::Deserialize;

    fn params(pairs: &[(&str, &str)]) -> Params {
        Params(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Q<'a> {
        #[serde(borrow)]
        name: Option<&'a str>,
        #[serde(default, deserialize_with = "flag")]
        auto_ack: bool,
        #[serde(default = "yes", deserialize_with = "flag")]
        keep: bool,
        #[serde(default, deserialize_with = "int")]
        batch: Option<i64>,
        #[serde(default)]
        from: Instant,
    }

    #[test]
    fn fields_read_by_queens_rules() {
        let p = params(&[
            ("name", ""),
            ("autoAck", "1"),
            ("keep", "yes"),
            ("batch", " 7 "),
        ]);
        let q: Q = p.read().unwrap();
        assert_eq!(q.name, None, "an empty value is absent");
        assert!(q.auto_ack);
        assert!(!q.keep, "only `true` or `1` are true");
        assert_eq!(q.batch, Some(7));
        assert_eq!(q.from.get().unwrap(), None);
        let p = params(&[("batch", "ten"), ("other", "x")]);
        let q: Q = p.read().unwrap();
        assert_eq!(q.batch, None, "garbage is absent");
        assert!(q.keep && !q.auto_ack, "absent flags are their defaults");
    }

    #[test]
    fn a_refusal_names_its_key() {
        let p = params(&[("from", "yesterday")]);
        let q: Q = p.read().unwrap();
        let refused = q.from.get().expect_err("refused").to_string();
        assert_eq!(refused, "from must be an ISO-8601 timestamp");

        #[derive(Deserialize, Debug)]
        #[serde(rename_all = "camelCase")]
        struct Lag {
            #[serde(default, deserialize_with = "positive")]
            min_lag: Option<i64>,
        }
        fn positive<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
            parse(d, |v| {
                number(v)
                    .filter(|n| *n > 0)
                    .map(Some)
                    .ok_or("must be > 0".into())
            })
        }
        let lag = params(&[("minLag", "2")]).read::<Lag>().unwrap();
        assert_eq!(lag.min_lag, Some(2));
        let refused = params(&[("minLag", "-1")]).read::<Lag>().unwrap_err();
        assert_eq!(refused.to_string(), "minLag must be > 0");
    }
}
