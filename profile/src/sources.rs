//! Where a view's nodes' code is: the file and line "view source" opens.
//!
//! Frames keep the file and line their agent reported (py-spy's Python
//! frames have both, perf's native frames neither). A node of a view is
//! every frame of one display name on one path, so it merges a
//! function's lines (py-spy reports the line executing, not the
//! function's) and, now and then, same-named functions of several files
//! (two classes' `__init__` called from one place).
//!
//! A node names the smallest `(file, line)` of its frames. For one
//! function that is the first of its lines the samples show: the nearest
//! to its `def` py-spy tells, so the link opens at the top of the
//! function the user clicked, and every read of that function links to
//! the same place. The most-sampled line would move with the time range
//! and hosts read and need per-line counts through every merge of views,
//! and where the time goes inside the function is what the node's
//! children already show. A node that merges files names the first file
//! by name: one stable pick, which the UI shows as `file:line` before
//! anything opens.
//!
//! The table of locations is sorted, so the smaller index is the smaller
//! location: a node's minimum is taken over integers, and views merge by
//! mapping each one's indexes once.

use odp_core::Frame;

use crate::tree::StackTree;

/// No location: the node's frames name no file.
const NONE: u32 = u32::MAX;

/// A file, and the line in it when known.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SourceLine {
    pub file: String,
    pub line: Option<u32>,
}

/// Per node of a view, its [`SourceLine`], if any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sources {
    /// Distinct locations, sorted.
    locations: Vec<SourceLine>,
    /// Per node, its index in `locations` or [`NONE`]; empty when no node
    /// has one (every view without files costs nothing).
    nodes: Vec<u32>,
}

/// A location as it is compared before it is copied: `(file, line)`
/// orders as [`SourceLine`] does.
type Key<'a> = (&'a str, Option<u32>);

/// The distinct locations of `items`, sorted, and per item its index in
/// them.
fn tabulate(items: &[Option<Key<'_>>]) -> (Vec<SourceLine>, Vec<u32>) {
    let mut keys: Vec<Key<'_>> = items.iter().flatten().copied().collect();
    keys.sort_unstable();
    keys.dedup();
    let ids = items
        .iter()
        .map(|item| match item {
            Some(key) => keys.binary_search(key).expect("every key is in the table") as u32,
            None => NONE,
        })
        .collect();
    let locations = keys
        .into_iter()
        .map(|(file, line)| SourceLine {
            file: file.to_owned(),
            line,
        })
        .collect();
    (locations, ids)
}

impl Sources {
    /// Per node of a tree by names of `len` nodes, the smallest location
    /// of the frames mapped to it: `node_map` gives, per node of the
    /// profile's `tree` over `frames`, its node by names.
    pub(crate) fn of_profile(
        frames: &[Frame],
        tree: &StackTree,
        node_map: &[u32],
        len: usize,
    ) -> Sources {
        if frames.iter().all(|f| f.file.is_none()) {
            return Sources::default();
        }
        let items: Vec<Option<Key<'_>>> = frames
            .iter()
            .map(|f| f.file.as_deref().map(|file| (file, f.line)))
            .collect();
        let (locations, frame_ids) = tabulate(&items);
        let mut nodes = vec![NONE; len];
        for node in 1..tree.len() as u32 {
            let at = &mut nodes[node_map[node as usize] as usize];
            *at = (*at).min(frame_ids[tree.frame(node) as usize]);
        }
        Sources { locations, nodes }
    }

    /// One location (or none) per node, as given.
    pub(crate) fn of_nodes(items: &[Option<Key<'_>>]) -> Sources {
        if items.iter().all(Option::is_none) {
            return Sources::default();
        }
        let (locations, nodes) = tabulate(items);
        Sources { locations, nodes }
    }

    /// Whether no node has a location.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The location of `node`'s code, if its frames name a file.
    pub fn get(&self, node: u32) -> Option<&SourceLine> {
        let id = *self.nodes.get(node as usize)?;
        self.locations.get(id as usize)
    }

    /// The sources of views merged into one of `len` nodes: per view, its
    /// sources and, per node, its node in the merge. Each merged node
    /// takes the smallest location of the nodes merged into it.
    pub(crate) fn merge<'a>(
        parts: impl IntoIterator<Item = (&'a Sources, &'a [u32])>,
        len: usize,
    ) -> Sources {
        let parts: Vec<_> = parts.into_iter().filter(|(s, _)| !s.is_empty()).collect();
        if parts.is_empty() {
            return Sources::default();
        }
        let mut locations: Vec<SourceLine> = parts
            .iter()
            .flat_map(|(s, _)| s.locations.iter().cloned())
            .collect();
        locations.sort_unstable();
        locations.dedup();
        let mut nodes = vec![NONE; len];
        for (sources, node_map) in parts {
            let ids: Vec<u32> = sources
                .locations
                .iter()
                .map(|l| locations.binary_search(l).expect("merged above") as u32)
                .collect();
            for (node, &id) in sources.nodes.iter().enumerate() {
                if id != NONE {
                    let at = &mut nodes[node_map[node] as usize];
                    *at = (*at).min(ids[id as usize]);
                }
            }
        }
        Sources { locations, nodes }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(file: &str, line: u32) -> SourceLine {
        SourceLine {
            file: file.to_owned(),
            line: Some(line),
        }
    }

    #[test]
    fn a_node_takes_its_frames_smallest_location() {
        // root, then `work` twice on one path by names: lines 16 and 15
        // (node 2) and a native frame with no file (node 3).
        let frame = |l: u32| {
            let mut f = Frame::function("work");
            f.file = Some("hot.py".to_owned());
            f.line = Some(l);
            f
        };
        let frames = [frame(16), frame(15), Frame::function("memcpy")];
        let mut tree = StackTree::default();
        tree.intern(&[0]);
        tree.intern(&[1]);
        tree.intern(&[1, 2]);
        // Profile nodes 1 and 2 are one node by names.
        let node_map = [0, 1, 1, 2];
        let sources = Sources::of_profile(&frames, &tree, &node_map, 3);
        assert_eq!(sources.get(1), Some(&line("hot.py", 15)));
        assert_eq!(sources.get(2), None);
        assert_eq!(sources.get(0), None);
        assert_eq!(sources.get(7), None);
        let native = Sources::of_profile(&frames[2..], &StackTree::default(), &[0], 1);
        assert!(native.is_empty());
    }

    #[test]
    fn merged_views_keep_the_smallest_location_per_node() {
        let a = Sources::of_nodes(&[None, Some(("b.py", Some(9))), Some(("a.py", Some(3)))]);
        let b = Sources::of_nodes(&[None, Some(("b.py", Some(4)))]);
        let none = Sources::default();
        // a's nodes 1 and 2 become 1 and 2; b's node 1 becomes 1; the
        // third view's node 1 becomes 3.
        let merged = Sources::merge(
            [
                (&a, &[0, 1, 2][..]),
                (&b, &[0, 1][..]),
                (&none, &[0, 3][..]),
            ],
            4,
        );
        assert_eq!(merged.get(1), Some(&line("b.py", 4)));
        assert_eq!(merged.get(2), Some(&line("a.py", 3)));
        assert_eq!(merged.get(3), None);
        assert!(Sources::merge([(&none, &[0][..])], 1).is_empty());
        assert!(Sources::of_nodes(&[None, None]).is_empty());
    }
}
