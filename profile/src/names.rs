//! The tree users see: frames by their display names.
//!
//! Storage keeps frames whole (function, module, file, line): rules match
//! modules, pprof exports lines. Flame graphs, top tables and filters go by
//! the display name (`demo_hot`, `[libc.so.6]`), so two frames of one
//! function on different lines are one box. [`NameTree`] projects a
//! profile's stack tree onto display names once per read, in one pass.

use odp_core::filter::StackFilter;

use crate::profile::Profile;
use crate::sources::Sources;
use crate::tree::{StackTree, ROOT};
use crate::view::View;

#[derive(Debug, Clone)]
pub struct NameTree {
    /// Distinct display names.
    pub names: Vec<String>,
    /// Per frame of the profile, its name.
    frame_names: Vec<u32>,
    /// Stacks of names: nodes whose frames share a name are one node.
    pub tree: StackTree,
    /// Per node of the profile's tree, its node here.
    node_map: Vec<u32>,
    /// Per node here, the file and line of its frames.
    sources: Sources,
}

impl NameTree {
    pub fn new(profile: &Profile) -> NameTree {
        let mut ids = std::collections::HashMap::new();
        let mut names: Vec<String> = Vec::new();
        let frame_names: Vec<u32> = profile
            .frames
            .iter()
            .map(|frame| {
                let name = frame.display_name();
                *ids.entry(name.clone()).or_insert_with(|| {
                    names.push(name);
                    (names.len() - 1) as u32
                })
            })
            .collect();
        let (tree, node_map) = if names.len() == profile.frames.len() {
            // Every frame has a name of its own (name i is frame i): the
            // tree by names is the profile's tree.
            let identity = (0..profile.tree.len() as u32).collect();
            (profile.tree.clone(), identity)
        } else {
            let mut tree = StackTree::default();
            let mut node_map = vec![ROOT; profile.tree.len()];
            for node in 1..profile.tree.len() as u32 {
                let parent = node_map[profile.tree.parent(node) as usize];
                let name = frame_names[profile.tree.frame(node) as usize];
                node_map[node as usize] = tree.child(parent, name);
            }
            (tree, node_map)
        };
        let sources = Sources::of_profile(&profile.frames, &profile.tree, &node_map, tree.len());
        NameTree {
            names,
            frame_names,
            tree,
            node_map,
            sources,
        }
    }

    /// Per-node counts of the profile's tree, added up per node here.
    pub fn project(&self, counts: &[u64]) -> Vec<u64> {
        let mut out = vec![0u64; self.tree.len()];
        for (node, &count) in counts.iter().enumerate() {
            out[self.node_map[node] as usize] += count;
        }
        out
    }

    /// Per-node counts of the profile's tree as a [`View`].
    pub fn view(&self, counts: &[u64]) -> View {
        View {
            names: self.names.clone(),
            tree: self.tree.clone(),
            counts: self.project(counts),
            sources: self.sources.clone(),
        }
    }

    /// Per node of the profile's `tree` (which this was built from),
    /// whether `filter` keeps the stack ending there: include needs a
    /// matching frame on the path, exclude refuses one.
    pub fn stacks_kept(&self, tree: &StackTree, filter: &StackFilter) -> Vec<bool> {
        nodes_kept(tree, &self.names, &self.frame_names, filter)
    }
}

/// Per node of `profile`'s tree, whether `filter` keeps the stack ending
/// there, as [`NameTree::stacks_kept`] without building the tree of
/// names: for reads that need no flame graph (a function's trend).
pub fn stacks_kept(profile: &Profile, filter: &StackFilter) -> Vec<bool> {
    let names: Vec<String> = profile.frames.iter().map(|f| f.display_name()).collect();
    let frame_names: Vec<u32> = (0..names.len() as u32).collect();
    nodes_kept(&profile.tree, &names, &frame_names, filter)
}

/// Per node of `tree`: include needs a frame matching on the path,
/// exclude refuses one. `frame_names` gives each frame's index in `names`.
fn nodes_kept(
    tree: &StackTree,
    names: &[String],
    frame_names: &[u32],
    filter: &StackFilter,
) -> Vec<bool> {
    let matches = |pattern: &Option<regex::Regex>| -> Option<Vec<bool>> {
        pattern
            .as_ref()
            .map(|p| names.iter().map(|n| p.is_match(n)).collect())
    };
    let (include, exclude) = (matches(&filter.include), matches(&filter.exclude));
    let mut included = vec![include.is_none(); tree.len()];
    let mut excluded = vec![false; tree.len()];
    for node in 1..tree.len() {
        let parent = tree.parent(node as u32) as usize;
        let name = frame_names[tree.frame(node as u32) as usize] as usize;
        included[node] = included[parent] || include.as_ref().is_some_and(|m| m[name]);
        excluded[node] = excluded[parent] || exclude.as_ref().is_some_and(|m| m[name]);
    }
    included
        .into_iter()
        .zip(excluded)
        .map(|(inc, exc)| inc && !exc)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::ProfileBuilder;
    use odp_core::Frame;

    #[test]
    fn frames_of_one_name_are_one_node() {
        let mut b = ProfileBuilder::default();
        let main = b.frame(&Frame::function("main"));
        let line = |l| {
            let mut frame = Frame::function("work");
            frame.line = Some(l);
            frame
        };
        let (work_1, work_2) = (b.frame(&line(1)), b.frame(&line(2)));
        let unnamed = b.frame(&Frame::function("").with_module("/lib/libc.so.6"));
        let w = b.window(crate::profile::Window {
            profile_id: uuid::Uuid::nil(),
            host: "h".into(),
            agent_id: "a".into(),
            sequence: 0,
            start_ms: 0,
            end_ms: 1,
            event: odp_core::EventKind::CpuClock,
            period: 1,
            frequency_hz: 1,
        });
        b.samples(w, 0, &[main, work_1], 2);
        b.samples(w, 0, &[main, work_2], 3);
        b.samples(w, 0, &[main, work_2, unnamed], 1);
        let profile = b.build();
        let names = NameTree::new(&profile);
        assert_eq!(names.names, ["main", "work", "[libc.so.6]"]);
        // root, main, work, [libc.so.6]
        assert_eq!(names.tree.len(), 4);
        let mut counts = vec![0; profile.tree.len()];
        for s in &profile.samples {
            counts[s.node as usize] += s.count;
        }
        assert_eq!(names.project(&counts), [0, 0, 5, 1]);
        let filter = StackFilter::new(Some("libc"), None).unwrap();
        let kept = names.stacks_kept(&profile.tree, &filter);
        let leaf = profile.tree.find(&[main, work_2, unnamed]).unwrap();
        assert!(kept[leaf as usize]);
        assert_eq!(kept.iter().filter(|&&k| k).count(), 1);
        for (include, exclude) in [(Some("libc"), None), (Some("^work$"), Some("libc"))] {
            let filter = StackFilter::new(include, exclude).unwrap();
            assert_eq!(
                stacks_kept(&profile, &filter),
                names.stacks_kept(&profile.tree, &filter),
                "{include:?} {exclude:?}"
            );
        }
    }
}
