//! Extractors whose rejections are [`ApiError`]s, so malformed input gets
//! the same JSON error shape as every other failure.

use axum::extract::{FromRequest, FromRequestParts};

use crate::error::ApiError;

#[derive(FromRequest)]
#[from_request(via(axum::Json), rejection(ApiError))]
pub(crate) struct AppJson<T>(pub(crate) T);

#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(ApiError))]
pub(crate) struct AppPath<T>(pub(crate) T);

#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub(crate) struct AppQuery<T>(pub(crate) T);
