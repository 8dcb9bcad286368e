//! A selection's stacks by name, for the formats other tools read
//! (folded, pprof, speedscope) and for SVG rendering.

use odp_core::WeightedStack;

use crate::tree::ROOT;
use crate::view::View;

/// Every stack with samples, root first by name.
pub fn weighted_stacks(view: &View) -> Vec<WeightedStack> {
    pruned_stacks(view, 0)
}

/// The stacks with every subtree whose total is under `min_total` folded
/// into its parent (whose width the subtree's samples keep): what a flame
/// graph renderer would draw, as boxes that narrow are not drawn anyway.
pub fn pruned_stacks(view: &View, min_total: u64) -> Vec<WeightedStack> {
    let totals = view.totals();
    // Where each node's samples land: itself, or its nearest ancestor
    // that stays (parents come before children).
    let mut lands = vec![ROOT; view.tree.len()];
    let mut counts = vec![0u64; view.tree.len()];
    for node in 1..view.tree.len() {
        let parent = view.tree.parent(node as u32);
        lands[node] = if totals[node] >= min_total.max(1) {
            node as u32
        } else {
            lands[parent as usize]
        };
        counts[lands[node] as usize] += view.counts[node];
    }
    (1..view.tree.len())
        .filter(|&node| counts[node] > 0)
        .map(|node| WeightedStack {
            frames: view.stack_names(node as u32),
            count: counts[node],
        })
        .collect()
}
