//! Path parameters, percent-decoded once, with a JSON 400 instead of axum's plain-text
//! rejection when a segment does not decode (invalid UTF-8, say) or decodes to NUL (`%00`,
//! which PostgreSQL's text cannot hold: refused before any SQL, see `body`).

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use super::error::ApiError;

pub struct PathParams<T>(pub T);

impl<T, S> FromRequestParts<S> for PathParams<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        // `%00` is the only spelling of NUL in a path (a raw one is not a valid URI).
        if parts.uri.path().contains("%00") {
            return Err(ApiError::bad_request(
                "Invalid path: a segment holds the NUL character (%00), which PostgreSQL cannot store",
            ));
        }
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(t)| PathParams(t))
            .map_err(|r| ApiError::bad_request(r.body_text()))
    }
}
