//! Flame graph trees from per-node counts, cut to a node budget.
//!
//! A 100k-stack profile has several hundred thousand call paths; a UI
//! draws a few thousand boxes, and a 60 MB JSON tree takes longer to send
//! and parse than to compute. Like Pyroscope's max-nodes, the tree keeps
//! the `budget` heaviest nodes (a node is kept only with its parent, so
//! the heaviest paths are whole), and each kept node's dropped children
//! become one `other` child carrying their total: every node's total stays
//! exact, and the UI asks again with `focus` to open a cut subtree.

use odp_core::flamegraph::FlameNode;

pub use crate::many::OTHER_NAME;
use crate::tree::ROOT;
use crate::view::View;

/// The node of a stack of names, root first (`focus`), if the tree has it.
pub fn find_path(view: &View, path: &[&str]) -> Option<u32> {
    path.iter().try_fold(ROOT, |node, name| {
        let id = view.names.iter().position(|n| n == name)? as u32;
        view.tree.find_child(node, id)
    })
}

/// The flame graph under the synthetic root, with at most about `budget`
/// nodes. With `focus` (a node of `view.tree`), only that node's subtree
/// is opened: the path to it is kept, and each of its ancestors' other
/// children become one `other` node. (The one-view case of
/// [`crate::many::flame_graph`].)
pub fn build(view: &View, budget: usize, focus: Option<u32>) -> FlameNode {
    let path = focus.map(|node| view.stack_names(node));
    let path: Option<Vec<&str>> = path
        .as_ref()
        .map(|p| p.iter().map(String::as_str).collect());
    crate::many::flame_graph(&[view], budget, path.as_deref())
        .expect("the focus is a node of the view")
}

/// The flame graph of no samples: the root alone.
pub fn empty() -> FlameNode {
    build(&View::default(), 1, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::NameTree;
    use crate::profile::{Profile, ProfileBuilder, Window};
    use odp_core::{EventKind, Frame};

    fn profile(stacks: &[(&[&str], u64)]) -> Profile {
        let mut b = ProfileBuilder::default();
        let w = b.window(Window {
            profile_id: uuid::Uuid::nil(),
            host: "h".into(),
            agent_id: "a".into(),
            sequence: 0,
            start_ms: 0,
            end_ms: 1,
            event: EventKind::CpuClock,
            period: 1,
            frequency_hz: 1,
        });
        for (frames, count) in stacks {
            let ids: Vec<u32> = frames
                .iter()
                .map(|f| b.frame(&Frame::function(*f)))
                .collect();
            b.samples(w, 0, &ids, *count);
        }
        b.build()
    }

    fn view_of(p: &Profile) -> View {
        let mut counts = vec![0; p.tree.len()];
        for s in &p.samples {
            counts[s.node as usize] += s.count;
        }
        NameTree::new(p).view(&counts)
    }

    #[test]
    fn a_budget_keeps_the_heaviest_paths_and_every_total() {
        let p = profile(&[
            (&["main", "a", "a1"], 50),
            (&["main", "a", "a2"], 5),
            (&["main", "b"], 30),
            (&["main", "c"], 10),
            (&["main", "d"], 5),
        ]);
        let view = view_of(&p);
        let full = build(&view, usize::MAX, None);
        assert_eq!(full.total, 100);
        assert_eq!(full.children[0].children.len(), 4);
        // main, a, a1, b: the rest under `other`s.
        let cut = build(&view, 4, None);
        let main = &cut.children[0];
        assert_eq!(main.total, 100);
        let names_of = |n: &FlameNode| {
            n.children
                .iter()
                .map(|c| c.name.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(names_of(main), ["a", "b", OTHER_NAME]);
        assert_eq!((main.children[2].total, main.children[2].merged), (15, 2));
        assert_eq!(names_of(&main.children[0]), ["a1", OTHER_NAME]);
        assert_eq!(main.children[0].children[1].total, 5);
    }

    #[test]
    fn nothing_is_the_root_alone() {
        let root = empty();
        assert_eq!(root.name, odp_core::flamegraph::ROOT_NAME);
        assert_eq!((root.total, root.self_count, root.merged), (0, 0, 0));
        assert!(root.children.is_empty());
    }

    #[test]
    fn focus_opens_one_subtree_and_keeps_the_path() {
        let p = profile(&[(&["main", "a", "a1"], 50), (&["main", "b", "b1"], 30)]);
        let view = view_of(&p);
        let b = find_path(&view, &["main", "b"]).unwrap();
        assert!(find_path(&view, &["main", "z"]).is_none());
        let focused = build(&view, 10, Some(b));
        let main = &focused.children[0];
        assert_eq!(main.children.len(), 2);
        assert_eq!(
            (main.children[0].name.as_str(), main.children[0].total),
            ("b", 30)
        );
        assert_eq!(main.children[0].children[0].name, "b1");
        assert_eq!(
            (main.children[1].name.as_str(), main.children[1].total),
            (OTHER_NAME, 50)
        );
    }
}
