//! The bodies of pushed profiles: at most [`MAX_INGEST_BYTES`] on the
//! wire, and a gzip `Content-Encoding` (what Pyroscope's SDKs and OTLP
//! exporters send) inflated to at most [`MAX_INFLATED_BYTES`], so a small
//! gzip bomb is refused instead of filling the server's memory.

use std::io::Read;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::Request;
use axum::http::header::CONTENT_ENCODING;
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use flate2::read::GzDecoder;

use crate::body_limit::{refuse_declared_oversize_as, Refusal};
use crate::error::ApiError;

/// Largest body on the wire, as for file imports.
pub(crate) const MAX_INGEST_BYTES: usize = 32 << 20;
/// Largest body once its content encoding is undone.
pub(crate) const MAX_INFLATED_BYTES: u64 = 128 << 20;

/// The request body, or the 413 or 400 that says why there is none.
pub(crate) fn received(body: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    let body = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::PayloadTooLarge(format!("the request body exceeds {MAX_INGEST_BYTES} bytes"))
        } else {
            ApiError::BadRequest(rejection.body_text())
        }
    })?;
    if body.is_empty() {
        return Err(ApiError::BadRequest("the request body is empty".into()));
    }
    Ok(body)
}

/// Middleware: a request that declares a body over [`MAX_INGEST_BYTES`]
/// is answered 413 before its handler runs, in the route's error shape
/// (`refusal`). A body of undeclared length is cut off at the limit by
/// the router's `DefaultBodyLimit`, and [`received`] says so.
pub(crate) async fn refuse_declared_oversize(
    refusal: Refusal,
    request: Request,
    next: Next,
) -> Response {
    refuse_declared_oversize_as(MAX_INGEST_BYTES as u64, refusal, request, next).await
}

/// `body` with its `Content-Encoding` undone: none, `identity` or `gzip`.
pub(crate) fn decoded(headers: &HeaderMap, body: Bytes) -> Result<Bytes, ApiError> {
    let encoding = match headers.get(CONTENT_ENCODING) {
        None => return Ok(body),
        Some(value) => value
            .to_str()
            .map_err(|_| ApiError::BadRequest("Content-Encoding is not text".into()))?
            .trim()
            .to_ascii_lowercase(),
    };
    match encoding.as_str() {
        "" | "identity" => Ok(body),
        "gzip" | "x-gzip" => inflate(&body).map(Bytes::from),
        other => Err(ApiError::BadRequest(format!(
            "Content-Encoding {other:?} is not supported (gzip or identity)"
        ))),
    }
}

/// Inflates a gzip stream of at most [`MAX_INFLATED_BYTES`].
pub(crate) fn inflate(compressed: &[u8]) -> Result<Vec<u8>, ApiError> {
    let mut out = Vec::new();
    GzDecoder::new(compressed)
        .take(MAX_INFLATED_BYTES + 1)
        .read_to_end(&mut out)
        .map_err(|e| ApiError::BadRequest(format!("the gzip body is corrupt: {e}")))?;
    if out.len() as u64 > MAX_INFLATED_BYTES {
        return Err(ApiError::PayloadTooLarge(format!(
            "the body inflates to more than {MAX_INFLATED_BYTES} bytes"
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use axum::http::HeaderValue;
    use flate2::write::GzEncoder;
    use flate2::Compression;

    use super::*;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::best());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    fn gzip_headers() -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        headers
    }

    #[test]
    fn gzip_bodies_are_inflated_and_others_kept() {
        let body = Bytes::from(gzip(b"main;work 3\n"));
        assert_eq!(
            decoded(&gzip_headers(), body).unwrap(),
            Bytes::from_static(b"main;work 3\n")
        );
        let plain = Bytes::from_static(b"main 1\n");
        assert_eq!(decoded(&HeaderMap::new(), plain.clone()).unwrap(), plain);
    }

    #[test]
    fn a_gzip_bomb_is_refused_without_inflating_it_all() {
        // 1 GiB of zeros compresses to about 1 MiB.
        let mut encoder = GzEncoder::new(Vec::new(), Compression::best());
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..1024 {
            encoder.write_all(&zeros).unwrap();
        }
        let bomb = Bytes::from(encoder.finish().unwrap());
        assert!(bomb.len() < MAX_INGEST_BYTES);
        let refused = decoded(&gzip_headers(), bomb);
        assert!(
            matches!(&refused, Err(ApiError::PayloadTooLarge(m)) if m.contains("inflates")),
            "{refused:?}"
        );
    }

    #[test]
    fn corrupt_streams_and_unknown_encodings_are_bad_requests() {
        let corrupt = decoded(&gzip_headers(), Bytes::from_static(b"\x1f\x8bnot gzip"));
        assert!(
            matches!(corrupt, Err(ApiError::BadRequest(_))),
            "{corrupt:?}"
        );
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_ENCODING, HeaderValue::from_static("br"));
        let unknown = decoded(&headers, Bytes::from_static(b"x"));
        assert!(
            matches!(&unknown, Err(ApiError::BadRequest(m)) if m.contains("br")),
            "{unknown:?}"
        );
    }
}
