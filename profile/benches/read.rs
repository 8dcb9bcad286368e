//! Reading one large profile from its block, against inferno rendering the
//! same stacks as folded text, in one run (`cargo bench -p odp-profile
//! --bench read`). The profile is the shape: 100,000 distinct
//! stacks of about 12 frames drawn from 4,000 functions of ~25 characters,
//! about 700,000 samples. Then the same stacks as py-spy reports them, each
//! frame with its file and one of three lines: the flame graph's nodes name
//! them ("view source"), which only such profiles pay for.

use std::time::{Duration, Instant};

use odp_core::{EventKind, Frame};
use odp_profile::{
    flame, stacks, top, weigh, Level, NameTree, Profile, ProfileBuilder, Selection, Window,
};

const STACKS: usize = 100_000;
const FUNCTIONS: usize = 4_000;

#[path = "common/rng.rs"]
mod rng;
use rng::Rng;

/// Lines per function of a located profile.
const LINES: usize = 3;

/// The profile; `located`, with every frame's file and one of
/// [`LINES`] lines, as py-spy reports Python frames.
fn synthetic_profile(located: bool) -> Profile {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut b = ProfileBuilder::default();
    let lines = if located { LINES } else { 1 };
    // Per function, its frame at each line.
    let functions: Vec<Vec<u32>> = (0..FUNCTIONS)
        .map(|i| {
            (0..lines)
                .map(|l| {
                    let mut frame = Frame::function(format!("com.example.svc.Handler{i:05}.run"));
                    if located {
                        frame.file = Some(format!("svc/handlers/h{:03}.py", i / 40));
                        frame.line = Some((i % 40 * 20 + l) as u32);
                    }
                    b.frame(&frame)
                })
                .collect()
        })
        .collect();
    let w = b.window(Window {
        profile_id: uuid::Uuid::nil(),
        host: "bench".into(),
        agent_id: "a".into(),
        sequence: 0,
        start_ms: 0,
        end_ms: 60_000,
        event: EventKind::CpuClock,
        period: 10_101_010,
        frequency_hz: 99,
    });
    let mut frames = Vec::with_capacity(16);
    for _ in 0..STACKS {
        frames.clear();
        // Shallow frames come from a few hot callers, deeper ones spread.
        for depth in 0..8 + rng.below(9) {
            let pool = (8usize << depth).min(FUNCTIONS);
            let lines = &functions[rng.below(pool)];
            frames.push(lines[rng.below(lines.len())]);
        }
        let count = 1 + rng.below(12) as u64;
        b.samples(w, 1, &frames, count);
    }
    b.build()
}

fn time<T>(what: &str, runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut out = None;
    for _ in 0..runs {
        let started = Instant::now();
        out = Some(f());
        best = best.min(started.elapsed());
    }
    println!("{what:<44} {:>9.1} ms", best.as_secs_f64() * 1e3);
    (best, out.expect("ran"))
}

fn main() {
    let profile = synthetic_profile(false);
    let block = profile.encode(Level::Small);
    println!(
        "profile: {} stacks, {} tree nodes, {} samples, block {:.2} MB",
        profile.samples.len(),
        profile.tree.len(),
        profile.total_samples(),
        block.len() as f64 / 1e6
    );
    let names = NameTree::new(&profile);
    let sums = profile.select(&Selection::default(), &names);
    let view = names.view(&weigh(&[&sums])[0]);
    let folded: String = stacks::weighted_stacks(&view)
        .iter()
        .map(|s| format!("{} {}\n", s.frames.join(";"), s.count))
        .collect();

    let (inferno, _) = time("baseline: inferno SVG from folded text", 3, || {
        let mut svg = Vec::new();
        let mut options = inferno::flamegraph::Options::default();
        inferno::flamegraph::from_lines(&mut options, folded.lines(), &mut svg).unwrap();
        svg.len()
    });
    let view_of_block = || {
        let profile = Profile::decode(&block).unwrap();
        let names = NameTree::new(&profile);
        let sums = profile.select(&Selection::default(), &names);
        names.view(&weigh(&[&sums])[0])
    };
    let read = |budget| flame::build(&view_of_block(), budget, None);
    time("  decode only", 5, || {
        Profile::decode(&block).unwrap().samples.len()
    });
    let decoded = Profile::decode(&block).unwrap();
    time("  name tree + select + weigh + view", 5, || {
        let names = NameTree::new(&decoded);
        let sums = decoded.select(&Selection::default(), &names);
        names.view(&weigh(&[&sums])[0]).samples()
    });
    let view = view_of_block();
    time("  flame::build (one view)", 5, || {
        flame::build(&view, 8192, None).total
    });
    time("  many::flame_graph (one view)", 5, || {
        odp_profile::many::flame_graph(&[&view], 8192, None)
            .unwrap()
            .total
    });
    time("  serialize JSON", 5, || {
        serde_json::to_vec(&flame::build(&view, 8192, None))
            .unwrap()
            .len()
    });
    let (json, tree) = time("flame graph JSON (decode → tree, 8192 nodes)", 5, || {
        serde_json::to_vec(&read(8192)).unwrap()
    });
    let (top_time, _) = time("top 20 (decode → table)", 5, || {
        top::top_functions(&view_of_block(), 20)
    });
    time("diff tree (two views → tree, 8192 nodes)", 5, || {
        odp_profile::diff::diff_tree(&[&view], &[&view], 8192).baseline_total
    });
    let (svg, _) = time("SVG (decode → pruned stacks → inferno)", 3, || {
        let view = view_of_block();
        let pruned = stacks::pruned_stacks(&view, view.samples() / 12_000);
        let lines: Vec<String> = pruned
            .iter()
            .map(|s| format!("{} {}", s.frames.join(";"), s.count))
            .collect();
        let mut svg = Vec::new();
        let mut options = inferno::flamegraph::Options::default();
        inferno::flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), &mut svg)
            .unwrap();
        svg.len()
    });
    let ratio = |d: Duration| d.as_secs_f64() / inferno.as_secs_f64();
    println!();
    println!(
        "JSON: {:.2}x inferno, {:.2} MB (target <= 0.5x, <= 2 MB)",
        ratio(json),
        tree.len() as f64 / 1e6
    );
    println!("top:  {:.2}x inferno (target <= 0.25x)", ratio(top_time));
    println!("SVG:  {:.2}x inferno (target <= 1.0x)", ratio(svg));
    located();
}

/// The flame graph read of the profile with files and lines.
fn located() {
    let profile = synthetic_profile(true);
    let block = profile.encode(Level::Small);
    println!();
    println!(
        "with files and lines: {} frames, {} tree nodes, block {:.2} MB",
        profile.frames.len(),
        profile.tree.len(),
        block.len() as f64 / 1e6
    );
    let view_of = |profile: &Profile| {
        let names = NameTree::new(profile);
        let sums = profile.select(&Selection::default(), &names);
        names.view(&weigh(&[&sums])[0])
    };
    time("  name tree + select + weigh + view", 5, || {
        view_of(&profile).samples()
    });
    let view = view_of(&profile);
    time("  flame::build (one view)", 5, || {
        flame::build(&view, 8192, None).total
    });
    let (_, json) = time("flame graph JSON (decode → tree, 8192 nodes)", 5, || {
        let view = view_of(&Profile::decode(&block).unwrap());
        serde_json::to_vec(&flame::build(&view, 8192, None)).unwrap()
    });
    println!("  JSON {:.2} MB", json.len() as f64 / 1e6);
}
