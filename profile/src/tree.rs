//! Stacks as a prefix tree with parent pointers, as Pyroscope's symdb
//! keeps them: every distinct call path is one node `(parent, frame)`, a
//! stack is the id of its leaf node, and stacks that share callers share
//! their nodes. Ids are dense and a node's parent always has a smaller id,
//! so one pass over the nodes in reverse order sums totals bottom-up and a
//! pass in order propagates anything top-down: the call tree of a profile
//! is this tree, with no hashing at read time.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::OnceLock;

/// The root's id; it has no frame.
pub const ROOT: u32 = 0;

/// `(parent, frame)` → node.
type Index = HashMap<(u32, u32), u32, BuildHasherDefault<PairHasher>>;

#[derive(Debug, Clone)]
pub struct StackTree {
    /// Per node, its parent (the root's is itself).
    parents: Vec<u32>,
    /// Per node, its frame (the root's is unused).
    frames: Vec<u32>,
    /// Built on the first lookup: reads of a decoded tree never need it.
    index: OnceLock<Index>,
}

impl PartialEq for StackTree {
    fn eq(&self, other: &Self) -> bool {
        self.parents == other.parents && self.frames == other.frames
    }
}

impl Eq for StackTree {}

impl Default for StackTree {
    fn default() -> Self {
        StackTree {
            parents: vec![ROOT],
            frames: vec![u32::MAX],
            index: OnceLock::new(),
        }
    }
}

/// Fx-style multiply-rotate hashing of two integers: the index's keys are
/// ours, so SipHash's resistance buys nothing and costs most of a lookup.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct PairHasher(u64);

impl Hasher for PairHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u32(u32::from(byte));
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0.rotate_left(5) ^ u64::from(n)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

impl StackTree {
    fn index(&self) -> &Index {
        self.index.get_or_init(|| {
            let mut index = Index::with_capacity_and_hasher(self.len(), Default::default());
            for (node, (&parent, &frame)) in
                self.parents.iter().zip(&self.frames).enumerate().skip(1)
            {
                index.insert((parent, frame), node as u32);
            }
            index
        })
    }

    /// Nodes, the root included.
    pub fn len(&self) -> usize {
        self.parents.len()
    }

    /// Only the root.
    pub fn is_empty(&self) -> bool {
        self.parents.len() == 1
    }

    pub fn parent(&self, node: u32) -> u32 {
        self.parents[node as usize]
    }

    pub fn frame(&self, node: u32) -> u32 {
        self.frames[node as usize]
    }

    /// The child of `parent` for `frame`, created if new.
    pub fn child(&mut self, parent: u32, frame: u32) -> u32 {
        self.index();
        let next = self.parents.len() as u32;
        let index = self.index.get_mut().expect("built above");
        *index.entry((parent, frame)).or_insert_with(|| {
            self.parents.push(parent);
            self.frames.push(frame);
            next
        })
    }

    /// The leaf node of a stack of frames, root first.
    pub fn intern(&mut self, frames: &[u32]) -> u32 {
        frames
            .iter()
            .fold(ROOT, |node, &frame| self.child(node, frame))
    }

    /// The child of `parent` for `frame`, if the tree has it.
    pub fn find_child(&self, parent: u32, frame: u32) -> Option<u32> {
        self.index().get(&(parent, frame)).copied()
    }

    /// The leaf node of a stack of frames, if the tree has it.
    pub fn find(&self, frames: &[u32]) -> Option<u32> {
        frames
            .iter()
            .try_fold(ROOT, |node, &frame| self.find_child(node, frame))
    }

    /// The frames of `node`'s stack, root first.
    pub fn stack(&self, node: u32) -> Vec<u32> {
        let mut out = Vec::new();
        let mut at = node;
        while at != ROOT {
            out.push(self.frames[at as usize]);
            at = self.parents[at as usize];
        }
        out.reverse();
        out
    }

    /// Per node, its `counts` plus its descendants': the totals of a
    /// flame graph's boxes.
    pub fn totals(&self, counts: &[u64]) -> Vec<u64> {
        let mut totals = counts.to_vec();
        // Parents precede their children, so one backward pass sums subtrees.
        for node in (1..self.len()).rev() {
            totals[self.parents[node] as usize] += totals[node];
        }
        totals
    }

    /// Depth of every node (the root is 0).
    pub fn depths(&self) -> Vec<u32> {
        let mut depths = vec![0u32; self.len()];
        for node in 1..self.len() {
            depths[node] = depths[self.parents[node] as usize] + 1;
        }
        depths
    }

    /// The children of every node that `keep` keeps, in id order, as one
    /// flat list with offsets (no allocation per node).
    pub fn children(&self, keep: impl Fn(u32) -> bool) -> Children {
        let mut offsets = vec![0u32; self.len() + 1];
        for node in 1..self.len() as u32 {
            if keep(node) {
                offsets[self.parents[node as usize] as usize + 1] += 1;
            }
        }
        for i in 1..offsets.len() {
            offsets[i] += offsets[i - 1];
        }
        let mut next = offsets.clone();
        let mut nodes = vec![0u32; offsets[self.len()] as usize];
        for node in 1..self.len() as u32 {
            if keep(node) {
                let slot = &mut next[self.parents[node as usize] as usize];
                nodes[*slot as usize] = node;
                *slot += 1;
            }
        }
        Children { offsets, nodes }
    }

    /// `(parent, frame)` of every node but the root, in id order: what the
    /// encoding stores.
    pub(crate) fn edges(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.parents
            .iter()
            .zip(&self.frames)
            .skip(1)
            .map(|(&parent, &frame)| (parent, frame))
    }

    /// Rebuilds a tree from its columns, the root's entries first, as
    /// [`StackTree::edges`] gives them (without copying them); `None`
    /// unless the columns are as long as each other and every parent
    /// precedes its child. (A repeated edge makes two nodes of one path,
    /// which every read adds up by name anyway.)
    pub(crate) fn from_columns(parents: Vec<u32>, frames: Vec<u32>) -> Option<StackTree> {
        let fits = parents.len() == frames.len()
            && parents.first() == Some(&ROOT)
            && parents
                .iter()
                .enumerate()
                .skip(1)
                .all(|(node, &parent)| (parent as usize) < node);
        fits.then(|| StackTree {
            parents,
            frames,
            index: OnceLock::new(),
        })
    }
}

/// Every node's children: see [`StackTree::children`].
#[derive(Debug, Clone, Default)]
pub struct Children {
    offsets: Vec<u32>,
    nodes: Vec<u32>,
}

impl Children {
    pub fn of(&self, node: u32) -> &[u32] {
        let (from, to) = (self.offsets[node as usize], self.offsets[node as usize + 1]);
        &self.nodes[from as usize..to as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_callers_share_nodes_and_stacks_read_back() {
        let mut tree = StackTree::default();
        let a = tree.intern(&[1, 2, 3]);
        let b = tree.intern(&[1, 2, 4]);
        let c = tree.intern(&[1, 2, 3]);
        assert_eq!(a, c);
        assert_ne!(a, b);
        // root, 1, 2, 3, 4
        assert_eq!(tree.len(), 5);
        assert_eq!(tree.stack(b), [1, 2, 4]);
        assert_eq!(tree.stack(ROOT), Vec::<u32>::new());
        assert_eq!(tree.depths(), [0, 1, 2, 3, 3]);
        let children = tree.children(|node| node != 4);
        assert_eq!(children.of(ROOT), [1]);
        assert_eq!(children.of(2), [3]);
        assert!(children.of(4).is_empty());
        let (mut parents, mut frames) = (vec![ROOT], vec![u32::MAX]);
        for (parent, frame) in tree.edges() {
            parents.push(parent);
            frames.push(frame);
        }
        let rebuilt = StackTree::from_columns(parents, frames).unwrap();
        assert_eq!(rebuilt, tree);
    }

    #[test]
    fn edges_to_later_parents_are_refused() {
        let tree =
            |parents: &[u32]| StackTree::from_columns(parents.to_vec(), vec![9; parents.len()]);
        assert!(tree(&[ROOT, 1]).is_none());
        assert!(tree(&[ROOT, 0, 1]).is_some());
        assert!(tree(&[1]).is_none(), "the root's parent is itself");
        assert!(tree(&[]).is_none());
        assert!(StackTree::from_columns(vec![ROOT, 0], vec![9]).is_none());
    }
}
