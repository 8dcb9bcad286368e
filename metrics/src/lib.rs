//! Prometheus metrics shared by ODP's three services: each builds its own
//! metrics into a [`Registry`], and this crate adds the process gauges
//! (CPU seconds, resident memory) and serves `GET /metrics` in the
//! OpenMetrics text format, either on a route of an existing axum app
//! (the api-server) or on a listener of its own (pipeline, agent).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use prometheus_client::metrics::gauge::Gauge;
pub use prometheus_client::registry::Registry;

pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A registry with the process gauges, ready to encode.
pub struct Metrics {
    registry: Registry,
    process: ProcessGauges,
}

/// Refreshed from `/proc/self` at every scrape, so they cost nothing in
/// between.
#[derive(Default)]
struct ProcessGauges {
    cpu_seconds: Gauge<f64, AtomicU64>,
    resident_bytes: Gauge,
    threads: Gauge,
}

impl Metrics {
    /// Takes the service's registry (metrics prefixed `odp_` by their
    /// owners) and adds the standard `process_*` gauges.
    pub fn new(mut registry: Registry) -> Self {
        let process = ProcessGauges::default();
        registry.register(
            "process_cpu_seconds",
            "User and system CPU time the process used",
            process.cpu_seconds.clone(),
        );
        registry.register(
            "process_resident_memory_bytes",
            "Resident set size of the process",
            process.resident_bytes.clone(),
        );
        registry.register(
            "process_threads",
            "Threads of the process",
            process.threads.clone(),
        );
        Metrics { registry, process }
    }

    /// The OpenMetrics text of every metric, process gauges refreshed.
    pub fn encode(&self) -> String {
        self.process.refresh();
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .expect("writing to a String cannot fail");
        text
    }
}

impl ProcessGauges {
    fn refresh(&self) {
        if let Some(seconds) = read_cpu_seconds() {
            self.cpu_seconds.set(seconds);
        }
        if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
            if let Some(kib) = status_field(&status, "VmRSS:") {
                self.resident_bytes.set(kib.saturating_mul(1024));
            }
            if let Some(threads) = status_field(&status, "Threads:") {
                self.threads.set(threads);
            }
        }
    }
}

/// `utime + stime` of `/proc/self/stat`, in clock ticks of USER_HZ, which
/// the kernel fixes at 100 for every user-space interface.
fn read_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces and parentheses: the
    // fields that follow start after its last `)`.
    let after_name = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after_name.split(' ').collect();
    // utime and stime are fields 14 and 15; after the name, at 11 and 12.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}

fn status_field(status: &str, name: &str) -> Option<i64> {
    let line = status.lines().find(|l| l.starts_with(name))?;
    line[name.len()..].split_whitespace().next()?.parse().ok()
}

/// `GET /metrics` as a router to merge into an app.
pub fn router<S: Clone + Send + Sync + 'static>(metrics: Arc<Metrics>) -> Router<S> {
    Router::new().route(
        "/metrics",
        get(move || {
            let metrics = metrics.clone();
            async move { ([(header::CONTENT_TYPE, CONTENT_TYPE)], metrics.encode()).into_response() }
        }),
    )
}

/// Serves `GET /metrics` over plain HTTP on `listen` until `shutdown`, for
/// services without an HTTP server of their own. Scrapers reach it on an
/// internal port; it reveals counts, never profile data.
pub async fn serve(
    listener: tokio::net::TcpListener,
    metrics: Arc<Metrics>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    tracing::info!(addr = %listener.local_addr()?, "serving /metrics");
    axum::serve(listener, router::<()>(metrics))
        .with_graceful_shutdown(shutdown)
        .await
}

/// Binds `listen` and serves `/metrics` on it in the background; returns
/// the bound address (useful with port 0).
pub async fn spawn(listen: SocketAddr, metrics: Arc<Metrics>) -> std::io::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(listen).await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        if let Err(e) = serve(listener, metrics, std::future::pending()).await {
            tracing::error!(error = %e, "the /metrics server stopped");
        }
    });
    Ok(addr)
}

#[cfg(test)]
mod tests {
    use prometheus_client::metrics::counter::Counter;

    use super::*;

    #[test]
    fn process_gauges_read_this_process() {
        let metrics = Metrics::new(Registry::default());
        let text = metrics.encode();
        let value = |name: &str| -> f64 {
            let line = text
                .lines()
                .find(|l| l.starts_with(name) && !l.starts_with('#'))
                .unwrap_or_else(|| panic!("{name} missing in\n{text}"));
            line.rsplit(' ').next().unwrap().parse().unwrap()
        };
        assert!(value("process_resident_memory_bytes") > 1_000_000.0);
        assert!(value("process_threads") >= 1.0);
        assert!(value("process_cpu_seconds") >= 0.0);
        assert!(text.ends_with("# EOF\n"));
    }

    #[tokio::test]
    async fn serves_the_registry_over_http() {
        let mut registry = Registry::default();
        let snapshots = Counter::<u64>::default();
        registry.register("odp_test_snapshots", "Snapshots seen", snapshots.clone());
        snapshots.inc_by(3);
        let addr = spawn(
            "127.0.0.1:0".parse().unwrap(),
            Arc::new(Metrics::new(registry)),
        )
        .await
        .unwrap();
        let response = reqwest::get(format!("http://{addr}/metrics"))
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], CONTENT_TYPE);
        let text = response.text().await.unwrap();
        assert!(text.contains("odp_test_snapshots_total 3"), "{text}");
    }

    #[test]
    fn status_fields_parse() {
        let status = "Name:\todp\nVmRSS:\t  2048 kB\nThreads:\t7\n";
        assert_eq!(status_field(status, "VmRSS:"), Some(2048));
        assert_eq!(status_field(status, "Threads:"), Some(7));
        assert_eq!(status_field(status, "VmSwap:"), None);
    }
}
