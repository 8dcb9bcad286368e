//! ODP's api-server: the front door.
//!
//! `POST /api/v1/profiles` records a profile request in Postgres, signs a
//! start command and publishes it to `odp.commands` keyed by the target
//! host; the host's agent answers on `odp.events`, which the pipeline turns
//! into the profile's status. Queries read the stored samples back as flame
//! graphs (JSON, folded, SVG) and top-function tables. Every `/api` route
//! but the OpenAPI document (`/api/openapi.json`, see `openapi/`) needs a
//! bearer token.

mod auth;
mod body_limit;
mod config;
mod control;
mod cron_schedule;
mod error;
mod extract;
mod formats;
mod ingest;
mod metrics;
mod openapi;
mod read_budget;
mod render;
#[cfg(test)]
mod router_tests;
mod routes;
pub mod scheduler;
mod security_headers;
mod service;
mod service_error;

pub use service::continuous::ContinuousLimits;
mod tls;
mod trigger_firings;
mod validate;
mod views;
mod web;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::{Extension, Json, Router};
use odp_core::command::CommandSigner;
use odp_store::ContinuousProfiles;
use odp_store::Database;
use odp_store::Profiles;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use auth::Grant;
pub use config::{Cli, CliCommand, ConfigError, ServeConfig};
pub use read_budget::{LimitOptions, ReadLimits};
pub use tls::generate_dev_cert;

use crate::auth::Authenticator;
use crate::control::dispatch::{Dispatcher, KafkaPublisher};
use crate::control::heartbeats::HeartbeatTracker;
use crate::control::Control;
use crate::error::ApiError;
use crate::metrics::ApiMetrics;
use crate::service::identities::IdentityIssuer;

#[derive(Clone)]
pub struct AppState {
    pub pool: Database,
    pub profiles: Profiles,
    pub auth: Arc<Authenticator>,
    pub dispatcher: Arc<Dispatcher>,
    /// Deploy, undeploy and stop requests, and the deployer.
    pub control: Arc<Control>,
    pub metrics: Arc<ApiMetrics>,
    /// Everything `/metrics` shows: `metrics` plus the process gauges.
    pub exposition: Arc<odp_metrics::Metrics>,
    /// How long a request may take (uploads twice as long); Postgres
    /// cancels statements running longer.
    pub request_timeout: Duration,
    /// Where alert channels may point: public addresses and the
    /// operator's allow-list.
    pub egress: Arc<odp_plumbing::egress::EgressPolicy>,
    /// Heavy reads' concurrency limit, read and import budgets.
    pub read_limits: Arc<ReadLimits>,
    /// Hosts one user's running runs may profile at once
    /// (`--max-run-hosts-per-user`).
    pub max_run_hosts_per_user: u64,
    /// The operator's bounds on continuous profiles' rates and budgets.
    pub continuous_limits: crate::ContinuousLimits,
    /// Issues agent identities with the command key and records them.
    pub identities: Arc<IdentityIssuer>,
}

/// Largest request body outside uploads.
const MAX_BODY_BYTES: u64 = 1 << 20;

pub fn app(state: AppState) -> Router {
    let (bounded, uploads, document) = route_parts();
    let document = openapi::document_json(&document);
    let timeout = |limit: Duration| {
        TimeoutLayer::with_status_code(axum::http::StatusCode::GATEWAY_TIMEOUT, limit)
    };
    bounded
        .merge(odp_metrics::router(state.exposition.clone()))
        .fallback(not_found)
        .layer(TraceLayer::new_for_http())
        .layer(timeout(state.request_timeout))
        .layer(RequestBodyLimitLayer::new(MAX_BODY_BYTES as usize))
        .layer(axum::middleware::from_fn(|request, next| {
            body_limit::refuse_declared_oversize(MAX_BODY_BYTES, request, next)
        }))
        // After the 1 MiB limit, which must not apply to uploads.
        .merge(uploads.layer(timeout(2 * state.request_timeout)))
        .layer(Extension(openapi::DocumentJson(document.into())))
        .layer(axum::middleware::from_fn_with_state(
            state.metrics.clone(),
            metrics::track,
        ))
        .with_state(state)
}

/// The routes under the global 1 MiB body limit, the upload routes (the
/// import and the ingest routes) with their own limits, and the OpenAPI
/// document of both: every route is registered with `routes!`, which reads
/// its path and methods from the handler's `#[utoipa::path]`, so the two
/// cannot drift (gRPC's method, no HTTP/JSON operation, is the one route
/// added without it).
fn route_parts() -> (Router<AppState>, Router<AppState>, utoipa::openapi::OpenApi) {
    let (bounded, mut document) = OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .routes(routes!(routes::profiles::start, routes::list::list))
        .merge(routes::profiles::router())
        .merge(routes::flamegraph::router())
        .merge(routes::issues::router())
        .merge(routes::hosts::router())
        .merge(routes::requests::router())
        .merge(routes::aggregate::router())
        .merge(routes::diff::router())
        .merge(routes::timeline::router())
        .merge(routes::schedules::router())
        .merge(routes::services::router())
        .merge(routes::continuous::router())
        .merge(routes::triggers::router())
        .merge(routes::runs::router())
        .merge(routes::rules::router())
        .merge(routes::channels::router())
        .merge(routes::agents::router())
        .merge(routes::enrollment::router())
        .routes(routes!(health))
        .routes(routes!(openapi::openapi_json))
        .split_for_parts();
    let (uploads, uploads_document) = routes::import::router()
        .merge(ingest::router())
        .split_for_parts();
    document.merge(uploads_document);
    (bounded, uploads, document)
}

/// Whether the database answers.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "platform",
    security(()),
    responses(
        (status = 200, description = "Ready", body = Object, example = json!({"status": "ok"})),
        (status = 503, description = "The database does not answer", body = openapi::ErrorBody),
    ),
)]
async fn health(
    state: axum::extract::State<AppState>,
) -> Result<Json<serde_json::Value>, ApiError> {
    state
        .pool
        .ping()
        .await
        .map_err(|e| ApiError::Unavailable(format!("database: {e}")))?;
    Ok(Json(serde_json::json!({ "status": "ok" })))
}

async fn not_found() -> ApiError {
    ApiError::NotFound("no such route".into())
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("invalid configuration: {0}")]
    Config(#[from] ConfigError),
    #[error("store: {0}")]
    Store(#[from] odp_store::StoreError),
    #[error("kafka: {0}")]
    Kafka(#[from] rdkafka::error::KafkaError),
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
}

/// Builds the state from configuration: connects to the database (applying
/// migrations), loads the command signing key, creates the producer.
pub async fn build_state(config: &ServeConfig) -> Result<AppState, ServeError> {
    config.validate()?;
    let pem = std::fs::read_to_string(&config.command_signing_key).map_err(|source| {
        ConfigError::Read {
            path: config.command_signing_key.clone(),
            source,
        }
    })?;
    let signer = CommandSigner::from_private_pem(&pem).map_err(ConfigError::from)?;
    let pool =
        Database::connect_and_migrate_with(&config.database_url, &config.pool_config()).await?;
    let identities = Arc::new(IdentityIssuer::new(&pem, &pool).map_err(ConfigError::from)?);
    let command_secs = config.start_ack_timeout_secs as i64;
    let kafka = config.kafka.validate().map_err(ConfigError::from)?;
    let heartbeats = HeartbeatTracker::spawn(
        control::heartbeats::consumer_config(&kafka),
        config.topics.events.clone(),
        identities.verifier(),
        pool.clone(),
    );
    let control = Control::new(
        pool.clone(),
        &config.deploy,
        command_secs,
        identities.clone(),
    )
    .map_err(ConfigError::from)?
    .with_heartbeats(heartbeats.clone());
    odp_store::block_cache().set_capacity((config.limits.block_cache_mb as usize) << 20);
    let mut registry = odp_metrics::Registry::default();
    let metrics = ApiMetrics::register(&mut registry);
    let publisher = Arc::new(KafkaPublisher::new(&kafka, &config.topics.commands)?);
    let dispatcher = Dispatcher::new(publisher, signer, config.command_ttl_secs, metrics.clone())
        .with_clocks(heartbeats);
    Ok(AppState {
        profiles: Profiles::new(pool.clone()),
        pool,
        auth: Arc::new(authenticator(config)?),
        dispatcher: Arc::new(dispatcher),
        control: Arc::new(control),
        metrics,
        exposition: Arc::new(odp_metrics::Metrics::new(registry)),
        request_timeout: config.request_timeout(),
        egress: Arc::new(config.alert_destinations.policy()),
        read_limits: Arc::new(ReadLimits::new(config.limits.clone())),
        max_run_hosts_per_user: config.max_run_hosts_per_user,
        continuous_limits: config.continuous,
        identities,
    })
}

fn authenticator(config: &ServeConfig) -> Result<Authenticator, ServeError> {
    let jwks = match &config.jwks_file {
        Some(path) => Some(
            std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                path: path.clone(),
                source,
            })?,
        ),
        None => None,
    };
    let secret = config.jwt_secret.as_deref().map(str::as_bytes);
    Ok(Authenticator::new(secret, jwks.as_deref()).map_err(ConfigError::from)?)
}

/// Marks starts that no agent acknowledged in time as expired, so users
/// see a clear end state instead of `dispatched` forever; and ends the
/// continuous segments whose agent went away without ending them, a few
/// minutes after their hour (an agent reports a segment's end as soon as
/// the hour is over, or its spool's windows when its broker is back).
async fn expire_unacknowledged(
    profiles: Profiles,
    continuous: ContinuousProfiles,
    after: Duration,
) {
    const SEGMENT_GRACE: Duration = Duration::from_secs(600);
    let mut tick = tokio::time::interval(Duration::from_secs(5));
    loop {
        tick.tick().await;
        match profiles.expire_unacknowledged(after).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(expired = n, "expired unacknowledged profile requests"),
            Err(e) => tracing::warn!(error = %e, "expiring unacknowledged requests failed"),
        }
        match continuous.close_overdue_segments(SEGMENT_GRACE).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(closed = n, "closed continuous segments no agent ended"),
            Err(e) => tracing::warn!(error = %e, "closing overdue continuous segments failed"),
        }
    }
}

pub async fn serve(
    config: ServeConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let state = build_state(&config).await?;
    tokio::spawn(state.control.clone().reconcile_forever());
    tokio::spawn(service::run_precision::watch_forever(state.clone()));
    if let Some(tracker) = state.control.heartbeats() {
        if let Some(reports) = tracker.take_firings() {
            tokio::spawn(trigger_firings::act_forever(state.clone(), reports));
        }
        let live_within = state.control.live_within();
        tokio::spawn(control::services_sync::sync_forever(
            state.pool.clone(),
            state.dispatcher.clone(),
            tracker,
            live_within,
        ));
    }
    tokio::spawn(expire_unacknowledged(
        state.profiles.clone(),
        ContinuousProfiles::new(state.pool.clone()),
        Duration::from_secs(config.start_ack_timeout_secs),
    ));
    if config.scheduler {
        let options = scheduler::SchedulerOptions::from_config(&config);
        tokio::spawn(scheduler::run(state.clone(), options));
    }
    let router = web::with_web_ui(app(state), config.web_dir.as_deref());
    let tls = config.tls_cert.is_some() && config.tls_key.is_some();
    // Last, so the web UI's fallback gets the headers too.
    let router = security_headers::with_security_headers(router, tls);
    if let (Some(cert), Some(key)) = (&config.tls_cert, &config.tls_key) {
        tls::serve_https(router, config.listen, cert, key, shutdown).await?;
        return Ok(());
    }
    let listener = tokio::net::TcpListener::bind(config.listen).await?;
    tracing::warn!(addr = %listener.local_addr()?, "api-server listening on plain HTTP (--insecure-http)");
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await?;
    Ok(())
}
