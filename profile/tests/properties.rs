//! Properties of the profile model on random profiles: the encoding round
//! trips and never panics on damaged input, merging equals concatenating,
//! and flame graphs, top tables and diffs over integer ids agree with
//! slow, obvious references on stacks of strings (below).

use std::collections::{BTreeMap, BTreeSet};

use odp_core::diff::DiffNode;
use odp_core::flamegraph::{FlameNode, ROOT_NAME};
use odp_core::stats::binomial_stderr;
use odp_core::{EventKind, Frame, WeightedStack};
use odp_profile::{
    diff, flame, many, stacks, top, weigh, Level, NameTree, Profile, ProfileBuilder, Selection,
    View, Window,
};
use proptest::prelude::*;

type RawStack = (Vec<u8>, u8, u64);
type RawWindow = (u64, Vec<RawStack>);

fn frame(id: u8) -> Frame {
    // Two frames per name (lines differ) so names and frames differ.
    let mut frame = Frame::function(format!("f{}", id % 6)).with_module(format!("m{}", id % 2));
    frame.line = Some(u32::from(id % 3));
    frame
}

/// A frame of a Python-like profile: files as well as lines, so one name
/// is frames of several files and lines (and one frame has no file).
fn located_frame(id: u8) -> Frame {
    let mut frame = Frame::function(format!("f{}", id % 6));
    if id != 11 {
        frame.file = Some(format!("m{}.py", id % 4));
        frame.line = Some(u32::from(id % 5));
    }
    frame
}

fn build(windows: &[RawWindow]) -> Profile {
    build_with(windows, frame)
}

fn build_with(windows: &[RawWindow], frame: fn(u8) -> Frame) -> Profile {
    let mut b = ProfileBuilder::default();
    for (i, (period, stacks)) in windows.iter().enumerate() {
        let w = b.window(Window {
            profile_id: uuid::Uuid::nil(),
            host: format!("h{}", i % 2),
            agent_id: "a".into(),
            sequence: i as u64,
            start_ms: 1_700_000_000_000 + 1_000 * i as i64,
            end_ms: 1_700_000_001_000 + 1_000 * i as i64,
            event: EventKind::CpuClock,
            period: *period,
            frequency_hz: 0,
        });
        for tid in 0..3 {
            b.thread(w, tid, format!("t{tid}"));
        }
        for (frames, tid, count) in stacks {
            let ids: Vec<u32> = frames.iter().map(|&f| b.frame(&frame(f))).collect();
            b.samples(w, u32::from(*tid % 3), &ids, *count);
        }
    }
    b.build()
}

fn windows() -> impl Strategy<Value = Vec<RawWindow>> {
    let stack = (prop::collection::vec(0u8..12, 1..7), any::<u8>(), 1u64..100);
    let window = (
        prop::sample::select(vec![1_000_000u64, 10_000_000]),
        prop::collection::vec(stack, 0..20),
    );
    prop::collection::vec(window, 1..4)
}

/// Stacks by name with counts, summed: what must not change.
fn folded(profile: &Profile) -> BTreeMap<Vec<String>, u64> {
    let mut counts = vec![0; profile.tree.len()];
    for s in &profile.samples {
        counts[s.node as usize] += s.count;
    }
    let view = NameTree::new(profile).view(&counts);
    stacks::weighted_stacks(&view)
        .into_iter()
        .map(|s| (s.frames, s.count))
        .collect()
}

/// Per path of display names, the smallest `(file, line)` of the frames
/// on it: what each flame graph node must name.
fn reference_sources(profile: &Profile) -> BTreeMap<Vec<String>, (String, Option<u32>)> {
    let mut out: BTreeMap<Vec<String>, (String, Option<u32>)> = BTreeMap::new();
    for node in 1..profile.tree.len() as u32 {
        let frames: Vec<&Frame> = profile
            .tree
            .stack(node)
            .into_iter()
            .map(|f| &profile.frames[f as usize])
            .collect();
        let leaf = frames.last().expect("a node below the root");
        let Some(file) = &leaf.file else { continue };
        let path = frames.iter().map(|f| f.display_name()).collect();
        let location = (file.clone(), leaf.line);
        let entry = out.entry(path).or_insert_with(|| location.clone());
        if location < *entry {
            *entry = location;
        }
    }
    out
}

/// The reference flame graph: a node per distinct prefix of the stacks,
/// children by name.
fn reference_flame(stacks: &[WeightedStack]) -> FlameNode {
    fn node(name: &str, stacks: &[(&[String], u64)]) -> FlameNode {
        let mut children: BTreeMap<&str, Vec<(&[String], u64)>> = BTreeMap::new();
        let mut self_count = 0;
        for &(frames, count) in stacks {
            match frames.split_first() {
                None => self_count += count,
                Some((first, rest)) => children.entry(first).or_default().push((rest, count)),
            }
        }
        FlameNode {
            name: name.to_owned(),
            file: None,
            line: None,
            total: stacks.iter().map(|s| s.1).sum(),
            self_count,
            children: children.iter().map(|(name, s)| node(name, s)).collect(),
            merged: 0,
        }
    }
    let stacks: Vec<(&[String], u64)> = stacks
        .iter()
        .map(|s| (s.frames.as_slice(), s.count))
        .collect();
    node(ROOT_NAME, &stacks)
}

/// The reference top table, as (function, self samples, total samples):
/// per function, the samples of stacks ending in it and of stacks holding
/// it (once each), by self samples, then total, then name.
fn reference_top(stacks: &[WeightedStack], limit: usize) -> Vec<(String, u64, u64)> {
    let mut counts: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for stack in stacks {
        let on_stack: BTreeSet<&str> = stack.frames.iter().map(String::as_str).collect();
        for function in on_stack {
            counts.entry(function).or_default().1 += stack.count;
        }
        if let Some(leaf) = stack.frames.last() {
            counts.entry(leaf).or_default().0 += stack.count;
        }
    }
    let mut out: Vec<(String, u64, u64)> = counts
        .into_iter()
        .map(|(function, (own, total))| (function.to_owned(), own, total))
        .collect();
    out.sort_by(|a, b| (b.1, b.2, &a.0).cmp(&(a.1, a.2, &b.0)));
    out.truncate(limit);
    out
}

/// The reference diff: two reference flame graphs joined by path.
fn reference_diff(baseline: &FlameNode, target: &FlameNode) -> DiffNode {
    fn child<'a>(n: Option<&'a FlameNode>, name: &str) -> Option<&'a FlameNode> {
        n.and_then(|n| n.children.iter().find(|c| c.name == name))
    }
    fn join(b: Option<&FlameNode>, t: Option<&FlameNode>, totals: (u64, u64)) -> DiffNode {
        let names: BTreeSet<&str> = [b, t]
            .into_iter()
            .flatten()
            .flat_map(|n| n.children.iter().map(|c| c.name.as_str()))
            .collect();
        let counts = |n: Option<&FlameNode>| n.map_or((0, 0), |n| (n.total, n.self_count));
        let name = b.or(t).expect("a side").name.clone();
        DiffNode {
            children: names
                .into_iter()
                .map(|name| join(child(b, name), child(t, name), totals))
                .collect(),
            ..DiffNode::new(name, counts(b), counts(t), totals)
        }
    }
    join(Some(baseline), Some(target), (baseline.total, target.total))
}

proptest! {
    #[test]
    fn blocks_round_trip(windows in windows()) {
        let profile = build(&windows);
        for level in [Level::Fast, Level::Small, Level::Quick] {
            prop_assert_eq!(&Profile::decode(&profile.encode(level)).unwrap(), &profile);
        }
    }

    #[test]
    fn damaged_blocks_are_errors_not_panics(windows in windows(), at in any::<prop::sample::Index>(), byte in any::<u8>()) {
        for level in [Level::Fast, Level::Quick] {
            let mut block = build(&windows).encode(level);
            let i = at.index(block.len());
            block[i] ^= byte | 1;
            let _ = Profile::decode(&block);
            let _ = Profile::decode(&block[..i]);
        }
    }

    #[test]
    fn merged_views_equal_the_view_of_the_merge(a in windows(), b in windows()) {
        // Raw counts: weighting rounds per node, so the parts' rounding
        // may differ from the whole's by one.
        let view = |p: &Profile| {
            let names = NameTree::new(p);
            names.view(&p.select(&Selection::default(), &names).samples)
        };
        let (pa, pb) = (build(&a), build(&b));
        let merged = View::merge(&[view(&pa), view(&pb)]);
        let whole = view(&Profile::merge([&pa, &pb]));
        prop_assert_eq!(stacks::weighted_stacks(&merged).len(), stacks::weighted_stacks(&whole).len());
        prop_assert_eq!(flame::build(&merged, usize::MAX, None), flame::build(&whole, usize::MAX, None));
    }

    #[test]
    fn many_views_read_as_their_merge(a in windows(), b in windows(), c in windows(), budget in 1usize..30) {
        let view = |raw: &[RawWindow]| {
            let p = build(raw);
            let names = NameTree::new(&p);
            names.view(&p.select(&Selection::default(), &names).samples)
        };
        let views = [view(&a), view(&b), view(&c)];
        let refs: Vec<&View> = views.iter().collect();
        let merged = View::merge(&views);
        prop_assert_eq!(
            many::flame_graph(&refs, usize::MAX, None).unwrap(),
            flame::build(&merged, usize::MAX, None)
        );
        prop_assert_eq!(many::top_functions(&refs, 10), top::top_functions(&merged, 10));
        let cut = many::flame_graph(&refs, budget, None).unwrap();
        prop_assert_eq!(cut.total, merged.samples());
        fn exact(node: &FlameNode) -> bool {
            node.total == node.self_count + node.children.iter().map(|c| c.total).sum::<u64>()
                && node.children.iter().all(exact)
        }
        prop_assert!(exact(&cut));
        // A focus on the heaviest child of the root opens the same subtree.
        if let Some(first) = flame::build(&merged, usize::MAX, None).children.first() {
            let path = [first.name.as_str()];
            let lazy = many::flame_graph(&refs, usize::MAX, Some(&path)).unwrap();
            let node = flame::find_path(&merged, &path).unwrap();
            prop_assert_eq!(lazy, flame::build(&merged, usize::MAX, Some(node)));
        }
        prop_assert!(many::flame_graph(&refs, 10, Some(&["no such frame"])).is_none());
        // Nine views: the flame graph's work is split between two threads.
        let nine: Vec<&View> = refs.iter().copied().cycle().take(9).collect();
        let owned: Vec<View> = nine.iter().map(|&v| v.clone()).collect();
        let cut = many::flame_graph(&nine, budget, None).unwrap();
        prop_assert_eq!(cut.total, 3 * merged.samples());
        prop_assert!(exact(&cut));
        prop_assert_eq!(
            many::flame_graph(&nine, usize::MAX, None).unwrap(),
            flame::build(&View::merge(&owned), usize::MAX, None)
        );
    }

    #[test]
    fn merging_equals_concatenating(a in windows(), b in windows()) {
        let (pa, pb) = (build(&a), build(&b));
        let merged = Profile::merge([&pa, &pb]);
        let mut expected = folded(&pa);
        for (path, count) in folded(&pb) {
            *expected.entry(path).or_insert(0) += count;
        }
        prop_assert_eq!(folded(&merged), expected);
        prop_assert_eq!(merged.windows.len(), pa.windows.len() + pb.windows.len());
        prop_assert_eq!(merged.total_samples(), pa.total_samples() + pb.total_samples());
        let concatenated: Vec<RawWindow> = a.iter().chain(&b).cloned().collect();
        prop_assert_eq!(folded(&build(&concatenated)), folded(&merged));
    }

    #[test]
    fn flame_graphs_and_tops_agree_with_the_string_reference(windows in windows(), limit in 1usize..20) {
        let profile = build(&windows);
        let names = NameTree::new(&profile);
        let sums = profile.select(&Selection::default(), &names);
        let view = names.view(&weigh(&[&sums])[0]);
        let reference: Vec<WeightedStack> = stacks::weighted_stacks(&view);
        prop_assert_eq!(
            flame::build(&view, usize::MAX, None),
            reference_flame(&reference)
        );
        let table = top::top_functions(&view, limit);
        let rows: Vec<(String, u64, u64)> = table
            .iter()
            .map(|f| (f.function.clone(), f.self_samples, f.total_samples))
            .collect();
        prop_assert_eq!(rows, reference_top(&reference, limit));
        let samples = view.samples();
        for f in &table {
            prop_assert_eq!(f.self_share, f.self_samples as f64 / samples as f64);
            prop_assert_eq!(f.total_share, f.total_samples as f64 / samples as f64);
            prop_assert_eq!(f.self_share_stderr, binomial_stderr(f.self_samples, samples));
        }
        // Any budget keeps the root's and every kept node's totals.
        let cut = flame::build(&view, limit, None);
        prop_assert_eq!(cut.total, view.samples());
        fn check(node: &FlameNode) -> bool {
            node.total == node.self_count + node.children.iter().map(|c| c.total).sum::<u64>()
                && node.children.iter().all(check)
        }
        prop_assert!(check(&cut));
    }

    #[test]
    fn diffs_agree_with_the_string_reference(a in windows(), b in windows(), budget in 1usize..30) {
        let view = |raw: &[RawWindow]| {
            let p = build(raw);
            let names = NameTree::new(&p);
            names.view(&p.select(&Selection::default(), &names).samples)
        };
        let (baseline, target) = (view(&a), view(&b));
        let reference = reference_diff(
            &reference_flame(&stacks::weighted_stacks(&baseline)),
            &reference_flame(&stacks::weighted_stacks(&target)),
        );
        prop_assert_eq!(diff::diff_tree(&[&baseline], &[&target], usize::MAX), reference);
        // Any budget keeps every kept node's totals on both sides.
        fn exact(node: &DiffNode) -> bool {
            let sum = |side: fn(&DiffNode) -> u64| node.children.iter().map(side).sum::<u64>();
            node.baseline_total == node.baseline_self + sum(|c| c.baseline_total)
                && node.target_total == node.target_self + sum(|c| c.target_total)
                && node.children.iter().all(exact)
        }
        let cut = diff::diff_tree(&[&baseline], &[&target], budget);
        prop_assert_eq!(
            (cut.baseline_total, cut.target_total),
            (baseline.samples(), target.samples())
        );
        prop_assert!(exact(&cut));
    }

    #[test]
    fn each_node_names_its_frames_smallest_location_however_views_merge(a in windows(), b in windows()) {
        let (pa, pb) = (build_with(&a, located_frame), build_with(&b, located_frame));
        let view = |p: &Profile| {
            let names = NameTree::new(p);
            names.view(&p.select(&Selection::default(), &names).samples)
        };
        let whole = Profile::merge([&pa, &pb]);
        let full = flame::build(&view(&whole), usize::MAX, None);
        let views = [view(&pa), view(&pb)];
        let refs: Vec<&View> = views.iter().collect();
        prop_assert_eq!(&flame::build(&View::merge(&views), usize::MAX, None), &full);
        prop_assert_eq!(&many::flame_graph(&refs, usize::MAX, None).unwrap(), &full);
        prop_assert_eq!(&flame::build(&View::from_flame_graph(&full), usize::MAX, None), &full);
        let expected = reference_sources(&whole);
        fn check(
            node: &FlameNode,
            path: &mut Vec<String>,
            expected: &BTreeMap<Vec<String>, (String, Option<u32>)>,
        ) -> Result<(), TestCaseError> {
            for child in &node.children {
                path.push(child.name.clone());
                let want = expected.get(path.as_slice());
                prop_assert_eq!(child.file.as_ref(), want.map(|w| &w.0), "{:?}", path);
                prop_assert_eq!(child.line, want.and_then(|w| w.1), "{:?}", path);
                check(child, path, expected)?;
                path.pop();
            }
            Ok(())
        }
        check(&full, &mut Vec::new(), &expected)?;
        prop_assert_eq!(full.file.as_ref(), None);
    }
}
