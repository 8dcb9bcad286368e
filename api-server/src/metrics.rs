//! The api-server's Prometheus metrics: requests by route and status,
//! their latency, and commands published to Kafka.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use odp_metrics::Registry;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: String,
    /// The route template (`/api/v1/profiles/{id}`), never the raw path,
    /// so ids do not explode the label space.
    route: String,
    status: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct CommandLabels {
    pub action: &'static str,
    pub outcome: &'static str,
}

pub struct ApiMetrics {
    requests: Family<RequestLabels, Counter>,
    latency: Family<RouteLabels, Histogram>,
    commands: Family<CommandLabels, Counter>,
}

impl ApiMetrics {
    pub fn register(registry: &mut Registry) -> Arc<Self> {
        let metrics = ApiMetrics {
            requests: Family::default(),
            latency: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.001, 2.0, 16))
            }),
            commands: Family::default(),
        };
        registry.register(
            "odp_api_requests",
            "HTTP requests answered, by method, route and status",
            metrics.requests.clone(),
        );
        registry.register(
            "odp_api_request_duration_seconds",
            "Time to answer a request, by route",
            metrics.latency.clone(),
        );
        registry.register(
            "odp_api_commands",
            "Signed commands published to Kafka, by action and outcome",
            metrics.commands.clone(),
        );
        registry.register_collector(Box::new(BlockCacheCollector));
        Arc::new(metrics)
    }

    /// Counts a command publication (`outcome`: published or failed).
    pub fn command(&self, action: &'static str, outcome: &'static str) {
        self.commands
            .get_or_create(&CommandLabels { action, outcome })
            .inc();
    }
}

/// The store's cache of service blocks (`--block-cache-mb`), read at
/// each scrape.
#[derive(Debug)]
struct BlockCacheCollector;

impl Collector for BlockCacheCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let stats = odp_store::block_cache().stats();
        for (name, help, value) in [
            (
                "odp_block_cache_hits",
                "Service blocks a read found in memory",
                stats.hits,
            ),
            (
                "odp_block_cache_misses",
                "Service blocks a read fetched from the database",
                stats.misses,
            ),
            (
                "odp_block_cache_evictions",
                "Service blocks dropped to stay within the cache's bytes",
                stats.evictions,
            ),
        ] {
            let counter = ConstCounter::new(value);
            counter.encode(encoder.encode_descriptor(
                name,
                help,
                None,
                counter.metric_type(),
            )?)?;
        }
        for (name, help, value) in [
            (
                "odp_block_cache_bytes",
                "Bytes of service blocks kept in memory",
                stats.bytes,
            ),
            (
                "odp_block_cache_blocks",
                "Service blocks kept in memory",
                stats.blocks,
            ),
            (
                "odp_block_cache_capacity_bytes",
                "Most bytes of service blocks kept",
                stats.capacity_bytes,
            ),
        ] {
            let gauge = ConstGauge::new(value as i64);
            gauge.encode(encoder.encode_descriptor(name, help, None, gauge.metric_type())?)?;
        }
        Ok(())
    }
}

/// Middleware counting and timing every request.
pub(crate) async fn track(
    State(metrics): State<Arc<ApiMetrics>>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let method = request.method().as_str().to_owned();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let response = next.run(request).await;
    metrics
        .latency
        .get_or_create(&RouteLabels {
            route: route.clone(),
        })
        .observe(started.elapsed().as_secs_f64());
    metrics
        .requests
        .get_or_create(&RequestLabels {
            method,
            route,
            status: response.status().as_u16(),
        })
        .inc();
    response
}
