//! What the heartbeat's service scan costs the agent: one pass over
//! `/proc` checking every defined service against every process
//! ([`ServiceBook::live`], the code heartbeats run), with about 200 and
//! about 1,000 processes on the host, and 1 to 1,024 definitions.
//!
//! The definitions match no process, so every process is checked against
//! every definition: the worst case (a definition that matches stops being
//! checked at its first process). They mix process names, command-line
//! regexes and cgroups as a fleet's would. Reported per scan: the median
//! wall time and the mean CPU time of the scanning thread, and that CPU as
//! a share of one core at the default heartbeat of 5 s.
//!
//! Run by hand: `cargo bench -p odp-profiler-service --bench services`
//! (`ODP_BENCH_SCANS` sets the scans per case, default 50).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use odp_core::service::{ServiceDefinition, SyncServices};
use odp_core::Target;
use odp_profiler_service::cost::budget::thread_cpu_time;
use odp_profiler_service::services::ServiceBook;
use odp_profiler_service::targets::ProcFs;

const HEARTBEAT: Duration = Duration::from_secs(5);

fn processes() -> usize {
    std::fs::read_dir("/proc")
        .expect("list /proc")
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .count()
}

/// Starts `sleep` processes until the host has about `total`.
fn fill_to(total: usize, sleepers: &mut Vec<Child>) {
    while processes() < total {
        for _ in 0..(total - processes()) {
            sleepers.push(
                Command::new("sleep")
                    .arg("600")
                    .stdout(Stdio::null())
                    .spawn()
                    .expect("start sleep"),
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `n` definitions matching nothing: a third each by name, command line
/// and cgroup.
fn book(n: usize) -> ServiceBook {
    let services = (0..n)
        .map(|i| ServiceDefinition {
            name: format!("service-{i}"),
            target: match i % 3 {
                0 => Target::ProcessName(format!("svc-{i}-none")),
                1 => Target::CommandLine(format!(r"java .*--app=svc-{i}-none\b")),
                _ => Target::Cgroup(format!("/system.slice/svc-{i}-none.service")),
            },
        })
        .collect();
    ServiceBook::new(&SyncServices::new(services)).expect("valid definitions")
}

fn main() {
    let scans: usize = std::env::var("ODP_BENCH_SCANS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let procfs = ProcFs::default();
    let mut sleepers = Vec::new();
    println!("service scan cost, {scans} scans per case (worst case: no definition matches)");
    println!(
        "{:>10} {:>12} {:>14} {:>14} {:>16}",
        "processes", "definitions", "wall ms (p50)", "cpu ms (mean)", "cpu share @5s"
    );
    for total in [200, 1000] {
        fill_to(total, &mut sleepers);
        for n in [1, 10, 100, 1024] {
            let book = book(n);
            assert!(book.live(&procfs).unwrap().is_empty());
            let mut walls = Vec::with_capacity(scans);
            let cpu_start = thread_cpu_time().expect("thread CPU time");
            for _ in 0..scans {
                let started = Instant::now();
                let live = book.live(&procfs).expect("scan");
                walls.push(started.elapsed());
                assert!(live.is_empty());
            }
            let cpu = (thread_cpu_time().expect("thread CPU time") - cpu_start) / scans as u32;
            walls.sort_unstable();
            let wall = walls[walls.len() / 2];
            println!(
                "{:>10} {:>12} {:>14.2} {:>14.2} {:>15.3}%",
                processes(),
                n,
                wall.as_secs_f64() * 1e3,
                cpu.as_secs_f64() * 1e3,
                cpu.as_secs_f64() / HEARTBEAT.as_secs_f64() * 100.0
            );
        }
    }
    for mut child in sleepers {
        let _ = child.kill();
        let _ = child.wait();
    }
}
