//! Extractors whose rejections are [`ApiError`]s, so malformed input gets
//! the same JSON error shape as every other failure.

use axum::extract::{FromRequest, FromRequestParts, Request};
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// A JSON object body. Only an object: serde's derived `Deserialize` also
/// reads a struct from an array of its fields in order, so `[null, null]`
/// would pass for a request with two optional fields.
pub(crate) struct AppJson<T>(pub(crate) T);

impl<T, S> FromRequest<S> for AppJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let axum::Json(body) =
            axum::Json::<serde_json::Value>::from_request(request, state).await?;
        if !body.is_object() {
            return Err(ApiError::Unprocessable(
                "the request body must be a JSON object".into(),
            ));
        }
        serde_json::from_value(body)
            .map(AppJson)
            .map_err(|e| ApiError::Unprocessable(format!("invalid request body: {e}")))
    }
}

#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(ApiError))]
pub(crate) struct AppPath<T>(pub(crate) T);

#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub(crate) struct AppQuery<T>(pub(crate) T);

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::header::CONTENT_TYPE;

    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Patch {
        #[serde(default)]
        enabled: Option<bool>,
        #[serde(default)]
        cron: Option<String>,
    }

    async fn extract(body: &str) -> Result<Patch, ApiError> {
        let request = Request::builder()
            .method("PATCH")
            .header(CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_owned()))
            .unwrap();
        AppJson::<Patch>::from_request(request, &())
            .await
            .map(|AppJson(p)| p)
    }

    #[tokio::test]
    async fn only_objects_of_the_right_shape_are_bodies() {
        let patch = extract(r#"{"enabled": false}"#).await.unwrap();
        assert_eq!((patch.enabled, patch.cron), (Some(false), None));
        for unprocessable in [
            "[null, null]",
            "[]",
            "null",
            "3",
            r#"{"enabled": 1}"#,
            r#"{"x": 1}"#,
        ] {
            assert!(
                matches!(
                    extract(unprocessable).await,
                    Err(ApiError::Unprocessable(_))
                ),
                "{unprocessable}"
            );
        }
        assert!(matches!(extract("{").await, Err(ApiError::BadRequest(_))));
    }
}
