//! What a read renders: a selection's counts on a tree of display names.
//!
//! A [`View`] is made from one profile ([`crate::NameTree::view`]) and
//! several merge into one ([`View::merge`], over integer ids: each view's
//! names are mapped once, then its nodes in order). Flame graphs, top
//! tables and stacks for exports are computed from it.

use std::collections::HashMap;

use crate::tree::{StackTree, ROOT};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    /// Distinct display names.
    pub names: Vec<String>,
    /// Call paths over `names`.
    pub tree: StackTree,
    /// Self count per node of `tree`.
    pub counts: Vec<u64>,
}

impl Default for View {
    /// Nothing: the root alone, with no samples.
    fn default() -> Self {
        View {
            names: Vec::new(),
            tree: StackTree::default(),
            counts: vec![0],
        }
    }
}

impl View {
    /// Every count, summed.
    pub fn samples(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Totals per node: each node's self count plus its descendants'.
    pub fn totals(&self) -> Vec<u64> {
        let mut totals = self.counts.clone();
        // Parents precede their children, so one backward pass sums subtrees.
        for node in (1..self.tree.len()).rev() {
            let parent = self.tree.parent(node as u32) as usize;
            totals[parent] += totals[node];
        }
        totals
    }

    /// Per name: (self samples, total samples).
    pub fn name_counts(&self) -> (Vec<u64>, Vec<u64>) {
        let mut self_samples = vec![0u64; self.names.len()];
        let mut total_samples = vec![0u64; self.names.len()];
        // The last stack each name was counted for, so recursion counts once.
        let mut counted_for = vec![u32::MAX; self.names.len()];
        for (node, &count) in self.counts.iter().enumerate() {
            if count == 0 || node == ROOT as usize {
                continue;
            }
            let leaf = self.tree.frame(node as u32) as usize;
            self_samples[leaf] += count;
            let mut at = node as u32;
            while at != ROOT {
                let name = self.tree.frame(at) as usize;
                if counted_for[name] != node as u32 {
                    counted_for[name] = node as u32;
                    total_samples[name] += count;
                }
                at = self.tree.parent(at);
            }
        }
        (self_samples, total_samples)
    }

    /// The names of a node's stack, root first.
    pub fn stack_names(&self, node: u32) -> Vec<String> {
        self.tree
            .stack(node)
            .into_iter()
            .map(|name| self.names[name as usize].clone())
            .collect()
    }

    /// The name of a node (the root's is empty).
    pub fn name(&self, node: u32) -> &str {
        if node == ROOT {
            ""
        } else {
            &self.names[self.tree.frame(node) as usize]
        }
    }

    /// [`View::merge`], taking the views: one view is returned as it is.
    pub fn merge_owned(mut views: Vec<View>) -> View {
        if views.len() == 1 {
            return views.pop().expect("one view");
        }
        View::merge(&views)
    }

    /// The views added up: identical call paths (by name) merge.
    pub fn merge(views: &[View]) -> View {
        let mut out = View::default();
        let mut ids: HashMap<String, u32> = HashMap::new();
        for view in views {
            let names: Vec<u32> = view
                .names
                .iter()
                .map(|name| {
                    *ids.entry(name.clone()).or_insert_with(|| {
                        out.names.push(name.clone());
                        (out.names.len() - 1) as u32
                    })
                })
                .collect();
            let mut nodes = vec![ROOT; view.tree.len()];
            for node in 1..view.tree.len() as u32 {
                let parent = nodes[view.tree.parent(node) as usize];
                let name = names[view.tree.frame(node) as usize];
                let merged = out.tree.child(parent, name);
                nodes[node as usize] = merged;
                if merged as usize == out.counts.len() {
                    out.counts.push(0);
                }
            }
            for (node, &count) in view.counts.iter().enumerate() {
                out.counts[nodes[node] as usize] += count;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(stacks: &[(&[&str], u64)]) -> View {
        let mut v = View::default();
        for (frames, count) in stacks {
            let ids: Vec<u32> = frames
                .iter()
                .map(|f| match v.names.iter().position(|n| n == f) {
                    Some(i) => i as u32,
                    None => {
                        v.names.push(f.to_string());
                        (v.names.len() - 1) as u32
                    }
                })
                .collect();
            let node = v.tree.intern(&ids) as usize;
            v.counts.resize(v.tree.len(), 0);
            v.counts[node] += count;
        }
        v
    }

    #[test]
    fn an_empty_view_has_a_root_without_samples() {
        let empty = View::merge(&[]);
        assert_eq!(empty, View::default());
        assert_eq!(crate::flame::build(&empty, 10, None).total, 0);
        assert!(crate::top::top_functions(&empty, 10).is_empty());
        assert!(crate::stacks::weighted_stacks(&empty).is_empty());
    }

    #[test]
    fn merging_adds_identical_paths_by_name() {
        let a = view(&[(&["main", "hot"], 3), (&["main"], 1)]);
        let b = view(&[(&["other"], 2), (&["main", "hot"], 4)]);
        let merged = View::merge(&[a, b]);
        assert_eq!(merged.samples(), 10);
        let hot = merged.tree.find(&[0, 1]).unwrap();
        assert_eq!(merged.counts[hot as usize], 7);
        assert_eq!(merged.stack_names(hot), ["main", "hot"]);
        assert_eq!(merged.tree.len(), 4);
    }
}
