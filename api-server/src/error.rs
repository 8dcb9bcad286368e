//! One error type for every handler: a status code and a JSON body
//! `{"error": {"code": ..., "message": ...}}`. Internal errors are logged
//! and reported to clients without detail; 503s carry `Retry-After`.

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::openapi::{ErrorBody, ErrorCode, ErrorDetail};
use crate::service_error::ServiceError;

/// When a client may retry after a 503 (the database unavailable or too
/// slow, a dependency down): seconds, in `Retry-After`.
pub(crate) const RETRY_AFTER_SECS: &str = "2";

#[derive(Debug, thiserror::Error)]
pub(crate) enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Unauthorized(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Unprocessable(String),
    #[error("{0}")]
    PayloadTooLarge(String),
    #[error("{0}")]
    Unavailable(String),
    #[error("internal error: {0}")]
    Internal(String),
}

impl ApiError {
    fn parts(&self) -> (StatusCode, ErrorCode) {
        match self {
            ApiError::BadRequest(_) => (StatusCode::BAD_REQUEST, ErrorCode::BadRequest),
            ApiError::Unauthorized(_) => (StatusCode::UNAUTHORIZED, ErrorCode::Unauthorized),
            ApiError::Forbidden(_) => (StatusCode::FORBIDDEN, ErrorCode::Forbidden),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, ErrorCode::NotFound),
            ApiError::Conflict(_) => (StatusCode::CONFLICT, ErrorCode::Conflict),
            ApiError::Unprocessable(_) => (StatusCode::UNPROCESSABLE_ENTITY, ErrorCode::Invalid),
            ApiError::PayloadTooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, ErrorCode::TooLarge),
            ApiError::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, ErrorCode::Unavailable),
            ApiError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, ErrorCode::Internal),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.parts();
        let message = match &self {
            ApiError::Internal(detail) => {
                tracing::error!(error = %detail, "internal error");
                "internal error; see the server log".to_owned()
            }
            other => other.to_string(),
        };
        let body = ErrorBody {
            error: ErrorDetail { code, message },
        };
        let mut response = (status, Json(body)).into_response();
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
        }
        if status == StatusCode::SERVICE_UNAVAILABLE {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static(RETRY_AFTER_SECS),
            );
        }
        response
    }
}

/// The one place a service's error becomes HTTP.
impl From<ServiceError> for ApiError {
    fn from(e: ServiceError) -> Self {
        match e {
            ServiceError::Invalid(message) => ApiError::Unprocessable(message),
            ServiceError::Malformed(message) => ApiError::BadRequest(message),
            ServiceError::Unauthenticated(message) => ApiError::Unauthorized(message),
            ServiceError::Forbidden(message) => ApiError::Forbidden(message),
            ServiceError::NotFound(message) => ApiError::NotFound(message),
            ServiceError::Conflict(message) => ApiError::Conflict(message),
            ServiceError::TooLarge(message) => ApiError::PayloadTooLarge(message),
            ServiceError::Unavailable(message) => ApiError::Unavailable(message),
            ServiceError::Internal(detail) => ApiError::Internal(detail),
        }
    }
}

/// For the handlers that read the store themselves (ingest): the
/// services' mapping, so a store error reads the same wherever it arose.
impl From<odp_store::StoreError> for ApiError {
    fn from(e: odp_store::StoreError) -> Self {
        ServiceError::from(e).into()
    }
}

impl From<JsonRejection> for ApiError {
    fn from(rejection: JsonRejection) -> Self {
        match rejection {
            JsonRejection::JsonDataError(e) => ApiError::Unprocessable(e.body_text()),
            JsonRejection::JsonSyntaxError(e) => ApiError::BadRequest(e.body_text()),
            JsonRejection::MissingJsonContentType(e) => ApiError::BadRequest(e.body_text()),
            other => ApiError::BadRequest(other.body_text()),
        }
    }
}

impl From<PathRejection> for ApiError {
    fn from(rejection: PathRejection) -> Self {
        ApiError::BadRequest(rejection.body_text())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(rejection: QueryRejection) -> Self {
        ApiError::BadRequest(rejection.body_text())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreachable_database_is_a_503_with_retry_after() {
        for cause in [
            sqlx::Error::PoolTimedOut,
            sqlx::Error::Io(std::io::ErrorKind::ConnectionRefused.into()),
        ] {
            let error = ApiError::from(odp_store::StoreError::Database(cause));
            let response = error.into_response();
            assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
            assert_eq!(
                response.headers()[axum::http::header::RETRY_AFTER],
                RETRY_AFTER_SECS
            );
        }
    }

    #[test]
    fn other_errors_have_no_retry_after() {
        let response = ApiError::Internal("boom".into()).into_response();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(!response
            .headers()
            .contains_key(axum::http::header::RETRY_AFTER));
    }
}
