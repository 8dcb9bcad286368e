//! Refusing request bodies over a size limit so that the client hears why.
//!
//! A server that answers 413 and closes the connection with the body still
//! unread makes the kernel reset the connection, and a client still sending
//! usually sees the reset instead of the answer. So a body whose declared
//! length (`Content-Length`) is over the limit is read and thrown away, up
//! to [`DRAIN_LIMIT`] bytes and for at most [`DRAIN_TIMEOUT`], before the
//! 413 goes out. Larger bodies, and bodies of undeclared length, are cut
//! off by the body-limit layers as before.

use std::pin::Pin;
use std::time::Duration;

use axum::body::{Body, HttpBody};
use axum::extract::Request;
use axum::http::header::CONTENT_LENGTH;
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// Most bytes read to be thrown away: above the largest limit (imports).
pub(crate) const DRAIN_LIMIT: u64 = 64 << 20;
const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// How a route answers an error: routes that speak another protocol's
/// error shape (OTLP's `google.rpc.Status`, Connect's, gRPC's trailers)
/// answer a refused body in it too.
pub(crate) type Refusal = fn(&HeaderMap, ApiError) -> Response;

/// Answers 413 to a request that declares a body over `limit` bytes.
pub(crate) async fn refuse_declared_oversize(limit: u64, request: Request, next: Next) -> Response {
    refuse_declared_oversize_as(limit, |_, e| e.into_response(), request, next).await
}

/// [`refuse_declared_oversize`], answering with `refusal`.
pub(crate) async fn refuse_declared_oversize_as(
    limit: u64,
    refusal: Refusal,
    request: Request,
    next: Next,
) -> Response {
    let declared = request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    match declared {
        Some(length) if length > limit => {
            let (parts, body) = request.into_parts();
            if length <= DRAIN_LIMIT {
                let _ = tokio::time::timeout(DRAIN_TIMEOUT, drain(body)).await;
            }
            let refused =
                ApiError::PayloadTooLarge(format!("the request body exceeds {limit} bytes"));
            refusal(&parts.headers, refused)
        }
        _ => next.run(request).await,
    }
}

/// Reads a body to its end (or first error), keeping none of it.
async fn drain(mut body: Body) {
    let mut read = 0u64;
    while let Some(Ok(frame)) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await
    {
        read += frame.data_ref().map_or(0, |d| d.len() as u64);
        if read > DRAIN_LIMIT {
            return;
        }
    }
}
