//! OpenTelemetry profiles (OTLP, signal `v1development`), so the
//! OpenTelemetry eBPF profiler, an OpenTelemetry Collector or any OTLP
//! exporter sends to ODP: `POST /v1development/profiles` over HTTP in
//! protocol buffers or OTLP/JSON ([`http`]), and the gRPC method
//! `opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export`
//! on the same port over HTTP/2 ([`grpc`]). The token goes in
//! `Authorization: Bearer`, as the exporters' `headers` send it.
//!
//! Both transports decode to one `ExportProfilesServiceRequest` ([`json`]
//! reads OTLP/JSON into the same messages), which [`map`] turns into ODP
//! profiles, one per OTLP profile (and one per linked trace of it), each
//! stored by [`crate::ingest::store`] as Pyroscope's pushes are. A profile
//! that cannot be kept is refused alone and counted in the answer's
//! `partial_success`, which also says what was kept but changed (labels
//! dropped, links past the bound), as OTLP lets a server warn.

mod dictionary;
#[cfg(test)]
mod fuzz;
mod grpc;
mod http;
mod json;
mod labels;
mod map;
#[cfg(test)]
mod speed;
#[cfg(test)]
mod tests;
mod values;

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use axum::routing::post;
use opentelemetry_proto::tonic::collector::profiles::v1development::{
    ExportProfilesPartialSuccess, ExportProfilesServiceRequest, ExportProfilesServiceResponse,
};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Ingester;
use crate::error::ApiError;
use crate::ingest::body::refuse_declared_oversize;
use crate::ingest::{store, Incoming};
use crate::AppState;

/// The gRPC method.
pub(crate) const GRPC_PATH: &str =
    "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export";
/// Profiles of one request stored at once: the parts of linked traces
/// are small, and a store waits on the database more than it works.
const STORES_AT_ONCE: usize = 4;
/// Most messages `partial_success.error_message` lists.
const MAX_MESSAGES: usize = 20;

/// OTLP/HTTP, documented, and gRPC, which is no HTTP/JSON operation (the
/// OTLP/HTTP operation's description names it), each refusing a body
/// declared too large in its own error shape.
pub(super) fn router() -> OpenApiRouter<AppState> {
    let http = OpenApiRouter::new()
        .routes(routes!(http::export))
        .layer(axum::middleware::from_fn(|request, next| {
            refuse_declared_oversize(http::refusal, request, next)
        }));
    let grpc = OpenApiRouter::new()
        .route(GRPC_PATH, post(grpc::export))
        .layer(axum::middleware::from_fn(|request, next| {
            refuse_declared_oversize(grpc::refusal, request, next)
        }));
    http.merge(grpc)
}

/// What an export did, for its answer.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Exported {
    /// OTLP profiles refused.
    pub rejected: i64,
    /// Why, then what was kept but changed.
    pub messages: Vec<String>,
}

impl Exported {
    pub(crate) fn response(&self) -> ExportProfilesServiceResponse {
        if self.rejected == 0 && self.messages.is_empty() {
            return ExportProfilesServiceResponse::default();
        }
        let shown = self.messages.iter().take(MAX_MESSAGES).cloned();
        let mut error_message = shown.collect::<Vec<_>>().join("; ");
        if self.messages.len() > MAX_MESSAGES {
            error_message.push_str(&format!(
                "; and {} more",
                self.messages.len() - MAX_MESSAGES
            ));
        }
        ExportProfilesServiceResponse {
            partial_success: Some(ExportProfilesPartialSuccess {
                rejected_profiles: self.rejected,
                error_message,
            }),
        }
    }
}

/// Decodes, maps and stores a request's profiles. `Err` is an answer for
/// the whole request: a request that is not one (400), a token that may
/// not send one of its services (403, and nothing is stored), or the
/// server failing (503 or 500: the client retries, and what was stored
/// is not stored twice).
pub(crate) async fn export(
    state: &AppState,
    by: &Ingester,
    decode: impl FnOnce() -> Result<ExportProfilesServiceRequest, ApiError> + Send + 'static,
) -> Result<Exported, ApiError> {
    let started = Instant::now();
    let mapped = tokio::task::spawn_blocking(move || map::map(&decode()?))
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))??;
    let mapped_in = started.elapsed();
    let mut services = HashSet::new();
    for incoming in mapped.profiles.iter().flatten().flatten() {
        if services.insert(incoming.service.as_str()) {
            by.require_ingest(&incoming.service)?;
        }
    }
    // Each refused profile's message, by its place in the request.
    let mut refused: BTreeMap<usize, String> = BTreeMap::new();
    let mut stores = JoinSet::new();
    let turns = Arc::new(Semaphore::new(STORES_AT_ONCE));
    for (i, profile) in mapped.profiles.into_iter().enumerate() {
        let parts = match profile {
            Ok(parts) => parts,
            Err(message) => {
                refused.insert(i, message);
                continue;
            }
        };
        if let Err(e) = within_import_limits(state, &parts) {
            refused.insert(i, e.to_string());
            continue;
        }
        for part in parts {
            let (state, by, turns) = (state.clone(), by.clone(), turns.clone());
            stores.spawn(async move {
                let _turn = turns.acquire_owned().await;
                (i, store(&state, &by, part).await)
            });
        }
    }
    while let Some(done) = stores.join_next().await {
        let (i, stored) = done.map_err(|e| ApiError::Internal(e.to_string()))?;
        match stored {
            Ok(_) => {}
            // The stores still running are dropped (rolled back); what
            // was stored stays, as a retry would store it.
            Err(
                e @ (ApiError::Unavailable(_) | ApiError::Internal(_) | ApiError::Forbidden(_)),
            ) => return Err(e),
            // Checked while mapping, so not expected.
            Err(e) => {
                tracing::warn!(error = %e, "otlp profile refused while storing");
                refused.entry(i).or_insert_with(|| e.to_string());
            }
        }
    }
    tracing::debug!(
        decode_map_ms = mapped_in.as_secs_f64() * 1e3,
        store_ms = (started.elapsed() - mapped_in).as_secs_f64() * 1e3,
        refused = refused.len(),
        "otlp export"
    );
    Ok(Exported {
        rejected: refused.len() as i64,
        messages: refused.into_values().chain(mapped.warnings).collect(),
    })
}

/// The server's import limits (distinct stacks and frames) for every
/// part of one OTLP profile, checked before any part is stored.
fn within_import_limits(state: &AppState, parts: &[Incoming]) -> Result<(), ApiError> {
    let stacks: usize = parts.iter().map(|p| p.parsed.stacks.len()).sum();
    let frames: HashSet<&odp_core::Frame> = parts.iter().flat_map(|p| &p.parsed.frames).collect();
    Ok(state.read_limits.check_import(stacks, frames.len())?)
}

/// The gRPC status code an error stands for, which OTLP/HTTP's error
/// bodies (`google.rpc.Status`) carry too.
pub(crate) fn grpc_code(e: &ApiError) -> i32 {
    match e {
        ApiError::BadRequest(_) | ApiError::Unprocessable(_) => 3, // INVALID_ARGUMENT
        ApiError::NotFound(_) => 5,                                // NOT_FOUND
        ApiError::Conflict(_) => 6,                                // ALREADY_EXISTS
        ApiError::Forbidden(_) => 7,                               // PERMISSION_DENIED
        ApiError::PayloadTooLarge(_) => 8,                         // RESOURCE_EXHAUSTED
        ApiError::Internal(_) => 13,                               // INTERNAL
        ApiError::Unavailable(_) => 14,                            // UNAVAILABLE
        ApiError::Unauthorized(_) => 16,                           // UNAUTHENTICATED
    }
}

/// What a client is told of an error: internal details stay in the log.
pub(crate) fn client_message(e: &ApiError) -> String {
    match e {
        ApiError::Internal(detail) => {
            tracing::error!(error = %detail, "internal error");
            "internal error; see the server log".to_owned()
        }
        other => other.to_string(),
    }
}

/// `google.rpc.Status`, the body of OTLP/HTTP's errors.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Status {
    #[prost(int32, tag = "1")]
    pub code: i32,
    #[prost(string, tag = "2")]
    pub message: String,
}
