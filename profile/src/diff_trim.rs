//! A diff's tree cut to a node budget, as flame graphs are: the heaviest
//! nodes by the larger of their two shares are kept, each with its path,
//! and each kept node's other children become one `other` child carrying
//! their counts, so every total stays exact.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use odp_core::diff::DiffNode;

use crate::flame::OTHER_NAME;

/// `root` cut to at most `budget` nodes below it (`other`s included), as
/// flame graphs are: the heaviest nodes by the larger of their two shares
/// are kept (a node only with its parent), and each kept node's other
/// children become one `other` child with their counts, so every kept
/// node's totals stay exact.
pub fn trim_diff(root: DiffNode, budget: usize) -> DiffNode {
    struct Flat {
        node: DiffNode,
        parent: usize,
        children: Vec<usize>,
        kept: bool,
        /// Children not (yet) kept, while the node is kept.
        unkept: usize,
    }
    fn flatten(mut node: DiffNode, parent: usize, arena: &mut Vec<Flat>) -> usize {
        let at = arena.len();
        let children = std::mem::take(&mut node.children);
        arena.push(Flat {
            node,
            parent,
            children: Vec::new(),
            kept: false,
            unkept: 0,
        });
        let ids = children
            .into_iter()
            .map(|c| flatten(c, at, arena))
            .collect();
        arena[at].children = ids;
        at
    }
    fn rebuild(arena: &mut [Flat], at: usize, totals: (u64, u64)) -> DiffNode {
        let children = std::mem::take(&mut arena[at].children);
        let mut kept = Vec::new();
        let (mut cut, mut baseline, mut target) = (0usize, 0u64, 0u64);
        for child in children {
            if arena[child].kept {
                kept.push(rebuild(arena, child, totals));
            } else {
                cut += 1;
                baseline += arena[child].node.baseline_total;
                target += arena[child].node.target_total;
            }
        }
        if cut > 0 {
            let other = (
                OTHER_NAME.to_owned(),
                (baseline, baseline),
                (target, target),
            );
            kept.push(DiffNode::new(other.0, other.1, other.2, totals));
        }
        let mut node = std::mem::replace(
            &mut arena[at].node,
            DiffNode::new(String::new(), (0, 0), (0, 0), totals),
        );
        node.children = kept;
        node
    }
    let totals = (root.baseline_total, root.target_total);
    let mut arena = Vec::new();
    flatten(root, 0, &mut arena);
    // The larger share, compared exactly: b/B against t/T as b*T against t*B.
    let weight = |n: &DiffNode| {
        let (b, t) = (n.baseline_total as u128, n.target_total as u128);
        (b * totals.1.max(1) as u128).max(t * totals.0.max(1) as u128)
    };
    // Every node below the root counts, `other`s included: a kept node
    // with children reserves one for its `other`, given back when all its
    // children are kept.
    let reserve = |arena: &[Flat], at: usize| usize::from(!arena[at].children.is_empty());
    let mut left = budget.max(1).saturating_sub(reserve(&arena, 0));
    arena[0].kept = true;
    arena[0].unkept = arena[0].children.len();
    let mut heap: BinaryHeap<(u128, Reverse<usize>)> = arena[0]
        .children
        .iter()
        .map(|&c| (weight(&arena[c].node), Reverse(c)))
        .collect();
    while let Some(&(_, Reverse(at))) = heap.peek() {
        let cost = 1 + reserve(&arena, at);
        if cost > left {
            break;
        }
        heap.pop();
        left -= cost;
        arena[at].kept = true;
        arena[at].unkept = arena[at].children.len();
        for &child in &arena[at].children {
            heap.push((weight(&arena[child].node), Reverse(child)));
        }
        let parent = arena[at].parent;
        arena[parent].unkept -= 1;
        if arena[parent].unkept == 0 {
            left += 1;
        }
    }
    rebuild(&mut arena, 0, totals)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws(frames: &[&str], count: u64) -> odp_core::WeightedStack {
        odp_core::WeightedStack {
            frames: frames.iter().map(|s| s.to_string()).collect(),
            count,
        }
    }

    fn count(node: &DiffNode) -> usize {
        1 + node.children.iter().map(count).sum::<usize>()
    }

    #[test]
    fn trimming_keeps_the_heaviest_nodes_of_either_side_and_every_total() {
        let baseline = [
            ws(&["main", "a", "a1"], 50),
            ws(&["main", "b"], 30),
            ws(&["main", "c"], 10),
            ws(&["main", "d"], 10),
        ];
        let target = [
            ws(&["main", "a", "a1"], 10),
            ws(&["main", "b"], 10),
            ws(&["main", "c"], 170),
            ws(&["main", "d"], 10),
        ];
        let full = odp_core::diff::diff(&baseline, &target, 10).root;
        assert_eq!(trim_diff(full.clone(), 100), full, "nothing to cut");
        let cut = trim_diff(full.clone(), 5);
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
            let cut = trim_diff(full.clone(), budget);
            assert!(count(&cut) <= 1 + budget.max(2), "{budget}: {cut:?}");
            assert_eq!((cut.baseline_total, cut.target_total), (100, 200));
        }
    }
}
