//! The OpenAPI 3 document, served at `GET /api/openapi.json`.
//!
//! Every route is registered through `utoipa_axum`'s `routes!`, which
//! takes the path and methods from the handler's `#[utoipa::path]`, so
//! the router and the document come from one source and cannot drift.
//! This module holds what the handlers share: the bearer-token security
//! scheme, the error body and the error responses.
//!
//! The document needs no token, like `/healthz`: it describes the API,
//! holds nothing about its data, and clients and test tools read it
//! before they have a token.

use std::sync::Arc;

use axum::http::header;
use axum::response::IntoResponse;
use axum::Extension;
pub(crate) use odp_api_types::{ErrorBody, ErrorCode, ErrorDetail};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{IntoResponses, Modify, OpenApi};

/// The document's description and what no handler carries: the security
/// scheme, the tags, and `/metrics`, which `odp-metrics` routes.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "ODP",
        description = "On-demand profiling: start and stop profiles of processes on hosts, \
                       read them as flame graphs and tables, compare them, schedule them.",
    ),
    modifiers(&BearerToken),
    security(("bearer" = [])),
    paths(metrics),
    components(schemas(ErrorBody)),
    tags(
        (name = "profiles", description = "Starting, stopping, finding and importing profiles"),
        (name = "queries", description = "Flame graphs, tables, aggregates and diffs"),
        (name = "control", description = "Hosts, agent deploys and control requests"),
        (name = "agents", description = "Agent identities: certificates binding an agent's key to its host, and the one-time tokens agents enroll with"),
        (name = "schedules", description = "Cron schedules of profiles"),
        (name = "services", description = "Services defined once, and the live hosts that run them"),
        (name = "continuous", description = "Services profiled always, at a low rate and within a CPU budget per host"),
        (name = "triggers", description = "Profile a service's host when its CPU or memory growth crosses a threshold, with a cooldown and a fleet-wide cap"),
        (name = "runs", description = "A service profiled on hosts chosen from those that run it, stopped when precise"),
        (name = "rules", description = "Common-issue detection rules and their re-analysis of past profiles"),
        (name = "channels", description = "Alert channels (webhooks, email) and the log of their deliveries"),
        (name = "ingest", description = "Profiles pushed by the profilers teams already run: OpenTelemetry's (OTLP), Pyroscope's SDKs and Grafana Alloy, with an ingest token (docs/ingest.md)"),
        (name = "platform", description = "Health, metrics and this document"),
    ),
)]
pub(crate) struct ApiDoc;

/// `bearer`: a JWT in `Authorization: Bearer <token>`.
struct BearerToken;

impl Modify for BearerToken {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .description(Some(
                        "HS256 (or JWKS-verified) JWT with `exp`, `nbf`, `iss` = odp, \
                         `aud` = odp-api and a `role` claim: viewer, profiler, admin, or \
                         ingest (sends profiles of its `services` to the ingest routes and \
                         reads nothing)",
                    ))
                    .build(),
            ),
        );
    }
}

/// The document as `app` builds it: every route's path item plus
/// [`ApiDoc`].
#[cfg(test)]
pub(crate) fn document() -> utoipa::openapi::OpenApi {
    crate::route_parts().2
}

/// The document as served: `document` in JSON, with its response
/// links' fields spelled as OpenAPI spells them (utoipa 5.5 serializes
/// `Link` in snake_case: `operation_id` where the spec says `operationId`).
pub(crate) fn document_json(document: &utoipa::openapi::OpenApi) -> String {
    let mut value = serde_json::to_value(document).expect("the OpenAPI document serializes");
    let operations = value["paths"]
        .as_object_mut()
        .into_iter()
        .flat_map(|paths| paths.values_mut())
        .filter_map(|item| item.as_object_mut())
        .flat_map(|item| item.values_mut());
    for operation in operations {
        let responses = operation["responses"].as_object_mut().into_iter();
        for response in responses.flat_map(|r| r.values_mut()) {
            let Some(links) = response.get_mut("links").and_then(|l| l.as_object_mut()) else {
                continue;
            };
            for link in links.values_mut().filter_map(|l| l.as_object_mut()) {
                for (snake, camel) in [
                    ("operation_id", "operationId"),
                    ("operation_ref", "operationRef"),
                    ("request_body", "requestBody"),
                ] {
                    if let Some(field) = link.remove(snake) {
                        link.insert(camel.to_owned(), field);
                    }
                }
            }
        }
    }
    value.to_string()
}

/// What any authenticated endpoint may answer besides its own results.
/// Never built: the derive documents the statuses `ApiError` produces.
#[allow(dead_code)]
#[derive(IntoResponses)]
pub(crate) enum CommonErrors {
    /// Malformed input: a query, path or body that does not parse.
    #[response(status = 400)]
    BadRequest(#[to_schema] ErrorBody),
    /// No bearer token, or an invalid or expired one.
    #[response(status = 401)]
    Unauthorized(#[to_schema] ErrorBody),
    /// The token's role or services do not allow this.
    #[response(status = 403)]
    Forbidden(#[to_schema] ErrorBody),
    /// Values that parse but are not acceptable.
    #[response(status = 422)]
    Invalid(#[to_schema] ErrorBody),
    /// The database is unavailable; retry later.
    #[response(status = 503)]
    Unavailable(#[to_schema] ErrorBody),
}

/// What `POST /api/v1/agents/enroll` answers instead of a certificate.
/// Never built, like [`CommonErrors`].
#[allow(dead_code)]
#[derive(IntoResponses)]
pub(crate) enum EnrollmentRefusals {
    /// Malformed input: a body that does not parse.
    #[response(status = 400)]
    BadRequest(#[to_schema] ErrorBody),
    /// No enrollment token has this secret.
    #[response(status = 401)]
    Unauthorized(#[to_schema] ErrorBody),
    /// The token was revoked, has expired, or is for another host.
    #[response(status = 403)]
    Forbidden(#[to_schema] ErrorBody),
    /// Every use of the token was taken.
    #[response(status = 409)]
    Conflict(#[to_schema] ErrorBody),
    /// A bad host or public key.
    #[response(status = 422)]
    Invalid(#[to_schema] ErrorBody),
    /// The database is unavailable; retry later.
    #[response(status = 503)]
    Unavailable(#[to_schema] ErrorBody),
}

/// The named profile, schedule or request does not exist.
#[allow(dead_code)]
#[derive(IntoResponses)]
#[response(status = 404)]
pub(crate) struct NotFound(#[to_schema] ErrorBody);

/// The serialized document, shared by every request for it.
#[derive(Clone)]
pub(crate) struct DocumentJson(pub Arc<str>);

/// The OpenAPI 3 document of this API.
#[utoipa::path(
    get,
    path = "/api/openapi.json",
    tag = "platform",
    security(()),
    responses((status = 200, description = "This document", content_type = "application/json", body = Object)),
)]
pub(crate) async fn openapi_json(
    Extension(document): Extension<DocumentJson>,
) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        document.0.to_string(),
    )
}

/// Prometheus metrics of the api-server (see docs/operations.md, Metrics).
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "platform",
    security(()),
    responses((status = 200, description = "OpenMetrics text exposition", content_type = "application/openmetrics-text", body = String)),
)]
#[allow(dead_code)]
fn metrics() {}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    /// Every `$ref` in `value`.
    fn references<'a>(value: &'a Value, found: &mut Vec<&'a str>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(target)) = map.get("$ref") {
                    found.push(target);
                }
                map.values().for_each(|v| references(v, found));
            }
            Value::Array(items) => items.iter().for_each(|v| references(v, found)),
            _ => {}
        }
    }

    /// The document the web UI's types are generated from
    /// (`web/openapi.json`, read by `npm run gen:api`) is this server's.
    /// `ODP_BLESS=1` rewrites it.
    #[test]
    fn the_web_uis_copy_of_the_document_is_current() {
        let served: Value =
            serde_json::from_str(&super::document_json(&super::document())).unwrap();
        let pretty = serde_json::to_string_pretty(&served).unwrap() + "\n";
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../web/openapi.json");
        if std::env::var_os("ODP_BLESS").is_some() {
            std::fs::write(path, &pretty).unwrap();
        }
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            committed == pretty,
            "web/openapi.json differs from the served document: \
             run `ODP_BLESS=1 cargo test -p odp-api-server the_web_uis_copy` \
             and `npm run gen:api` in web/"
        );
    }

    #[test]
    fn every_reference_resolves_to_a_component() {
        let document = serde_json::to_value(super::document()).unwrap();
        let mut found = Vec::new();
        references(&document, &mut found);
        assert!(!found.is_empty());
        for target in found {
            let pointer = target
                .strip_prefix('#')
                .unwrap_or_else(|| panic!("{target} is local"));
            assert!(
                document.pointer(pointer).is_some(),
                "{target} does not resolve"
            );
        }
    }

    #[test]
    fn links_name_operations_that_exist() {
        let document: Value =
            serde_json::from_str(&super::document_json(&super::document())).unwrap();
        let ids: Vec<&Value> = document["paths"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|item| item.as_object().unwrap().values())
            .map(|operation| &operation["operationId"])
            .collect();
        let mut links = 0;
        for item in document["paths"].as_object().unwrap().values() {
            for operation in item.as_object().unwrap().values() {
                for response in operation["responses"].as_object().unwrap().values() {
                    for link in response["links"]
                        .as_object()
                        .into_iter()
                        .flat_map(|l| l.values())
                    {
                        links += 1;
                        assert!(ids.contains(&&link["operationId"]), "{link}");
                    }
                }
            }
        }
        assert!(links > 0);
    }

    #[test]
    fn operation_ids_are_unique_for_links_to_name_them() {
        let document = serde_json::to_value(super::document()).unwrap();
        let mut ids: Vec<&str> = document["paths"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|item| item.as_object().unwrap().values())
            .map(|operation| operation["operationId"].as_str().unwrap())
            .collect();
        let count = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), count, "{ids:?}");
    }

    #[test]
    fn only_health_metrics_the_document_and_enrollment_are_public() {
        let document = serde_json::to_value(super::document()).unwrap();
        let mut public = Vec::new();
        for (path, item) in document["paths"].as_object().unwrap() {
            for operation in item.as_object().unwrap().values() {
                if operation["security"]
                    .as_array()
                    .is_some_and(|s| s.iter().any(|r| r == &serde_json::json!({})))
                {
                    public.push(path.as_str());
                }
            }
        }
        public.sort_unstable();
        // Enrollment's credential is the enrollment token in its body.
        assert_eq!(
            public,
            [
                "/api/openapi.json",
                "/api/v1/agents/enroll",
                "/healthz",
                "/metrics"
            ]
        );
    }
}
