//! OTLP/gRPC: the unary method
//! `opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export`,
//! served on the API's own port (HTTP/2, which the TLS listener offers by
//! ALPN beside HTTP/1.1).
//!
//! gRPC's framing for one unary call is small enough to speak here
//! rather than to bring in a gRPC server and a second router: the request
//! body is one message behind a 5-byte prefix (a compressed flag, then the
//! length, big-endian), gzip when `grpc-encoding` says so; the answer is
//! one such message followed by the `grpc-status` trailer, or, for an
//! error, only headers carrying `grpc-status` and `grpc-message`
//! ("Trailers-Only"). Routing, authentication, body limits, tracing and
//! metrics are then the ones every other route has.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use http_body::Frame;
use opentelemetry_proto::tonic::collector::profiles::v1development::{
    ExportProfilesServiceRequest, ExportProfilesServiceResponse,
};
use prost::Message;

use super::{client_message, export as export_all, grpc_code};
use crate::auth::Ingester;
use crate::error::ApiError;
use crate::ingest::body;
use crate::AppState;

const GRPC_STATUS: HeaderName = HeaderName::from_static("grpc-status");
const GRPC_MESSAGE: HeaderName = HeaderName::from_static("grpc-message");
const GRPC_ENCODING: HeaderName = HeaderName::from_static("grpc-encoding");
const GRPC_ACCEPT_ENCODING: HeaderName = HeaderName::from_static("grpc-accept-encoding");
const GRPC_TIMEOUT: HeaderName = HeaderName::from_static("grpc-timeout");
/// The message encodings this server reads.
const ACCEPTED: &str = "identity,gzip";
const INVALID_ARGUMENT: i32 = 3;
const DEADLINE_EXCEEDED: i32 = 4;
const UNIMPLEMENTED: i32 = 12;

/// A gRPC status other than OK.
#[derive(Debug)]
struct Failure {
    code: i32,
    message: String,
}

impl From<ApiError> for Failure {
    fn from(e: ApiError) -> Self {
        Failure {
            code: grpc_code(&e),
            message: client_message(&e),
        }
    }
}

/// A gRPC failure, for a request refused before its handler runs.
pub(super) fn refusal(_: &HeaderMap, e: ApiError) -> Response {
    trailers_only(e.into())
}

pub(super) async fn export(
    State(state): State<AppState>,
    by: Result<Ingester, ApiError>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let content_type = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok());
    if !content_type
        .is_some_and(|t| t == "application/grpc" || t.starts_with("application/grpc+proto"))
    {
        // gRPC's answer to what is not a gRPC call.
        return (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("Content-Type {content_type:?}: this is a gRPC method (application/grpc)"),
        )
            .into_response();
    }
    let deadline = match headers.get(GRPC_TIMEOUT).map(deadline) {
        None => None,
        Some(Ok(deadline)) => Some(deadline),
        Some(Err(failure)) => return trailers_only(failure),
    };
    let outcome = match deadline {
        // The client has given up by then: answering later helps no one,
        // and a transaction cut short rolls back (a retry stores it once).
        Some(within) => tokio::time::timeout(within, call(&state, by, &headers, body))
            .await
            .unwrap_or_else(|_| {
                Err(Failure {
                    code: DEADLINE_EXCEEDED,
                    message: format!("the call's grpc-timeout ({within:?}) passed"),
                })
            }),
        None => call(&state, by, &headers, body).await,
    };
    match outcome {
        Ok(response) => answer(&response),
        Err(failure) => trailers_only(failure),
    }
}

/// A `grpc-timeout` header's duration: at most 8 digits and a unit
/// (`H`ours, `M`inutes, `S`econds, `m`illi-, `u` micro-, `n`anoseconds).
fn deadline(value: &HeaderValue) -> Result<std::time::Duration, Failure> {
    use std::time::Duration;
    let text = value.to_str().unwrap_or("");
    let invalid = || Failure {
        code: INVALID_ARGUMENT,
        message: format!("grpc-timeout {text:?}: at most 8 digits and a unit (H, M, S, m, u or n)"),
    };
    let split = text.len().checked_sub(1).ok_or_else(invalid)?;
    let (digits, unit) = text.split_at(split);
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    let n: u64 = digits.parse().map_err(|_| invalid())?;
    Ok(match unit {
        "H" => Duration::from_secs(n * 3600),
        "M" => Duration::from_secs(n * 60),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return Err(invalid()),
    })
}

async fn call(
    state: &AppState,
    by: Result<Ingester, ApiError>,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<ExportProfilesServiceResponse, Failure> {
    let by = by?;
    let gzip = match headers
        .get(GRPC_ENCODING)
        .map(|v| v.to_str().unwrap_or("?"))
    {
        None | Some("identity") => false,
        Some("gzip") => true,
        Some(other) => {
            return Err(Failure {
                code: UNIMPLEMENTED,
                message: format!("grpc-encoding {other:?} is not supported ({ACCEPTED})"),
            })
        }
    };
    let body = body::received(body)?;
    let decode = move || {
        let message = unframe(&body, gzip)?;
        ExportProfilesServiceRequest::decode(message.as_slice()).map_err(|e| {
            ApiError::BadRequest(format!("not a protobuf ExportProfilesServiceRequest: {e}"))
        })
    };
    Ok(export_all(state, &by, decode).await?.response())
}

/// The one message of a unary call's body, inflated when compressed.
fn unframe(body: &[u8], gzip: bool) -> Result<Vec<u8>, ApiError> {
    let bad = |m: String| Err(ApiError::BadRequest(m));
    let Some((prefix, message)) = body.split_first_chunk::<5>() else {
        return bad(format!(
            "a gRPC message is a 5-byte prefix and the message; the body has {} bytes",
            body.len()
        ));
    };
    let length = u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]) as usize;
    if length != message.len() {
        return bad(format!(
            "the gRPC prefix says {length} bytes, the body holds {} after it (a unary call \
             sends one message)",
            message.len()
        ));
    }
    match (prefix[0], gzip) {
        (0, _) => Ok(message.to_vec()),
        (1, true) => body::inflate(message),
        (1, false) => {
            bad("the message is compressed but grpc-encoding names no compression".into())
        }
        (flag, _) => bad(format!("gRPC compressed flag {flag}: 0 or 1")),
    }
}

/// A unary call's answer: the message, then the OK status as a trailer.
fn answer(response: &ExportProfilesServiceResponse) -> Response {
    let message = response.encode_to_vec();
    let mut frame = Vec::with_capacity(5 + message.len());
    frame.push(0);
    frame.extend_from_slice(&(message.len() as u32).to_be_bytes());
    frame.extend_from_slice(&message);
    let mut trailers = HeaderMap::new();
    trailers.insert(GRPC_STATUS, HeaderValue::from_static("0"));
    let mut response = Response::new(Body::new(Unary {
        message: Some(Bytes::from(frame)),
        trailers: Some(trailers),
    }));
    grpc_headers(response.headers_mut());
    response
}

/// An error as gRPC's Trailers-Only answer: headers, no body.
fn trailers_only(failure: Failure) -> Response {
    let mut response = Response::new(Body::empty());
    let headers = response.headers_mut();
    grpc_headers(headers);
    headers.insert(GRPC_STATUS, HeaderValue::from(failure.code));
    if let Ok(message) = HeaderValue::from_str(&percent_encoded(&failure.message)) {
        headers.insert(GRPC_MESSAGE, message);
    }
    response
}

fn grpc_headers(headers: &mut HeaderMap) {
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    headers.insert(GRPC_ACCEPT_ENCODING, HeaderValue::from_static(ACCEPTED));
}

/// `grpc-message`'s encoding: bytes outside printable ASCII, and `%`,
/// as `%XX`.
fn percent_encoded(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for &b in text.as_bytes() {
        if (0x20..=0x7e).contains(&b) && b != b'%' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A body of one data frame and then trailers.
struct Unary {
    message: Option<Bytes>,
    trailers: Option<HeaderMap>,
}

impl http_body::Body for Unary {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some(message) = self.message.take() {
            return Poll::Ready(Some(Ok(Frame::data(message))));
        }
        Poll::Ready(self.trailers.take().map(|t| Ok(Frame::trailers(t))))
    }

    fn is_end_stream(&self) -> bool {
        self.message.is_none() && self.trailers.is_none()
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;

    #[test]
    fn one_framed_message_is_read_and_others_refused() {
        let framed = |flag: u8, message: &[u8]| {
            let mut body = vec![flag];
            body.extend_from_slice(&(message.len() as u32).to_be_bytes());
            body.extend_from_slice(message);
            body
        };
        assert_eq!(unframe(&framed(0, b"abc"), false).unwrap(), b"abc");
        assert_eq!(unframe(&framed(0, b""), false).unwrap(), b"");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, b"abc").unwrap();
        let compressed = framed(1, &gz.finish().unwrap());
        assert_eq!(unframe(&compressed, true).unwrap(), b"abc");
        for (body, gzip, needle) in [
            (b"\0\0\0".to_vec(), false, "5-byte prefix"),
            (
                [framed(0, b"abc"), framed(0, b"d")].concat(),
                false,
                "one message",
            ),
            (compressed, false, "compressed"),
            (framed(2, b"abc"), true, "flag 2"),
        ] {
            let e = unframe(&body, gzip).unwrap_err().to_string();
            assert!(e.contains(needle), "{needle}: {e}");
        }
    }

    #[tokio::test]
    async fn answers_carry_the_status_in_trailers_or_headers() {
        let response = answer(&ExportProfilesServiceResponse::default());
        assert_eq!(response.headers()[CONTENT_TYPE], "application/grpc");
        let collected = response.into_body().collect().await.unwrap();
        assert_eq!(collected.trailers().unwrap()[GRPC_STATUS], "0");
        assert_eq!(collected.to_bytes().as_ref(), [0, 0, 0, 0, 0]);

        let refused = trailers_only(ApiError::Forbidden("not 100% yours: ü".into()).into());
        assert_eq!(refused.status(), StatusCode::OK);
        assert_eq!(refused.headers()[GRPC_STATUS], "7");
        assert_eq!(refused.headers()[GRPC_MESSAGE], "not 100%25 yours: %C3%BC");
    }

    #[test]
    fn grpc_timeouts_read_as_the_spec_writes_them() {
        use std::time::Duration;
        let read = |text: &str| deadline(&HeaderValue::from_str(text).unwrap());
        assert_eq!(read("2H").unwrap(), Duration::from_secs(7200));
        assert_eq!(read("3M").unwrap(), Duration::from_secs(180));
        assert_eq!(read("10S").unwrap(), Duration::from_secs(10));
        assert_eq!(read("250m").unwrap(), Duration::from_millis(250));
        assert_eq!(
            read("99999999u").unwrap(),
            Duration::from_micros(99_999_999)
        );
        assert_eq!(read("5n").unwrap(), Duration::from_nanos(5));
        for bad in ["", "S", "10", "10s", "123456789S", "-1S", "1.5S", "10 S"] {
            let failure = read(bad).unwrap_err();
            assert_eq!(failure.code, INVALID_ARGUMENT, "{bad:?}");
            assert!(failure.message.contains("grpc-timeout"), "{bad:?}");
        }
    }
}
