//! The hottest functions of a selection, from per-node counts: self
//! samples where the function is the leaf, total samples where it is on
//! the stack (once per stack, however deep the recursion), each share with
//! its binomial error bound.

use odp_core::stats::FunctionShare;

use crate::tree::ROOT;
use crate::view::View;

/// Per name of `view`: (self samples, total samples).
pub fn name_counts(view: &View) -> (Vec<u64>, Vec<u64>) {
    let mut self_samples = vec![0u64; view.names.len()];
    let mut total_samples = vec![0u64; view.names.len()];
    // The last stack each name was counted for, so recursion counts once.
    let mut counted_for = vec![u32::MAX; view.names.len()];
    for (node, &count) in view.counts.iter().enumerate() {
        if count == 0 || node == ROOT as usize {
            continue;
        }
        let leaf = view.tree.frame(node as u32) as usize;
        self_samples[leaf] += count;
        let mut at = node as u32;
        while at != ROOT {
            let name = view.tree.frame(at) as usize;
            if counted_for[name] != node as u32 {
                counted_for[name] = node as u32;
                total_samples[name] += count;
            }
            at = view.tree.parent(at);
        }
    }
    (self_samples, total_samples)
}

/// Functions by self samples, largest first (then by total, then name),
/// at most `limit`.
pub fn top_functions(view: &View, limit: usize) -> Vec<FunctionShare> {
    crate::many::top_functions(&[view], limit)
}
