//! Pyroscope's push API, `POST /push.v1.PusherService/Push`: what the
//! Pyroscope SDKs of today (`pyroscope-io` 1.x, the Go, Java and Rust
//! ones) and Grafana Alloy send. It is a Connect unary call: a
//! `PushRequest` in protocol buffers, usually gzip-compressed, holding
//! series of labels (`service_name`, `__name__` and the user's tags), each
//! with pprof profiles and the client's id for each.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use odp_core::pprof;
use odp_core::pyroscope::{PushRequest, RawProfileSeries, RawSample};
use odp_store::Labels;
use prost::Message;

use super::{event_of_name, NAME_LABEL, SERVICE_LABEL};
use crate::auth::Ingester;
use crate::error::ApiError;
use crate::ingest::openapi::{BinaryBody, ConnectError};
use crate::ingest::pprof_events::{self, known_types};
use crate::ingest::{body, store, Incoming};
use crate::AppState;

/// Take profiles in Pyroscope's push API.
///
/// What Pyroscope's SDKs of today and Grafana Alloy's `pyroscope.write`
/// send: a Connect unary call whose `push.v1.PushRequest` holds series of
/// labels (`service_name` names the ODP service), each with pprof
/// profiles. Every profile is stored once however often it is sent,
/// labelled `source=pyroscope`; one that cannot be stored does not stop
/// the others, and the answer then names each one refused.
#[utoipa::path(
    post,
    path = "/push.v1.PusherService/Push",
    operation_id = "pyroscope_push",
    tag = "ingest",
    request_body(
        description = "A `push.v1.PushRequest` in protocol buffers, at most 32 MiB (128 MiB \
                       once a gzip `Content-Encoding` is undone)",
        content((BinaryBody = "application/proto")),
    ),
    responses(
        (status = 200, description = "Every profile stored, or stored before (a retry): an empty `push.v1.PushResponse`",
            content_type = "application/proto"),
        (status = 400, description = "A body that is not a `PushRequest`, or profiles refused (each named; the others are stored)", body = ConnectError),
        (status = 401, description = "No bearer token, or an invalid or expired one", body = ConnectError),
        (status = 403, description = "The token may not send profiles of a service of the request", body = ConnectError),
        (status = 413, description = "The body exceeds 32 MiB, or inflates past 128 MiB (a gzip bomb)", body = ConnectError),
        (status = 503, description = "The database is unavailable; retrying stores nothing twice", body = ConnectError),
    ),
)]
pub(super) async fn push(
    State(state): State<AppState>,
    by: Result<Ingester, ApiError>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    match push_all(&state, by, &headers, body).await {
        Ok(()) => (
            StatusCode::OK,
            [(CONTENT_TYPE, "application/proto")],
            Vec::new(),
        )
            .into_response(),
        Err(e) => connect_error(e),
    }
}

async fn push_all(
    state: &AppState,
    by: Result<Ingester, ApiError>,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<(), ApiError> {
    let by = by?;
    let content_type = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !matches!(
        content_type,
        "application/proto" | "application/protobuf" | "application/x-protobuf"
    ) {
        return Err(ApiError::BadRequest(format!(
            "Content-Type {content_type:?}: the push API takes application/proto"
        )));
    }
    let body = body::received(body)?;
    let headers = headers.clone();
    let profiles = tokio::task::spawn_blocking(move || decode(&headers, body))
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))??;
    let mut refused = Vec::new();
    for (i, profile) in profiles.into_iter().enumerate() {
        let stored = match profile {
            Ok(incoming) => store(state, &by, incoming).await.map(drop),
            Err(e) => Err(e),
        };
        match stored {
            Ok(()) => {}
            // Refused for who sent it or the server's state: the same
            // answer for each profile, so the first one says it.
            Err(
                e @ (ApiError::Forbidden(_) | ApiError::Unavailable(_) | ApiError::Internal(_)),
            ) => return Err(e),
            Err(e) => refused.push(format!("profile {}: {e}", i + 1)),
        }
    }
    if refused.is_empty() {
        Ok(())
    } else {
        Err(ApiError::BadRequest(refused.join("; ")))
    }
}

/// The request's profiles, each parsed or refused on its own.
fn decode(headers: &HeaderMap, body: Bytes) -> Result<Vec<Result<Incoming, ApiError>>, ApiError> {
    let body = body::decoded(headers, body)?;
    let request = PushRequest::decode(body)
        .map_err(|e| ApiError::BadRequest(format!("not a push.v1.PushRequest: {e}")))?;
    let mut out = Vec::new();
    for (s, series) in request.series.iter().enumerate() {
        let labels = match series_labels(series) {
            Ok(labels) => labels,
            Err(e) => {
                out.push(Err(ApiError::BadRequest(format!("series {}: {e}", s + 1))));
                continue;
            }
        };
        for sample in &series.samples {
            match profiles_of(&labels, sample) {
                Ok(incoming) => out.extend(incoming.into_iter().map(Ok)),
                Err(e) => out.push(Err(e)),
            }
        }
    }
    Ok(out)
}

/// A series' labels: its service, the profile type it names, and the rest.
struct SeriesLabels {
    service: String,
    name: Option<String>,
    host: Option<String>,
    labels: Labels,
}

fn series_labels(series: &RawProfileSeries) -> Result<SeriesLabels, String> {
    let mut service = None;
    let mut name = None;
    let mut host = None;
    let mut labels = Labels::new();
    for pair in &series.labels {
        match pair.name.as_str() {
            SERVICE_LABEL => service = Some(pair.value.clone()),
            NAME_LABEL => name = Some(pair.value.clone()),
            "hostname" | "host.name" => {
                host = Some(pair.value.clone());
                labels.insert(pair.name.clone(), pair.value.clone());
            }
            // Pyroscope's own bookkeeping (`__delta__`, `__session_id__`).
            key if key.starts_with("__") => {}
            key => {
                labels.insert(key.to_owned(), pair.value.clone());
            }
        }
    }
    let service = service.ok_or_else(|| format!("no {SERVICE_LABEL} label"))?;
    Ok(SeriesLabels {
        service,
        name,
        host,
        labels,
    })
}

/// The ODP profiles of one pushed pprof profile: one per event its sample
/// types measure, or just the one its series' `__name__` names.
fn profiles_of(series: &SeriesLabels, sample: &RawSample) -> Result<Vec<Incoming>, ApiError> {
    let profile = pprof::decode_message(&sample.raw_profile)
        .map_err(|e| ApiError::BadRequest(format!("not a usable pprof profile: {e}")))?;
    let types = pprof::sample_types(&profile)
        .map_err(|e| ApiError::BadRequest(format!("not a usable pprof profile: {e}")))?;
    let wanted = series.name.as_deref().and_then(event_of_name);
    let measures: Vec<_> = pprof_events::measures(&types)
        .into_iter()
        .filter(|m| wanted.is_none_or(|event| m.event == event))
        .collect();
    if measures.is_empty() {
        let names: Vec<String> = types.iter().map(|(n, u)| format!("{n}/{u}")).collect();
        return Err(ApiError::Unprocessable(format!(
            "sample types {names:?} measure no ODP event (ODP counts {})",
            known_types()
        )));
    }
    let mut labels = series.labels.clone();
    for (key, value) in pprof_events::sample_tags(&profile)? {
        labels.entry(key).or_insert(value);
    }
    let identity = if sample.id.is_empty() {
        super::super::digest_hex(&[series.service.as_bytes(), &sample.raw_profile])
    } else {
        format!("push/{}", sample.id)
    };
    measures
        .iter()
        .map(|measure| {
            Ok(Incoming {
                service: series.service.clone(),
                host: series.host.clone(),
                labels: labels.clone(),
                source: "pyroscope",
                parsed: pprof_events::parsed(&profile, measure)?.into(),
                identity: identity.clone(),
            })
        })
        .collect()
}

/// [`connect_error`], for a request refused before its handler runs.
pub(super) fn refusal(_: &HeaderMap, e: ApiError) -> Response {
    connect_error(e)
}

/// An error as the Connect protocol spells it, which the SDKs log.
fn connect_error(e: ApiError) -> Response {
    let (status, code) = match &e {
        ApiError::BadRequest(_) | ApiError::Unprocessable(_) => {
            (StatusCode::BAD_REQUEST, "invalid_argument")
        }
        ApiError::Unauthorized(_) => (StatusCode::UNAUTHORIZED, "unauthenticated"),
        ApiError::Forbidden(_) => (StatusCode::FORBIDDEN, "permission_denied"),
        ApiError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
        ApiError::Conflict(_) => (StatusCode::CONFLICT, "already_exists"),
        ApiError::PayloadTooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, "resource_exhausted"),
        ApiError::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
        ApiError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
    };
    let message = e.to_string();
    (
        status,
        Json(serde_json::json!({ "code": code, "message": message })),
    )
        .into_response()
}
