//! Flame graph trees: stacks merged by common prefix, each node knowing its
//! inclusive (`total`) and exclusive (`self_count`) samples.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::model::WeightedStack;

pub const ROOT_NAME: &str = "all";

#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlameNode {
    pub name: String,
    /// Samples in this node and everything it called.
    pub total: u64,
    /// Samples where this node was the leaf.
    pub self_count: u64,
    /// Sorted by name, as flame graphs draw them.
    #[cfg_attr(feature = "schema", schema(no_recursion))]
    pub children: Vec<FlameNode>,
    /// For an `other` node that stands for children cut by a node budget:
    /// how many it stands for (0 for every real node).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub merged: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Arena node while building: children looked up by name.
struct BuildNode {
    name: String,
    total: u64,
    self_count: u64,
    children: HashMap<String, usize>,
}

/// Builds the tree under a synthetic root named [`ROOT_NAME`].
pub fn build(stacks: &[WeightedStack]) -> FlameNode {
    let mut arena = vec![BuildNode {
        name: ROOT_NAME.to_owned(),
        total: 0,
        self_count: 0,
        children: HashMap::new(),
    }];
    for stack in stacks {
        if stack.count == 0 {
            continue;
        }
        arena[0].total += stack.count;
        let mut at = 0;
        for frame in &stack.frames {
            at = match arena[at].children.get(frame) {
                Some(&child) => child,
                None => {
                    let child = arena.len();
                    arena.push(BuildNode {
                        name: frame.clone(),
                        total: 0,
                        self_count: 0,
                        children: HashMap::new(),
                    });
                    arena[at].children.insert(frame.clone(), child);
                    child
                }
            };
            arena[at].total += stack.count;
        }
        arena[at].self_count += stack.count;
    }
    freeze(&mut arena, 0)
}

fn freeze(arena: &mut [BuildNode], index: usize) -> FlameNode {
    let mut child_ids: Vec<(String, usize)> = arena[index].children.drain().collect();
    child_ids.sort();
    let children = child_ids
        .into_iter()
        .map(|(_, id)| freeze(arena, id))
        .collect();
    let name = std::mem::take(&mut arena[index].name);
    let node = &arena[index];
    FlameNode {
        name,
        total: node.total,
        self_count: node.self_count,
        children,
        merged: 0,
    }
}

impl FlameNode {
    /// Depth of the deepest stack (the root counts as 1).
    pub fn depth(&self) -> usize {
        1 + self
            .children
            .iter()
            .map(FlameNode::depth)
            .max()
            .unwrap_or(0)
    }

    /// Walks the tree back into stacks (without the synthetic root).
    pub fn to_stacks(&self) -> Vec<WeightedStack> {
        let mut out = Vec::new();
        let mut path = Vec::new();
        for child in &self.children {
            child.collect(&mut path, &mut out);
        }
        out
    }

    fn collect(&self, path: &mut Vec<String>, out: &mut Vec<WeightedStack>) {
        path.push(self.name.clone());
        if self.self_count > 0 {
            out.push(WeightedStack {
                frames: path.clone(),
                count: self.self_count,
            });
        }
        for child in &self.children {
            child.collect(path, out);
        }
        path.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::folded::to_folded;
    use proptest::prelude::*;

    fn ws(frames: &[&str], count: u64) -> WeightedStack {
        WeightedStack {
            frames: frames.iter().map(|s| s.to_string()).collect(),
            count,
        }
    }

    #[test]
    fn merges_common_prefixes() {
        let root = build(&[
            ws(&["main", "hot"], 6),
            ws(&["main", "warm"], 3),
            ws(&["main"], 1),
        ]);
        assert_eq!(root.name, "all");
        assert_eq!(root.total, 10);
        let main = &root.children[0];
        assert_eq!(
            (main.name.as_str(), main.total, main.self_count),
            ("main", 10, 1)
        );
        let names: Vec<&str> = main.children.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["hot", "warm"]);
        assert_eq!(root.depth(), 3);
    }

    proptest! {
        #[test]
        fn tree_preserves_every_sample(stacks in proptest::collection::vec(
            (proptest::collection::vec("[a-d]", 1..6), 1u64..100), 0..40)) {
            let stacks: Vec<WeightedStack> = stacks.into_iter().map(|(frames, count)| WeightedStack { frames, count }).collect();
            let root = build(&stacks);
            prop_assert_eq!(root.total, stacks.iter().map(|s| s.count).sum::<u64>());
            prop_assert_eq!(to_folded(&root.to_stacks()), to_folded(&stacks));
        }
    }
}
