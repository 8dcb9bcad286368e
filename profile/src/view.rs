//! What a read renders: a selection's counts on a tree of display names.
//!
//! A [`View`] is made from one profile ([`crate::NameTree::view`]) and
//! several merge into one ([`View::merge`], over integer ids: each view's
//! names are mapped once, then its nodes in order). Flame graphs, top
//! tables and stacks for exports are computed from it.

use std::collections::HashMap;

use odp_core::flamegraph::FlameNode;

use crate::sources::Sources;
use crate::tree::{StackTree, ROOT};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    /// Distinct display names.
    pub names: Vec<String>,
    /// Call paths over `names`.
    pub tree: StackTree,
    /// Self count per node of `tree`.
    pub counts: Vec<u64>,
    /// Per node of `tree`, the file and line of its code, when known.
    pub sources: Sources,
}

impl Default for View {
    /// Nothing: the root alone, with no samples.
    fn default() -> Self {
        View {
            names: Vec::new(),
            tree: StackTree::default(),
            counts: vec![0],
            sources: Sources::default(),
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
        self.tree.totals(&self.counts)
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

    /// The views added up: identical call paths (by name) merge, each
    /// with the smallest source location of the nodes it merges.
    pub fn merge(views: &[View]) -> View {
        let mut out = View::default();
        let mut ids = HashMap::new();
        let mut located = Vec::new();
        for view in views {
            let nodes = out.graft(view, &mut ids);
            for (node, &count) in view.counts.iter().enumerate() {
                out.counts[nodes[node] as usize] += count;
            }
            if !view.sources.is_empty() {
                located.push((&view.sources, nodes));
            }
        }
        out.sources = Sources::merge(
            located.iter().map(|(s, nodes)| (*s, nodes.as_slice())),
            out.tree.len(),
        );
        out
    }

    /// Adds `other`'s names and call paths to this view's, without their
    /// samples or sources, and returns per node of `other` its node here. `ids` holds
    /// this view's names' ids, as earlier grafts left it.
    pub(crate) fn graft(&mut self, other: &View, ids: &mut HashMap<String, u32>) -> Vec<u32> {
        let names: Vec<u32> = other
            .names
            .iter()
            .map(|name| {
                *ids.entry(name.clone()).or_insert_with(|| {
                    self.names.push(name.clone());
                    (self.names.len() - 1) as u32
                })
            })
            .collect();
        let mut nodes = vec![ROOT; other.tree.len()];
        for node in 1..other.tree.len() as u32 {
            let parent = nodes[other.tree.parent(node) as usize];
            let name = names[other.tree.frame(node) as usize];
            nodes[node as usize] = self.tree.child(parent, name);
        }
        self.counts.resize(self.tree.len(), 0);
        nodes
    }

    /// A flame graph (as a read answers it) back on the model: each node's
    /// own samples on its path, so what is computed from the view (a
    /// client's top table) is what the read's stacks give, with each
    /// node's file and line. The root's own samples are no function's and
    /// are left out; an `other` node stays a node of that name.
    pub fn from_flame_graph(root: &FlameNode) -> View {
        let mut view = View::default();
        let mut ids: HashMap<&str, u32> = HashMap::new();
        let mut sources = vec![None];
        let mut todo = vec![(root, ROOT)];
        while let Some((node, at)) = todo.pop() {
            for child in &node.children {
                let name = *ids.entry(child.name.as_str()).or_insert_with(|| {
                    view.names.push(child.name.clone());
                    (view.names.len() - 1) as u32
                });
                let id = view.tree.child(at, name);
                view.counts.resize(view.tree.len(), 0);
                view.counts[id as usize] += child.self_count;
                sources.resize(view.tree.len(), None);
                // A node's children have a name each, so this is its only
                // node here.
                sources[id as usize] = child.file.as_deref().map(|file| (file, child.line));
                todo.push((child, id));
            }
        }
        view.sources = Sources::of_nodes(&sources);
        view
    }
}

/// Views of stacks by name, for tests: `(frames, count)`, root first.
#[cfg(test)]
pub(crate) fn view_of_stacks(stacks: &[(&[&str], u64)]) -> View {
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

#[cfg(test)]
mod tests {
    use super::*;

    use view_of_stacks as view;

    #[test]
    fn an_empty_view_has_a_root_without_samples() {
        let empty = View::merge(&[]);
        assert_eq!(empty, View::default());
        assert_eq!(crate::flame::build(&empty, 10, None).total, 0);
        assert!(crate::top::top_functions(&empty, 10).is_empty());
        assert!(crate::stacks::weighted_stacks(&empty).is_empty());
    }

    #[test]
    fn a_flame_graph_reads_back_as_its_stacks() {
        let v = view(&[
            (&["main", "hot"], 6),
            (&["main", "warm"], 3),
            (&["main"], 1),
            (&["b", "c"], 2),
        ]);
        let full = crate::flame::build(&v, usize::MAX, None);
        let back = View::from_flame_graph(&full);
        assert_eq!(back.samples(), 12);
        assert_eq!(crate::flame::build(&back, usize::MAX, None), full);
        let top = |v: &View| crate::top::top_functions(v, 10);
        assert_eq!(top(&back), top(&v));
        // Cut to main and hot: warm and b's subtree are `other`s, which
        // read back as one function of that name.
        let cut = View::from_flame_graph(&crate::flame::build(&v, 2, None));
        let table: Vec<(String, u64, u64)> = top(&cut)
            .into_iter()
            .map(|f| (f.function, f.self_samples, f.total_samples))
            .collect();
        let expected = [("hot", 6, 6), ("other", 5, 5), ("main", 1, 10)];
        assert_eq!(table, expected.map(|(f, s, t)| (f.to_owned(), s, t)));
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
