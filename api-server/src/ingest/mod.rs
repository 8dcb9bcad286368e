//! Profiles pushed by the profilers teams already run: Pyroscope's SDKs and
//! Grafana Alloy ([`pyroscope`]). Each pushed profile becomes a finished
//! profile of its service, stored the way file imports are, so every read,
//! comparison, aggregate and detection rule works on it, and labelled with
//! where it came from (`source`).
//!
//! Clients retry: a profile's id is derived from what identifies it on the
//! wire (the client's own sample id, or the request's content), so a retry
//! is answered with the profile stored the first time and no sample counts
//! twice.

mod body;
mod openapi;
mod otlp;
mod pprof_events;
mod pyroscope;

use axum::extract::DefaultBodyLimit;
use odp_core::model::EventKind;
use odp_store::{ImportedMeta, IngestedProfile, Labels};
use sha2::{Digest, Sha256};
use tower_http::trace::TraceLayer;
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

use crate::auth::Ingester;
use crate::error::ApiError;
use crate::formats::{framed_to_snapshot, imported_header, Framed, DEFAULT_HOST};
use crate::validate::{validate_labels, validate_name};
use crate::AppState;

pub(crate) use body::MAX_INGEST_BYTES;

/// The ingest routes, with their own body limit (they are merged after
/// the API's 1 MiB one) and tracing. Each protocol's router refuses a body
/// declared too large itself ([`body::refuse_declared_oversize`]), in the
/// error shape its clients read.
pub(crate) fn router() -> OpenApiRouter<AppState> {
    pyroscope::router()
        .merge(otlp::router())
        .layer(DefaultBodyLimit::max(MAX_INGEST_BYTES))
        .layer(TraceLayer::new_for_http())
}

/// One pushed profile, parsed, before it is stored.
#[derive(Debug)]
pub(crate) struct Incoming {
    pub service: String,
    /// Where the samples were taken; [`DEFAULT_HOST`] when the client
    /// does not say.
    pub host: Option<String>,
    /// The client's labels; `source` is set on store.
    pub labels: Labels,
    /// `pyroscope` or `otlp`: the `source` label and the profile's target.
    pub source: &'static str,
    pub parsed: Framed,
    /// What identifies this profile across the client's retries.
    pub identity: String,
}

/// Stores `incoming` as a finished profile, once however often it is
/// sent. `None` when it holds no samples: an idle process pushes empty
/// profiles, which are nothing to store and no error.
pub(crate) async fn store(
    state: &AppState,
    by: &Ingester,
    mut incoming: Incoming,
) -> Result<Option<IngestedProfile>, ApiError> {
    validate_name("service", &incoming.service)?;
    by.require_ingest(&incoming.service)?;
    let host = incoming.host.as_deref().unwrap_or(DEFAULT_HOST).to_owned();
    validate_name("host", &host)?;
    incoming
        .labels
        .insert("source".to_owned(), incoming.source.to_owned());
    validate_labels(&incoming.labels)?;
    if incoming.parsed.stacks.iter().all(|s| s.count == 0) {
        return Ok(None);
    }
    let event = incoming.parsed.event.unwrap_or(EventKind::CpuClock);
    let header = imported_header(
        profile_id(&incoming.service, event, &incoming.identity),
        &host,
        incoming.source,
        event,
    );
    // Interning a large profile's frames and stacks is CPU work: off the
    // async threads, which serve the other requests meanwhile.
    let (parsed, now_ms) = (incoming.parsed, chrono::Utc::now().timestamp_millis());
    let snapshot = tokio::task::spawn_blocking(move || framed_to_snapshot(parsed, header, now_ms))
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))??;
    state
        .read_limits
        .check_import(snapshot.stacks.len(), snapshot.frames.len())?;
    let meta = ImportedMeta {
        service: &incoming.service,
        format: incoming.source,
        requested_by: &by.0.subject,
        labels: &incoming.labels,
    };
    let stored = odp_store::ingest_profile(&state.pool, &snapshot, meta).await?;
    if let IngestedProfile::Stored(row) = &stored {
        tracing::info!(profile_id = %row.id, service = %row.service, source = incoming.source,
            samples = snapshot.total_samples(), by = %by.0.subject, "profile ingested");
    }
    Ok(Some(stored))
}

/// The profile id of a pushed profile: the same for every retry of it,
/// and distinct per service and event, since one pushed message may hold
/// profiles of several events.
fn profile_id(service: &str, event: EventKind, identity: &str) -> Uuid {
    let digest = Sha256::new()
        .chain_update(service.as_bytes())
        .chain_update([0])
        .chain_update(event.as_str().as_bytes())
        .chain_update([0])
        .chain_update(identity.as_bytes())
        .finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}

/// A digest of content that identifies a push, for [`Incoming::identity`].
pub(crate) fn digest_hex(parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_name_the_same_profile_and_other_pushes_another() {
        let id = profile_id("checkout", EventKind::CpuClock, "sample-1");
        assert_eq!(id, profile_id("checkout", EventKind::CpuClock, "sample-1"));
        assert_ne!(id, profile_id("checkout", EventKind::Wall, "sample-1"));
        assert_ne!(id, profile_id("checkout", EventKind::CpuClock, "sample-2"));
        assert_ne!(id, profile_id("search", EventKind::CpuClock, "sample-1"));
        // Length-prefixed parts: moving a byte between parts changes it.
        assert_ne!(digest_hex(&[b"ab", b"c"]), digest_hex(&[b"a", b"bc"]));
    }
}
