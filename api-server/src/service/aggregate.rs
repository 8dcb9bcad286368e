//! A service's flame graph across its hosts and a time range: the two-level
//! merge of Atys (per host, then across hosts), optionally only some hosts,
//! threads and frames.

use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::{DateTime, Utc};
use odp_api_types::AggregateJson;
use odp_core::filter::{StackFilter, ThreadFilter};
use odp_core::EventKind;
use odp_store::{CoverageByEvent, Read, ReadScope};

use crate::render::{Format, Orientation};
use crate::service::queries::{render_merged, MergedTitle, TreeParams};
use crate::service_error::ServiceError;
use crate::AppState;

/// A service's aggregate: which service and range, and what to read of it.
#[derive(Debug)]
pub(crate) struct ServiceQuery {
    pub(crate) service: String,
    pub(crate) since: DateTime<Utc>,
    pub(crate) until: DateTime<Utc>,
    /// Only these hosts; every host when empty.
    pub(crate) hosts: Vec<String>,
    pub(crate) thread: Option<ThreadFilter>,
    pub(crate) stacks: StackFilter,
    pub(crate) event: Option<EventKind>,
}

impl ServiceQuery {
    fn read(&self) -> Read {
        Read {
            scope: ReadScope::Service {
                service: self.service.clone(),
                hosts: self.hosts.clone(),
            },
            from: Some(self.since),
            to: Some(self.until),
            thread: self.thread.clone(),
            stacks: self.stacks.clone(),
            event: self.event,
        }
    }
}

/// The aggregate `query` asks for, answered as `format`.
pub(crate) async fn aggregate(
    state: &AppState,
    query: ServiceQuery,
    format: Format,
    orientation: Orientation,
    tree: TreeParams,
) -> Result<Response, ServiceError> {
    let read = query.read();
    let ServiceQuery {
        service,
        since,
        until,
        ..
    } = query;
    let title = |sampled_hosts: usize| MergedTitle {
        title: format!(
            "{service} on {sampled_hosts} hosts, {} .. {}",
            since.to_rfc3339(),
            until.to_rfc3339()
        ),
        file_stem: format!("aggregate-{service}"),
        time_nanos: since.timestamp_nanos_opt(),
    };
    // Only the JSON answer carries it: the other formats skip the query.
    let coverage = match format {
        Format::Json => odp_store::read_coverage(&state.pool, &read).await?,
        _ => CoverageByEvent::default(),
    };
    render_merged(state, &read, format, orientation, tree, title, |parts| {
        Json(AggregateJson {
            coverage: coverage.of(parts.event),
            service: service.clone(),
            since,
            until,
            event: parts.event,
            units: parts.units,
            profiles: parts.profiles,
            snapshots: parts.snapshots,
            samples: parts.samples,
            hosts: parts.hosts,
            root: parts.root,
        })
        .into_response()
    })
    .await
}
