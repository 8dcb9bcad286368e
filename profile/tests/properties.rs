//! Properties of the profile model on random profiles: the encoding round
//! trips and never panics on damaged input, merging equals concatenating,
//! and flame graphs and top tables over integer ids agree with the slow
//! string-based reference in `odp-core`.

use std::collections::BTreeMap;

use odp_core::{EventKind, Frame, WeightedStack};
use odp_profile::{
    flame, many, stacks, top, weigh, Level, NameTree, Profile, ProfileBuilder, Selection, View,
    Window,
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

fn build(windows: &[RawWindow]) -> Profile {
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

proptest! {
    #[test]
    fn blocks_round_trip(windows in windows()) {
        let profile = build(&windows);
        for level in [Level::Fast, Level::Small] {
            prop_assert_eq!(&Profile::decode(&profile.encode(level)).unwrap(), &profile);
        }
    }

    #[test]
    fn damaged_blocks_are_errors_not_panics(windows in windows(), at in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let mut block = build(&windows).encode(Level::Fast);
        let i = at.index(block.len());
        block[i] ^= byte | 1;
        let _ = Profile::decode(&block);
        let _ = Profile::decode(&block[..i]);
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
        fn exact(node: &odp_core::flamegraph::FlameNode) -> bool {
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
            odp_core::flamegraph::build(&reference)
        );
        prop_assert_eq!(
            top::top_functions(&view, limit),
            odp_core::stats::top_functions(&reference, limit)
        );
        // Any budget keeps the root's and every kept node's totals.
        let cut = flame::build(&view, limit, None);
        prop_assert_eq!(cut.total, view.samples());
        fn check(node: &odp_core::flamegraph::FlameNode) -> bool {
            node.total == node.self_count + node.children.iter().map(|c| c.total).sum::<u64>()
                && node.children.iter().all(check)
        }
        prop_assert!(check(&cut));
    }
}
