//! OTLP/HTTP: `POST /v1development/profiles` with an
//! `ExportProfilesServiceRequest` in protocol buffers
//! (`application/x-protobuf`) or OTLP/JSON (`application/json`), gzip
//! `Content-Encoding` or none. As the OTLP/HTTP specification says, the
//! answer is in the request's encoding: 200 with an
//! `ExportProfilesServiceResponse` (its `partial_success` naming the
//! profiles refused), or a `google.rpc.Status` with 400 for a request
//! that is not one, 401/403 for the token, 413 for a body too large, 415
//! for another content type, and 503 (with `Retry-After`) when the client
//! should retry.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::header::{CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use opentelemetry_proto::tonic::collector::profiles::v1development::{
    ExportProfilesServiceRequest, ExportProfilesServiceResponse,
};
use prost::Message;

use super::{client_message, export as export_all, grpc_code, json, Status};
use crate::auth::Ingester;
use crate::error::{ApiError, RETRY_AFTER_SECS};
use crate::ingest::body;
use crate::ingest::openapi::{BinaryBody, OtlpExportRequest, OtlpExportResponse, OtlpStatus};
use crate::AppState;

/// How a request is encoded, and so its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Encoding {
    Protobuf,
    Json,
}

impl Encoding {
    /// The encoding a `Content-Type` names, if one OTLP/HTTP speaks.
    pub(super) fn of(headers: &HeaderMap) -> Option<Encoding> {
        let value = headers.get(CONTENT_TYPE)?.to_str().ok()?;
        let essence = value.split(';').next().unwrap_or("").trim();
        match essence.to_ascii_lowercase().as_str() {
            "application/x-protobuf" | "application/protobuf" => Some(Encoding::Protobuf),
            "application/json" => Some(Encoding::Json),
            _ => None,
        }
    }

    fn content_type(self) -> &'static str {
        match self {
            Encoding::Protobuf => "application/x-protobuf",
            Encoding::Json => "application/json",
        }
    }

    fn decode(self, body: &[u8]) -> Result<ExportProfilesServiceRequest, ApiError> {
        match self {
            Encoding::Protobuf => ExportProfilesServiceRequest::decode(body).map_err(|e| {
                ApiError::BadRequest(format!("not a protobuf ExportProfilesServiceRequest: {e}"))
            }),
            Encoding::Json => json::decode(body).map_err(|e| {
                ApiError::BadRequest(format!(
                    "not an OTLP/JSON ExportProfilesServiceRequest: {e}"
                ))
            }),
        }
    }

    fn answer(self, status: StatusCode, body: Vec<u8>) -> Response {
        (status, [(CONTENT_TYPE, self.content_type())], body).into_response()
    }

    fn success(self, response: &ExportProfilesServiceResponse) -> Response {
        let body = match self {
            Encoding::Protobuf => response.encode_to_vec(),
            Encoding::Json => {
                let value = match &response.partial_success {
                    None => serde_json::json!({}),
                    // int64 as a string, as the proto3 JSON mapping says.
                    Some(p) => serde_json::json!({"partialSuccess": {
                        "rejectedProfiles": p.rejected_profiles.to_string(),
                        "errorMessage": p.error_message,
                    }}),
                };
                value.to_string().into_bytes()
            }
        };
        self.answer(StatusCode::OK, body)
    }

    pub(super) fn error(self, e: &ApiError) -> Response {
        let status = http_status(e);
        let message = client_message(e);
        let code = grpc_code(e);
        let body = match self {
            Encoding::Protobuf => Status { code, message }.encode_to_vec(),
            Encoding::Json => serde_json::json!({"code": code, "message": message})
                .to_string()
                .into_bytes(),
        };
        let mut response = self.answer(status, body);
        let headers = response.headers_mut();
        if status == StatusCode::UNAUTHORIZED {
            headers.insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if status == StatusCode::SERVICE_UNAVAILABLE {
            headers.insert(RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER_SECS));
        }
        response
    }
}

/// The HTTP status of an error; OTLP/HTTP answers 400 for any data that
/// cannot be used.
fn http_status(e: &ApiError) -> StatusCode {
    match e {
        ApiError::BadRequest(_) | ApiError::Unprocessable(_) => StatusCode::BAD_REQUEST,
        ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
        ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
        ApiError::NotFound(_) => StatusCode::NOT_FOUND,
        ApiError::Conflict(_) => StatusCode::CONFLICT,
        ApiError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
        ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// [`Encoding::error`] in the request's encoding (JSON for another
/// content type), for a request refused before its handler runs.
pub(super) fn refusal(headers: &HeaderMap, e: ApiError) -> Response {
    Encoding::of(headers).unwrap_or(Encoding::Json).error(&e)
}

/// Take OpenTelemetry profiles over OTLP/HTTP.
///
/// What the OpenTelemetry eBPF profiler, a Collector's `otlp_http`
/// exporter or any OTLP exporter sends (signal `v1development`). Each
/// profile is stored once however often it is sent, labelled
/// `source=otlp`; a profile that cannot be kept is refused alone and
/// counted in `partial_success`. The same port also takes OTLP/gRPC over
/// HTTP/2, which is no HTTP/JSON operation: the method
/// `opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export`,
/// with the same token, answering in gRPC statuses.
#[utoipa::path(
    post,
    path = "/v1development/profiles",
    operation_id = "export_otlp_profiles",
    tag = "ingest",
    request_body(
        description = "An `ExportProfilesServiceRequest` in protocol buffers or OTLP/JSON, at \
                       most 32 MiB (128 MiB once a gzip `Content-Encoding` is undone)",
        content(
            (BinaryBody = "application/x-protobuf"),
            (OtlpExportRequest = "application/json"),
        ),
    ),
    responses(
        (status = 200, description = "An `ExportProfilesServiceResponse` in the request's encoding; \
            its `partial_success` counts the profiles refused and names each (the others are stored), \
            and names what was kept but changed",
            content(
                (BinaryBody = "application/x-protobuf"),
                (OtlpExportResponse = "application/json"),
            ),
        ),
        (status = 400, description = "Not an OTLP request (malformed protobuf or JSON, or a \
            dictionary whose entry 0 is not the zero value): a `google.rpc.Status`",
            content((BinaryBody = "application/x-protobuf"), (OtlpStatus = "application/json"))),
        (status = 401, description = "No bearer token, or an invalid or expired one",
            content((BinaryBody = "application/x-protobuf"), (OtlpStatus = "application/json"))),
        (status = 403, description = "The token may not send profiles of a service of the \
            request: nothing of it is stored",
            content((BinaryBody = "application/x-protobuf"), (OtlpStatus = "application/json"))),
        (status = 413, description = "The body exceeds 32 MiB, or inflates past 128 MiB (a gzip bomb)",
            content((BinaryBody = "application/x-protobuf"), (OtlpStatus = "application/json"))),
        (status = 415, description = "A content type other than protobuf or JSON",
            content((OtlpStatus = "application/json"))),
        (status = 503, description = "The database is unavailable (see `Retry-After`); retrying \
            stores nothing twice",
            content((BinaryBody = "application/x-protobuf"), (OtlpStatus = "application/json"))),
    ),
)]
pub(super) async fn export(
    State(state): State<AppState>,
    by: Result<Ingester, ApiError>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let encoding = Encoding::of(&headers);
    let answer = encoding.unwrap_or(Encoding::Json);
    let by = match by {
        Ok(by) => by,
        Err(e) => return answer.error(&e),
    };
    let Some(encoding) = encoding else {
        let given = headers
            .get(CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        let message = format!(
            "Content-Type {given:?} is not OTLP/HTTP's: send application/x-protobuf or \
             application/json"
        );
        let mut response = answer.error(&ApiError::BadRequest(message));
        *response.status_mut() = StatusCode::UNSUPPORTED_MEDIA_TYPE;
        return response;
    };
    let body = match body {
        // An empty protobuf message is a request with nothing in it.
        Ok(body) if body.is_empty() && encoding == Encoding::Protobuf => body,
        body => match body::received(body) {
            Ok(body) => body,
            Err(e) => return encoding.error(&e),
        },
    };
    let decode = move || encoding.decode(&body::decoded(&headers, body)?);
    match export_all(&state, &by, decode).await {
        Ok(exported) => encoding.success(&exported.response()),
        Err(e) => encoding.error(&e),
    }
}
