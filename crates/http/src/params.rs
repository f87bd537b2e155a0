//! Query-string parameters with Queen's rules: exact keys, first occurrence wins, an empty
//! value is absent, booleans are true only for `true` or `1`, garbage integers fall back to
//! the default.

use std::collections::HashMap;

use axum::extract::{FromRequestParts, Query};
use axum::http::request::Parts;
use schemars::JsonSchema;

use regent_rules::bounds::MAX_OFFSET;
use regent_service::queues::Page;

use super::error::ApiError;

pub struct Params(HashMap<String, String>);

/// A query flag as [`Params::flag`] reads it: only `true` or `1` are true. Documents a query
/// type's field (`#[schemars(with = "Flag")]`).
#[derive(JsonSchema)]
#[schemars(example = &"true", example = &"false")]
#[expect(
    dead_code,
    reason = "describes a query string's value; `Params::flag` reads it"
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

    pub fn flag(&self, key: &str, default: bool) -> bool {
        match self.str(key) {
            Some(v) => v == "true" || v == "1",
            None => default,
        }
    }

    pub fn int(&self, key: &str) -> Option<i64> {
        self.str(key).and_then(|v| v.trim().parse().ok())
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
