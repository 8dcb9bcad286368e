//! Differential flame graphs over the model: two sides (each the views of
//! a profile, an aggregate or a run) joined path by path on one tree of
//! names, each side normalized by its own total samples, and the functions
//! whose shares moved most.
//!
//! The tree is cut to a node budget as flame graphs are: the heaviest
//! nodes by the larger of their two shares are kept (a node only with its
//! parent), and each kept node's other children become one `other` child
//! carrying their counts, so every total stays exact. The cut is chosen on
//! the joined tree's ids, so only kept nodes' names are ever copied.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use odp_core::diff::{is_significant, DiffNode, FunctionChange};
use odp_core::flamegraph::ROOT_NAME;
use odp_core::stats::FunctionShare;

use crate::many::{self, OTHER_NAME};
use crate::tree::{Children, ROOT};
use crate::view::View;

/// The two sides' joined tree, with at most about `budget` nodes below the
/// root (`other`s included).
pub fn diff_tree(baseline: &[&View], target: &[&View], budget: usize) -> DiffNode {
    Joined::new([baseline, target]).tree(budget)
}

/// The `limit` functions whose total share moved most (then self share,
/// then name), each change with its error.
pub fn changes(baseline: &[&View], target: &[&View], limit: usize) -> Vec<FunctionChange> {
    let side = |views: &[&View]| {
        let samples = views.iter().map(|v| v.samples()).sum();
        (many::top_functions(views, usize::MAX), samples)
    };
    changes_between(side(baseline), side(target), limit)
}

/// Both sides on one tree of names: per side, each node's own samples and
/// its total.
struct Joined {
    union: View,
    counts: [Vec<u64>; 2],
    totals: [Vec<u64>; 2],
}

/// A node of the joined tree while the cut is chosen. Nodes are in
/// pre-order with children by name, so a heavier node wins first and
/// among equals the one drawn first.
struct Flat {
    node: u32,
    parent: usize,
    children: Vec<usize>,
    kept: bool,
    /// Children not (yet) kept, while the node is kept.
    unkept: usize,
}

impl Joined {
    fn new(sides: [&[&View]; 2]) -> Joined {
        let mut union = View::default();
        let mut ids = HashMap::new();
        let mut counts = [vec![0u64], vec![0u64]];
        for (side, views) in sides.into_iter().enumerate() {
            for view in views {
                let nodes = union.graft(view, &mut ids);
                counts[side].resize(union.tree.len(), 0);
                for (node, &count) in view.counts.iter().enumerate() {
                    counts[side][nodes[node] as usize] += count;
                }
            }
        }
        for side in &mut counts {
            side.resize(union.tree.len(), 0);
        }
        let totals = [union.tree.totals(&counts[0]), union.tree.totals(&counts[1])];
        Joined {
            union,
            counts,
            totals,
        }
    }

    /// Each side's samples: what its shares are of.
    fn sides(&self) -> (u64, u64) {
        (self.totals[0][ROOT as usize], self.totals[1][ROOT as usize])
    }

    fn tree(&self, budget: usize) -> DiffNode {
        let (baseline, target) = (&self.totals[0], &self.totals[1]);
        let children = self
            .union
            .tree
            .children(|n| baseline[n as usize] > 0 || target[n as usize] > 0);
        let mut arena = Vec::new();
        self.flatten(&children, ROOT, 0, &mut arena);
        self.keep_heaviest(&mut arena, budget);
        self.emit(&mut arena, 0)
    }

    fn flatten(&self, children: &Children, node: u32, parent: usize, arena: &mut Vec<Flat>) {
        let at = arena.len();
        arena.push(Flat {
            node,
            parent,
            children: Vec::new(),
            kept: false,
            unkept: 0,
        });
        let mut by_name = children.of(node).to_vec();
        by_name.sort_by(|&a, &b| self.union.name(a).cmp(self.union.name(b)));
        for child in by_name {
            let next = arena.len();
            arena[at].children.push(next);
            self.flatten(children, child, at, arena);
        }
    }

    /// The larger of a node's two shares, compared exactly: b/B against
    /// t/T as b*T against t*B.
    fn weight(&self, node: u32) -> u128 {
        let (b, t) = (
            self.totals[0][node as usize] as u128,
            self.totals[1][node as usize] as u128,
        );
        let (sb, st) = self.sides();
        (b * st.max(1) as u128).max(t * sb.max(1) as u128)
    }

    /// Marks the nodes kept. Every node below the root counts, `other`s
    /// included: a kept node with children reserves one for its `other`,
    /// given back when all its children are kept.
    fn keep_heaviest(&self, arena: &mut [Flat], budget: usize) {
        let reserve = |arena: &[Flat], at: usize| usize::from(!arena[at].children.is_empty());
        let mut left = budget.max(1).saturating_sub(reserve(arena, 0));
        arena[0].kept = true;
        arena[0].unkept = arena[0].children.len();
        let mut heap: BinaryHeap<(u128, Reverse<usize>)> = arena[0]
            .children
            .iter()
            .map(|&c| (self.weight(arena[c].node), Reverse(c)))
            .collect();
        while let Some(&(_, Reverse(at))) = heap.peek() {
            let cost = 1 + reserve(arena, at);
            if cost > left {
                break;
            }
            heap.pop();
            left -= cost;
            arena[at].kept = true;
            arena[at].unkept = arena[at].children.len();
            for &child in &arena[at].children {
                heap.push((self.weight(arena[child].node), Reverse(child)));
            }
            let parent = arena[at].parent;
            arena[parent].unkept -= 1;
            if arena[parent].unkept == 0 {
                left += 1;
            }
        }
    }

    fn emit(&self, arena: &mut [Flat], at: usize) -> DiffNode {
        let sides = self.sides();
        let mut kept = Vec::new();
        let (mut cut, mut baseline, mut target) = (0usize, 0u64, 0u64);
        for child in std::mem::take(&mut arena[at].children) {
            if arena[child].kept {
                kept.push(self.emit(arena, child));
            } else {
                let node = arena[child].node as usize;
                cut += 1;
                baseline += self.totals[0][node];
                target += self.totals[1][node];
            }
        }
        if cut > 0 {
            let other = OTHER_NAME.to_owned();
            kept.push(DiffNode::new(
                other,
                (baseline, baseline),
                (target, target),
                sides,
            ));
        }
        let node = arena[at].node;
        let name = if node == ROOT {
            ROOT_NAME
        } else {
            self.union.name(node)
        };
        let side = |s: usize| (self.totals[s][node as usize], self.counts[s][node as usize]);
        DiffNode {
            children: kept,
            ..DiffNode::new(name.to_owned(), side(0), side(1), sides)
        }
    }
}

/// [`changes`] from each side's function table and samples.
fn changes_between(
    (baseline, baseline_samples): (Vec<FunctionShare>, u64),
    (target, target_samples): (Vec<FunctionShare>, u64),
    limit: usize,
) -> Vec<FunctionChange> {
    // (self share, total share) per function and side.
    let mut by_function: HashMap<String, [(f64, f64); 2]> = HashMap::new();
    for (side, table) in [baseline, target].into_iter().enumerate() {
        for f in table {
            by_function.entry(f.function).or_insert([(0.0, 0.0); 2])[side] =
                (f.self_share, f.total_share);
        }
    }
    let mut out: Vec<FunctionChange> = by_function
        .into_iter()
        .map(|(function, [(bs, bt), (ts, tt)])| {
            let mut change = FunctionChange {
                function,
                baseline_self_share: bs,
                target_self_share: ts,
                baseline_total_share: bt,
                target_total_share: tt,
                delta_total_points: (tt - bt) * 100.0,
                delta_self_points: (ts - bs) * 100.0,
                delta_total_stderr_points: None,
                significant: false,
            };
            change.delta_total_stderr_points =
                change.total_stderr_points(baseline_samples, target_samples);
            change.significant =
                is_significant(change.delta_total_points, change.delta_total_stderr_points);
            change
        })
        .collect();
    out.sort_by(|a, b| {
        b.delta_total_points
            .abs()
            .total_cmp(&a.delta_total_points.abs())
            .then_with(|| {
                b.delta_self_points
                    .abs()
                    .total_cmp(&a.delta_self_points.abs())
            })
            .then_with(|| a.function.cmp(&b.function))
    });
    out.truncate(limit);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::view_of_stacks;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    fn baseline() -> View {
        view_of_stacks(&[(&["main", "hot"], 60), (&["main", "warm"], 40)])
    }

    fn target() -> View {
        // Twice the samples; hot went from 60% to 30%, cool is new.
        view_of_stacks(&[
            (&["main", "hot"], 60),
            (&["main", "warm"], 80),
            (&["main", "cool"], 60),
        ])
    }

    fn whole(baseline: &[&View], target: &[&View]) -> DiffNode {
        diff_tree(baseline, target, usize::MAX)
    }

    fn count(node: &DiffNode) -> usize {
        1 + node.children.iter().map(count).sum::<usize>()
    }

    #[test]
    fn tree_carries_both_sides_normalized_by_their_totals() {
        let root = whole(&[&baseline()], &[&target()]);
        assert_eq!((root.baseline_total, root.target_total), (100, 200));
        assert_eq!(root.name, "all");
        assert!(close(root.baseline_share, 1.0) && close(root.target_share, 1.0));
        let main = &root.children[0];
        assert_eq!((main.baseline_total, main.target_total), (100, 200));
        let names: Vec<&str> = main.children.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["cool", "hot", "warm"]);
        let cool = &main.children[0];
        assert_eq!(
            (cool.baseline_total, cool.target_total, cool.target_self),
            (0, 60, 60)
        );
        assert!(close(cool.baseline_share, 0.0) && close(cool.target_share, 0.3));
        let hot = &main.children[1];
        assert_eq!((hot.baseline_self, hot.target_self), (60, 60));
        assert!(close(hot.baseline_share, 0.6) && close(hot.target_share, 0.3));
        let warm = &main.children[2];
        assert!(close(warm.baseline_share, 0.4) && close(warm.target_share, 0.4));
    }

    #[test]
    fn a_side_of_many_views_is_their_sum() {
        let halves = [
            view_of_stacks(&[(&["main", "hot"], 60), (&["main", "warm"], 30)]),
            view_of_stacks(&[(&["main", "warm"], 50), (&["main", "cool"], 60)]),
        ];
        let split = whole(&[&baseline()], &[&halves[0], &halves[1]]);
        assert_eq!(split, whole(&[&baseline()], &[&target()]));
        assert_eq!(
            changes(&[&baseline()], &[&halves[0], &halves[1]], 10),
            changes(&[&baseline()], &[&target()], 10)
        );
    }

    #[test]
    fn changes_sorted_by_absolute_delta() {
        let changes = changes(&[&baseline()], &[&target()], 10);
        let table: Vec<(&str, f64)> = changes
            .iter()
            .map(|c| (c.function.as_str(), c.delta_total_points))
            .collect();
        assert_eq!(table.len(), 4);
        assert_eq!(table[0].0, "cool");
        assert!(close(table[0].1, 30.0));
        assert_eq!(table[1].0, "hot");
        assert!(close(table[1].1, -30.0));
        // main and warm did not move; main's self share is 0 on both sides.
        assert_eq!((table[2].0, table[3].0), ("main", "warm"));
        assert!(close(table[2].1, 0.0) && close(table[3].1, 0.0));
        let hot = &changes[1];
        assert!(close(hot.baseline_self_share, 0.6) && close(hot.target_self_share, 0.3));
        assert!(close(hot.delta_self_points, -30.0));
        assert_eq!(super::changes(&[&baseline()], &[&target()], 1).len(), 1);
    }

    #[test]
    fn each_change_carries_its_error_and_whether_it_is_beyond_chance() {
        let all = changes(&[&baseline()], &[&target()], 10);
        let change = |name: &str| all.iter().find(|c| c.function == name).unwrap();
        // hot: 0.6 of 100 against 0.3 of 200.
        let hot = change("hot");
        let expected = 100.0 * (0.6f64 * 0.4 / 100.0 + 0.3 * 0.7 / 200.0).sqrt();
        assert!(close(hot.delta_total_stderr_points.unwrap(), expected));
        assert!(hot.significant, "-30 points against ± {expected:.1}");
        // warm did not move; main is on every stack of both sides, a share
        // known exactly, and did not move either.
        assert!(!change("warm").significant && !change("main").significant);
        assert_eq!(change("main").delta_total_stderr_points, Some(0.0));
        // The same 10-point move is noise in 20 samples, not in 20,000.
        let first = |b: &[(&[&str], u64)], t: &[(&[&str], u64)]| {
            let (b, t) = (view_of_stacks(b), view_of_stacks(t));
            changes(&[&b], &[&t], 10)[0].significant
        };
        assert!(!first(
            &[(&["a"], 6), (&["b"], 4)],
            &[(&["a"], 5), (&["b"], 5)]
        ));
        assert!(first(
            &[(&["a"], 6_000), (&["b"], 4_000)],
            &[(&["a"], 5_000), (&["b"], 5_000)]
        ));
        // Without samples on a side there is no error to give.
        assert!(changes(&[], &[&target()], 10)
            .iter()
            .all(|c| c.delta_total_stderr_points.is_none() && !c.significant));
    }

    #[test]
    fn an_empty_side_has_zero_shares() {
        let root = whole(&[], &[&target()]);
        assert_eq!(root.baseline_total, 0);
        assert!(close(root.baseline_share, 0.0));
        assert!(close(root.children[0].target_share, 1.0));
        let changes = changes(&[&View::default()], &[&target()], 10);
        let cool = changes.iter().find(|c| c.function == "cool").unwrap();
        assert!(close(cool.delta_total_points, 30.0));
    }

    #[test]
    fn trimming_keeps_the_heaviest_nodes_of_either_side_and_every_total() {
        let baseline = view_of_stacks(&[
            (&["main", "a", "a1"], 50),
            (&["main", "b"], 30),
            (&["main", "c"], 10),
            (&["main", "d"], 10),
        ]);
        let target = view_of_stacks(&[
            (&["main", "a", "a1"], 10),
            (&["main", "b"], 10),
            (&["main", "c"], 170),
            (&["main", "d"], 10),
        ]);
        let (baseline, target) = ([&baseline], [&target]);
        let full = whole(&baseline, &target);
        assert_eq!(diff_tree(&baseline, &target, 100), full, "nothing to cut");
        let cut = diff_tree(&baseline, &target, 5);
        let main = &cut.children[0];
        let names: Vec<&str> = main.children.iter().map(|c| c.name.as_str()).collect();
        // c is heaviest in the target, a in the baseline.
        assert_eq!(names, ["a", "c", OTHER_NAME]);
        let other = &main.children[2];
        assert_eq!((other.baseline_total, other.target_total), (40, 20));
        assert_eq!((other.baseline_self, other.target_self), (40, 20));
        assert!((other.baseline_share - 0.4).abs() < 1e-9);
        assert_eq!(main.children[0].children[0].name, OTHER_NAME, "a1 cut");
        assert_eq!((main.baseline_total, main.target_total), (100, 200));
        assert_eq!(count(&cut), 1 + 5);
        for budget in 1..12 {
            let cut = diff_tree(&baseline, &target, budget);
            assert!(count(&cut) <= 1 + budget.max(2), "{budget}: {cut:?}");
            assert_eq!((cut.baseline_total, cut.target_total), (100, 200));
        }
    }
}
