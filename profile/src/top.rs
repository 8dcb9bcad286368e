//! The hottest functions of a selection, from per-node counts: self
//! samples where the function is the leaf, total samples where it is on
//! the stack (once per stack, however deep the recursion), each share with
//! its binomial error bound.

use odp_core::stats::{binomial_stderr, FunctionShare};

use crate::tree::ROOT;
use crate::view::View;

/// Functions by self samples, largest first (then by total, then name),
/// at most `limit`.
pub fn top_functions(view: &View, limit: usize) -> Vec<FunctionShare> {
    let mut self_samples = vec![0u64; view.names.len()];
    let mut total_samples = vec![0u64; view.names.len()];
    // The last stack each name was counted for, so recursion counts once.
    let mut counted_for = vec![u32::MAX; view.names.len()];
    let mut samples = 0u64;
    for (node, &count) in view.counts.iter().enumerate() {
        if count == 0 || node == ROOT as usize {
            continue;
        }
        samples += count;
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
    let share = |k: u64| {
        if samples == 0 {
            0.0
        } else {
            k as f64 / samples as f64
        }
    };
    let mut hot: Vec<usize> = (0..view.names.len())
        .filter(|&name| total_samples[name] > 0)
        .collect();
    hot.sort_by(|&a, &b| {
        self_samples[b]
            .cmp(&self_samples[a])
            .then(total_samples[b].cmp(&total_samples[a]))
            .then_with(|| view.names[a].cmp(&view.names[b]))
    });
    hot.truncate(limit);
    hot.into_iter()
        .map(|name| FunctionShare {
            function: view.names[name].clone(),
            self_samples: self_samples[name],
            total_samples: total_samples[name],
            self_share: share(self_samples[name]),
            total_share: share(total_samples[name]),
            self_share_stderr: binomial_stderr(self_samples[name], samples),
        })
        .collect()
}
