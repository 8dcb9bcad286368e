//! FSP on a workload of 1,000 threads of which 4 are busy
//! (tests/data/workload.c `threads`): one live profile without pruning,
//! then every window pruned at P99 offline, so both sides aggregate the
//! very same samples.
//!
//! Reports the aggregation time (snapshot stacks to a merged flame graph,
//! as queries do), the encoded bytes, and the mean absolute percentage
//! error of the top-50 leaf functions' shares, pruned versus not. Pruned
//! windows keep their total (the pruned samples are one `[pruned threads]`
//! stack), so these shares are Atys' measure too: each function's samples,
//! its execution time, against the unpruned profile's.
//!
//! Run by hand: `cargo bench -p odp-profiler-service --bench fsp` (about
//! 20 s; needs perf_event access like the live tests).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use odp_core::flamegraph::FlameNode;
use odp_core::Snapshot;
use odp_profile::{flame, NameTree, ProfileBuilder, Selection};
use odp_profiler_service::cost::fsp;
use odp_profiler_service::cost::CostSettings;

mod common;

const SHARES: [f64; 2] = [0.99, 0.90];
const REPEAT: u32 = 30;

fn aggregate(snapshots: &[Snapshot]) -> FlameNode {
    let mut builder = ProfileBuilder::default();
    for s in snapshots {
        builder.add_snapshot(s);
    }
    let profile = builder.build();
    let names = NameTree::new(&profile);
    let sums = profile.select(&Selection::default(), &names);
    flame::build(&names.view(&sums.samples), usize::MAX, None)
}

/// Seconds per aggregation of all windows, the mean over `REPEAT` runs.
fn time_aggregation(snapshots: &[Snapshot]) -> f64 {
    let start = Instant::now();
    for _ in 0..REPEAT {
        std::hint::black_box(aggregate(snapshots));
    }
    start.elapsed().as_secs_f64() / f64::from(REPEAT)
}

fn shares(snapshots: &[Snapshot]) -> HashMap<String, f64> {
    let mut counts: HashMap<String, u64> = HashMap::new();
    for s in snapshots {
        for (f, c) in common::leaves(s) {
            *counts.entry(f).or_insert(0) += c;
        }
    }
    let total = counts.values().sum::<u64>().max(1) as f64;
    counts
        .into_iter()
        .map(|(f, c)| (f, c as f64 / total))
        .collect()
}

fn main() {
    let binary = common::build_workload("workload-bench-fsp");
    // 4 busy threads, 996 idle ones waking every 30 s for 1 ms (shorter
    // bursts mostly escape a per-thread 1 ms cpu-clock timer). Twice: idle
    // threads running code of their own (daemons: pruning drops exactly
    // their functions), and a pool whose idle workers run the busy ones'
    // code (the services Atys reports FSP's error on).
    for (mode, what) in [
        ("threads", "idle threads with their own function"),
        ("pool", "a pool: idle threads run the busy threads' code"),
    ] {
        let child = common::start(&binary, &[mode, "40", "4", "996", "1000", "30000"]);
        eprintln!("profiling 1,000 threads for 12 s without pruning ({what}) ...");
        let (full, _) = common::profile(
            child.0.id(),
            Duration::from_secs(12),
            Duration::from_secs(1),
            999,
            CostSettings::default(),
        );
        drop(child);
        println!("== {what}");
        report(&full);
    }
}

fn report(full: &[Snapshot]) {
    let samples: u64 = full.iter().map(Snapshot::total_samples).sum();
    let stacks = |v: &[Snapshot]| v.iter().map(|s| s.stacks.len()).sum::<usize>();
    let bytes = |v: &[Snapshot]| v.iter().map(|s| s.encode().len()).sum::<usize>();
    let t_full = time_aggregation(full);
    let reference = shares(full);
    let mut top: Vec<(&String, &f64)> = reference.iter().collect();
    top.sort_by(|a, b| b.1.total_cmp(a.1).then(a.0.cmp(b.0)));
    top.truncate(50);
    let threads: usize = full.iter().map(|s| fsp::thread_counts(s).len()).sum();
    println!(
        "{} windows, {samples} samples, {threads} thread-windows with samples",
        full.len()
    );
    println!(
        "              stacks     bytes   aggregation   top-{} MAPE  top-10 MAPE",
        top.len()
    );
    println!(
        "no pruning  {:>8} {:>9}   {:>8.3} ms",
        stacks(full),
        bytes(full),
        t_full * 1e3
    );
    for share in SHARES {
        let mut pruned = full.to_vec();
        let mut dropped = fsp::PruneStats::default();
        for s in &mut pruned {
            let stats = fsp::prune(s, share);
            dropped.threads_pruned += stats.threads_pruned;
            dropped.samples_pruned += stats.samples_pruned;
        }
        let t_pruned = time_aggregation(&pruned);
        let after = shares(&pruned);
        let mape = |n: usize| {
            let top = &top[..top.len().min(n)];
            top.iter()
                .map(|(f, &p)| (after.get(*f).copied().unwrap_or(0.0) - p).abs() / p)
                .sum::<f64>()
                / top.len().max(1) as f64
        };
        println!(
            "P{:<2}         {:>8} {:>9}   {:>8.3} ms   {:>8.2} %   {:>8.2} %",
            (share * 100.0).round(),
            stacks(&pruned),
            bytes(&pruned),
            t_pruned * 1e3,
            100.0 * mape(50),
            100.0 * mape(10)
        );
        println!(
            "    pruned {} thread-windows, {} samples ({:.2} %); ratios pruned/full: stacks {:.3}, bytes {:.3}, aggregation time {:.3}",
            dropped.threads_pruned,
            dropped.samples_pruned,
            100.0 * dropped.samples_pruned as f64 / samples.max(1) as f64,
            stacks(&pruned) as f64 / stacks(full).max(1) as f64,
            bytes(&pruned) as f64 / bytes(full).max(1) as f64,
            t_pruned / t_full
        );
    }
    for (f, p) in top.iter().take(6) {
        println!("  {f:<40} {:>6.2} % of leaf samples", 100.0 * **p);
    }
}
