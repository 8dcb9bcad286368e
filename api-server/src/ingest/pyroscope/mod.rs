//! Pyroscope's ingest APIs, so its SDKs and Grafana Alloy push to ODP by
//! changing only the server address: the push API of today ([`push`]) and
//! the older `/ingest` ([`legacy`]) that Alloy's `pyroscope.write`, the
//! Java agent and older SDKs use. The token goes in `Authorization:
//! Bearer`, which every one of them can send (the SDKs' `http_headers`,
//! Alloy's `bearer_token`).

mod legacy;
mod push;

use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use odp_core::model::EventKind;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::ApiError;
use crate::ingest::body::refuse_declared_oversize;
use crate::AppState;

/// The label naming the service, in the push API.
const SERVICE_LABEL: &str = "service_name";
/// The label naming the profile type, in the push API.
const NAME_LABEL: &str = "__name__";

pub(super) fn router() -> OpenApiRouter<AppState> {
    let ingest =
        OpenApiRouter::new()
            .routes(routes!(legacy::ingest))
            .layer(axum::middleware::from_fn(|request, next| {
                refuse_declared_oversize(api_error, request, next)
            }));
    let push = OpenApiRouter::new()
        .routes(routes!(push::push))
        .layer(axum::middleware::from_fn(|request, next| {
            refuse_declared_oversize(push::refusal, request, next)
        }));
    ingest.merge(push)
}

/// `/ingest` answers errors as the rest of the API does.
fn api_error(_: &HeaderMap, e: ApiError) -> Response {
    e.into_response()
}

/// The event a push series' `__name__` asks for, when it names one of
/// several a profile could hold; `None` lets the sample types decide.
fn event_of_name(name: &str) -> Option<EventKind> {
    match name {
        "process_cpu" | "cpu" => Some(EventKind::CpuClock),
        "wall" => Some(EventKind::Wall),
        "block" | "mutex" | "lock" => Some(EventKind::Lock),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_type_names_pick_events() {
        assert_eq!(event_of_name("process_cpu"), Some(EventKind::CpuClock));
        assert_eq!(event_of_name("mutex"), Some(EventKind::Lock));
        assert_eq!(event_of_name("memory"), None, "alloc and in-use both");
    }
}
