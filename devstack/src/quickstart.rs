//! `odp-dev quickstart`: the README's first command after the build. Brings
//! the stack and the three services up in `.odp/`, runs the demo workload,
//! profiles it through the REST API like any user would, and prints the
//! top functions and where the flame graph is.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use odp_client::types::{ProfileStatus, StartRequest, TopResponse};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::database::DatabaseKind;
use crate::demo::cpu_seconds;
use crate::dev::up;
use crate::error::{DevError, IoContext, Result};
use crate::platform::{Platform, PlatformOptions, StackEndpoints};
use crate::process::ServiceProcess;
use crate::sys::{pid_running, send_signal, Signal};

#[derive(Debug, Clone)]
pub struct QuickstartOptions {
    pub state_dir: PathBuf,
    pub duration_secs: u64,
    pub frequency_hz: u32,
    pub database: DatabaseKind,
}

/// What the quick start left running, so `odp-dev down` can stop it and
/// users can reach the API.
#[derive(Debug, Serialize, Deserialize)]
pub struct ServicesRecord {
    pub api_url: String,
    /// The API's self-signed certificate, for `curl --cacert`.
    pub ca_path: PathBuf,
    pub token: String,
    /// A read-only token (role `viewer`), e.g. for trying the web UI
    /// without admin actions.
    #[serde(default)]
    pub viewer_token: String,
    pub host_id: String,
    pub pids: Vec<u32>,
}

impl ServicesRecord {
    const FILE_NAME: &'static str = "services.json";

    pub fn load(state_dir: &Path) -> Option<ServicesRecord> {
        let text = std::fs::read_to_string(state_dir.join(Self::FILE_NAME)).ok()?;
        serde_json::from_str(&text).ok()
    }

    fn save(&self, state_dir: &Path) -> Result<()> {
        let path = state_dir.join(Self::FILE_NAME);
        let text = serde_json::to_string_pretty(self).expect("record serializes");
        std::fs::write(&path, text).io_context(|| format!("writing {}", path.display()))
    }
}

/// Stops the services and demo a previous quick start left running.
pub fn stop_services(state_dir: &Path) -> Result<usize> {
    let Some(record) = ServicesRecord::load(state_dir) else {
        return Ok(0);
    };
    let running: Vec<u32> = record
        .pids
        .into_iter()
        .filter(|&pid| pid_running(pid))
        .collect();
    for &pid in &running {
        send_signal(pid, Signal::Term);
    }
    for _ in 0..100 {
        if running.iter().all(|&pid| !pid_running(pid)) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    for &pid in &running {
        if pid_running(pid) {
            send_signal(pid, Signal::Kill);
        }
    }
    let _ = std::fs::remove_file(state_dir.join(ServicesRecord::FILE_NAME));
    Ok(running.len())
}

pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}

pub async fn quickstart(options: QuickstartOptions) -> Result<()> {
    let state_dir = &options.state_dir;
    stop_services(state_dir)?;
    println!(
        "==> starting Kafka (Tansu) and {} in {}",
        options.database.server_name(),
        state_dir.display()
    );
    let record = up(state_dir, options.database).await?.record().clone();

    println!(
        "==> building and starting the demo workload (60% demo_hot, 30% demo_warm, 10% demo_cool)"
    );
    let demo_binary = crate::demo::build_demo(&state_dir.join("demo"))?;
    let demo = ServiceProcess::builder("demo", &demo_binary)
        .args(["--seconds", "900"])
        .log_dir(state_dir.join("logs"))
        .own_process_group(true)
        .spawn()?;

    println!("==> starting api-server, pipeline and profiler-service");
    let endpoints = StackEndpoints {
        kafka_bootstrap: record.kafka_bootstrap.clone(),
        database_url: record.database_url.clone(),
        topics: record.topics.clone(),
    };
    let mut platform_options = PlatformOptions::new(state_dir, hostname());
    platform_options.detached = true;
    // `odpctl deploy other-host` and starts for hosts without an agent
    // start one on this machine.
    platform_options.local_deployer = true;
    let platform = Platform::start(&endpoints, platform_options).await?;
    let client = platform.client();
    let services = ServicesRecord {
        api_url: platform.api_url.clone(),
        ca_path: platform.ca_path.clone(),
        token: platform.token.clone(),
        viewer_token: crate::platform::mint_scoped_token(
            &platform.jwt_secret,
            "quickstart-viewer",
            "viewer",
            &[],
        )?,
        host_id: platform.host_id.clone(),
        pids: Vec::new(),
    };
    let host = platform.host_id.clone();
    let demo_pid = demo.pid();
    let mut pids = platform.detach();
    pids.push(demo.detach());
    let services = ServicesRecord { pids, ..services };
    services.save(state_dir)?;

    println!(
        "==> profiling process `cpu-split` on host {host} for {} s at {} Hz through the REST API",
        options.duration_secs, options.frequency_hz
    );
    let request = StartRequest {
        host: host.clone(),
        process_name: Some("cpu-split".into()),
        duration_secs: options.duration_secs,
        frequency_hz: Some(options.frequency_hz),
        ..StartRequest::default()
    };
    let id = client.start_profile(&request).await?.id;
    let timeout = Duration::from_secs(options.duration_secs + 90);
    // The demo's share of a CPU while the profile runs says how many
    // samples one agent takes: duration × frequency × share.
    let mut cpu_at_start = None;
    let profile = client
        .wait_finished(&id, timeout, |status| {
            if status == ProfileStatus::Running {
                cpu_at_start = cpu_seconds(demo_pid).map(|cpu| (cpu, Instant::now()));
            }
            println!("    profile {id}: {status}")
        })
        .await?;
    let demo_share = cpu_at_start
        .zip(cpu_seconds(demo_pid))
        .map(|((start, at), end)| (end - start) / at.elapsed().as_secs_f64());
    if profile.status != ProfileStatus::Finished {
        return Err(DevError::Invalid(format!(
            "profile ended {}: {}; logs are in {}",
            profile.status,
            profile.status_reason.unwrap_or_default(),
            state_dir.join("logs").display()
        )));
    }
    // The pipeline stores the last window a moment after the agent says
    // the profile finished; wait until the counts settle.
    let top = settled_top(&client, id).await?;
    print_top(&top, profile.event.map_or("samples", |e| e.as_str()));
    if let Some(share) = demo_share {
        println!(
            "  (the demo kept {:.0}% of a CPU busy: one agent sampling it {} s at {} Hz takes about {:.0})",
            share * 100.0,
            options.duration_secs,
            options.frequency_hz,
            share * options.duration_secs as f64 * f64::from(options.frequency_hz)
        );
    }
    print_coverage(&client, &id).await?;

    let svg_path = state_dir.join(format!("flamegraph-{id}.svg"));
    let svg = client.flamegraph(&id, "svg").await?;
    std::fs::write(&svg_path, svg).io_context(|| format!("writing {}", svg_path.display()))?;
    println!();
    println!(
        "flame graph (SVG):  {}/api/v1/profiles/{id}/flamegraph?format=svg",
        services.api_url
    );
    println!("saved a copy to:    {}", svg_path.display());
    println!(
        "web UI:             {}/#/profiles/{id}  (sign in with the API token below; \
         the certificate is self-signed)",
        services.api_url
    );
    println!("API token:          export ODP_TOKEN={}", services.token);
    println!(
        "try:                curl --cacert {} -H \"Authorization: Bearer $ODP_TOKEN\" {}/api/v1/profiles/{id}/top",
        services.ca_path.display(),
        services.api_url
    );
    println!(
        "stop everything:    {} down",
        std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "odp-dev".into())
    );
    Ok(())
}

/// The agent's own account of the profile: what the demo's CPU time
/// earned, what was captured, and a warning when more than 2% is missing.
async fn print_coverage(client: &odp_client::ApiClient, id: &Uuid) -> Result<()> {
    let Some(coverage) = client.profile(id).await?.coverage else {
        return Ok(());
    };
    if let Some(expected) = coverage.expected.filter(|&e| e > 0) {
        println!(
            "  (the agent counted {} of the {expected} samples the demo's CPU time earned: {:.1}%)",
            coverage.captured,
            100.0 * coverage.captured as f64 / expected as f64
        );
    }
    if let Some(warning) = coverage.warning {
        println!("  warning: {warning}");
    }
    Ok(())
}

async fn settled_top(client: &odp_client::ApiClient, id: Uuid) -> Result<TopResponse> {
    let mut last = client.top(id, 10).await?;
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let next = client.top(id, 10).await?;
        if next.samples == last.samples && next.samples > 0 {
            return Ok(next);
        }
        last = next;
    }
    Ok(last)
}

fn print_top(top: &TopResponse, event: &str) {
    let samples = top.samples;
    println!();
    println!("top functions by self time ({samples} {event} samples):");
    println!("  {:<32} {:>16} {:>10}", "function", "self share", "total");
    for f in &top.functions {
        let share = f.self_share * 100.0;
        let err = f.self_share_stderr * 100.0;
        let total = f.total_share * 100.0;
        println!(
            "  {:<32} {:>8.1}% ± {:<4.1} {:>9.1}%",
            f.function, share, err, total
        );
    }
}
