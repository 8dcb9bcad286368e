//! Flame graph trees as reads answer them: stacks merged by common prefix,
//! each node knowing its inclusive (`total`) and exclusive (`self_count`)
//! samples. Plain data: `odp-profile` builds them from its model.

use serde::{Deserialize, Serialize};

pub const ROOT_NAME: &str = "all";

#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlameNode {
    pub name: String,
    /// The source file of the node's code, when its frames name one
    /// (py-spy's Python frames, imported profiles with lines): what "view
    /// source" opens. A node merges a function's frames of every line;
    /// `odp-profile` says which file and line it names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The line in `file` (see there), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_other_node_carries_how_many_it_stands_for() {
        let leaf = |name: &str, total, merged| FlameNode {
            name: name.to_owned(),
            file: None,
            line: None,
            total,
            self_count: total,
            children: Vec::new(),
            merged,
        };
        let json = serde_json::to_value(leaf("hot", 6, 0)).unwrap();
        assert!(json.get("merged").is_none(), "{json}");
        let other = serde_json::to_value(leaf("other", 4, 3)).unwrap();
        assert_eq!(other["merged"], 3);
        let back: FlameNode = serde_json::from_value(json).unwrap();
        assert_eq!(back, leaf("hot", 6, 0));
    }

    #[test]
    fn a_node_names_its_source_only_when_known() {
        let mut node = FlameNode {
            name: "crunch_numbers".to_owned(),
            file: None,
            line: None,
            total: 1,
            self_count: 1,
            children: Vec::new(),
            merged: 0,
        };
        let bare = serde_json::to_value(&node).unwrap();
        assert!(
            bare.get("file").is_none() && bare.get("line").is_none(),
            "{bare}"
        );
        node.file = Some("hot_python.py".to_owned());
        node.line = Some(15);
        let json = serde_json::to_value(&node).unwrap();
        assert_eq!(
            (&json["file"], &json["line"]),
            (&"hot_python.py".into(), &15.into())
        );
        assert_eq!(serde_json::from_value::<FlameNode>(json).unwrap(), node);
    }
}
